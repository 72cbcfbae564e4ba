"""A run's files are never written through a symbolic link (a lock's truncation or a log's append would
change the file it names), and the sweep's failure record is written whole or not at all."""
import json

import pytest

from vitjax import metrics_log, rundir, train_lock
from vitjax.sweep import runlock, runner


def _linked(run_dir, name, target):
    run_dir.mkdir(exist_ok=True)
    target.write_text("precious\n")
    (run_dir / name).symlink_to(target)


@pytest.mark.parametrize("name, write", [
    (rundir.LOCK, lambda run_dir: train_lock.lock(run_dir)),
    (rundir.SWEEP_LOCK, lambda run_dir: runlock.acquire(run_dir)),
    (rundir.METRICS, lambda run_dir: metrics_log.MetricsLog(run_dir).write(1, {"loss": 1.0})),
])
def test_a_run_file_that_is_a_symbolic_link_is_refused_and_its_target_untouched(tmp_path, name, write):
    run_dir, target = tmp_path / "run", tmp_path / "someone_elses_file"
    _linked(run_dir, name, target)
    with pytest.raises(OSError, match="a symbolic link, which vitjax never writes through") as refused:
        write(str(run_dir))
    assert refused.value.filename == str(run_dir / name)  # `vitjax train` prints 'PATH: a symbolic link, ...'
    assert target.read_text() == "precious\n"


def test_the_sweeps_failure_record_is_replaced_whole_and_a_cut_short_one_is_no_stop(tmp_path):
    run_dir = tmp_path / "run"
    _linked(run_dir, rundir.FAILED, tmp_path / "target")
    runner._record_failure(str(run_dir), "train", "boom", "Traceback ...", 1, ["vitjax", "train"], None)
    assert (tmp_path / "target").read_text() == "precious\n"  # the link was replaced, not written through
    assert json.loads((run_dir / rundir.FAILED).read_text())["error"] == "boom"
    (run_dir / rundir.FAILED).write_text('{"stage": "tr')  # cut short, as an older vitjax could leave it
    assert runner.todo(str(run_dir), {}) == "train"
