"""A run's directory: what `locate` makes of each way of naming a run, the steps it lists, the files."""
import json
import os
import socket
import subprocess
import sys

import ml_collections
import numpy as np
import pytest

from vitjax import rundir


def _run_dir(run_dir, steps=()):
    """A run directory as the trainer leaves it, with empty step directories (state/ and meta/)."""
    run_dir.mkdir(parents=True)
    (run_dir / rundir.CONFIG).write_text("{}")
    for step in steps:
        for item in (rundir.STATE, rundir.META):
            (run_dir / rundir.CHECKPOINTS / str(step) / item).mkdir(parents=True)
    return run_dir


def test_locate_a_workdir(tmp_path):
    run_dir = _run_dir(tmp_path / "run", [10])
    assert rundir.locate(str(run_dir)) == rundir.Location(str(run_dir), str(run_dir / "checkpoints"), None)


def test_locate_a_workdir_without_checkpoints_yet(tmp_path):
    run_dir = _run_dir(tmp_path / "run")
    assert rundir.locate(str(run_dir)).checkpoint_dir == str(run_dir / "checkpoints")


def test_locate_a_checkpoints_directory(tmp_path):
    run_dir = _run_dir(tmp_path / "run", [10])
    location = rundir.locate(str(run_dir / "checkpoints") + os.sep)  # a trailing slash, as shells complete it
    assert location == rundir.Location(str(run_dir), str(run_dir / "checkpoints"), None)


def test_locate_a_step_directory(tmp_path):
    run_dir = _run_dir(tmp_path / "run", [10, 20])
    assert rundir.locate(str(run_dir / "checkpoints" / "10")) == rundir.Location(
        str(run_dir), str(run_dir / "checkpoints"), 10)


def test_locate_gives_absolute_paths_for_a_relative_one(tmp_path, monkeypatch):
    run_dir = _run_dir(tmp_path / "run", [10])
    monkeypatch.chdir(tmp_path)
    assert rundir.locate(os.path.join("run", "checkpoints", "10")).run_dir == str(run_dir)


def test_locate_names_what_to_pass(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"'.*nowhere' does not exist; pass a vitjax workdir \(it holds "
                                                r"config.json\), its checkpoints/ directory or one "
                                                r"checkpoints/<step> directory"):
        rundir.locate(str(tmp_path / "nowhere"))
    (tmp_path / "photos").mkdir()
    with pytest.raises(FileNotFoundError, match=r"photos' is not a vitjax run or checkpoint; pass a vitjax workdir"):
        rundir.locate(str(tmp_path / "photos"))


def test_steps_are_the_finalised_ones_oldest_first(tmp_path):
    run_dir = _run_dir(tmp_path / "run", [100, 20, 3])
    checkpoints = run_dir / "checkpoints"
    (checkpoints / "200.orbax-checkpoint-tmp-1712345678").mkdir()  # a save still in progress, or cut short
    (checkpoints / "300").write_text("")  # not a directory
    assert rundir.checkpoint_steps(str(checkpoints)) == [3, 20, 100]
    assert rundir.checkpoint_steps(str(tmp_path / "absent")) == []


def test_chosen_step_is_the_named_one_else_the_newest(tmp_path):
    run_dir = _run_dir(tmp_path / "run", [10, 20])
    assert rundir.chosen_step(rundir.locate(str(run_dir))) == 20
    assert rundir.chosen_step(rundir.locate(str(run_dir / "checkpoints" / "10"))) == 10
    empty = _run_dir(tmp_path / "untrained")
    with pytest.raises(FileNotFoundError, match=r"no checkpoint in .*untrained/checkpoints: the run has not"):
        rundir.chosen_step(rundir.locate(str(empty)))


def test_set_aside_moves_a_step_beside_the_checkpoints(tmp_path):
    run_dir = _run_dir(tmp_path / "run", [10, 20])
    moved = rundir.set_aside(str(run_dir / "checkpoints"), 20)
    assert os.path.dirname(moved) == str(run_dir / "corrupt_checkpoints")
    assert os.path.basename(moved).startswith("20-") and os.path.isdir(os.path.join(moved, rundir.STATE))
    assert rundir.checkpoint_steps(str(run_dir / "checkpoints")) == [10]


def test_write_json_replaces_the_file_whole_or_not_at_all(tmp_path):
    rundir.write_json(str(tmp_path), rundir.EVAL, {"step": 1})
    with pytest.raises(TypeError):
        rundir.write_json(str(tmp_path), rundir.EVAL, {"step": 2, "bad": object()})  # fails mid-write
    assert rundir.read_json(str(tmp_path), rundir.EVAL) == {"step": 1}
    rundir.write_json(str(tmp_path), rundir.EVAL, {"step": 3})
    assert rundir.read_json(str(tmp_path), rundir.EVAL) == {"step": 3}
    assert rundir.read_json(str(tmp_path), rundir.RESULTS) is None


def test_claim_records_the_config_and_refuses_another(tmp_path):
    run_dir = str(tmp_path / "run")
    config = ml_collections.ConfigDict({"lr": 0.1, "model": {"depth": 2}})
    rundir.claim(run_dir, config, force=False)
    assert rundir.load_config(run_dir).model.depth == 2
    rundir.claim(run_dir, config, force=False)  # the same config resumes
    config.model.depth = 4
    with pytest.raises(ValueError, match=r"model.depth: 2 -> 4\n.*--force"):
        rundir.claim(run_dir, config, force=False)
    rundir.claim(run_dir, config, force=True)
    assert rundir.load_config(run_dir).model.depth == 4


def test_load_config_of_a_directory_that_is_no_run(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"config.json not found: .* is not a vitjax run directory"):
        rundir.load_config(str(tmp_path))


def test_metrics_rows_skip_a_line_cut_short(tmp_path):
    rows = [{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5}]
    with open(rundir.file_path(str(tmp_path), rundir.METRICS), "w") as f:
        f.write("".join(json.dumps(row) + "\n" for row in rows) + '{"step": 3, "lo')
    assert rundir.read_metrics(str(tmp_path)) == rows
    assert rundir.read_metrics(str(tmp_path / "absent")) == []


def test_checkpoint_params_from_each_way_of_naming_a_run(tmp_path):
    """Written by the trainer's Checkpointer, read back as numpy whichever way the run is named."""
    from vitjax.train.checkpoint import Checkpointer

    run_dir = _run_dir(tmp_path / "run")
    ckpt = Checkpointer(rundir.checkpoint_dir(str(run_dir)), async_save=False)
    for step in (3, 7):
        ckpt.save(step, {"step": np.int32(step), "params": {"w": np.full((2,), step, np.float32)}}, {})
    ckpt.close()
    checkpoints = run_dir / "checkpoints"
    (checkpoints / "9.orbax-checkpoint-tmp-1712345678").mkdir()
    for path, step in ((run_dir, 7), (checkpoints, 7), (checkpoints / "3", 3)):
        params = rundir.read_checkpoint_params(str(path))
        assert isinstance(params["w"], np.ndarray)
        np.testing.assert_array_equal(params["w"], [step, step])


# --- Whole files, history, metrics once, one trainer per run -------------------------------------

def test_write_json_syncs_the_data_before_the_rename_and_the_rename_after(tmp_path, monkeypatch):
    events, fsync, replace = [], os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"))),
                                                 fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda src, dst: (events.append(("replace", str(dst))), replace(src, dst))[1])
    rundir.write_json(str(tmp_path), rundir.CONFIG, {"lr": 0.1})
    path = str(tmp_path / rundir.CONFIG)
    (_, synced), renamed, directory = events
    assert os.path.dirname(synced) == str(tmp_path) and synced != path  # the temporary file, beside it
    assert renamed == ("replace", path) and directory == ("fsync", str(tmp_path))
    assert os.listdir(tmp_path) == [rundir.CONFIG]  # no temporary file left behind


@pytest.mark.parametrize("text, what", [("", "it is empty"), ('{"lr": 0.', "it is not JSON")])
def test_a_damaged_config_is_named_with_its_fix(tmp_path, text, what):
    (tmp_path / rundir.CONFIG).write_text(text)
    with pytest.raises(rundir.DamagedFileError, match=rf"{tmp_path}/config.json is damaged: {what}.* Fix: .*--force"):
        rundir.load_config(str(tmp_path))


def test_claim_leaves_an_unchanged_config_alone(tmp_path):
    config = ml_collections.ConfigDict({"lr": 0.1})
    rundir.claim(str(tmp_path), config, force=False)
    before = os.stat(tmp_path / rundir.CONFIG)
    assert rundir.claim(str(tmp_path), config, force=False) is None
    after = os.stat(tmp_path / rundir.CONFIG)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_force_keeps_the_previous_config_and_results_in_history(tmp_path):
    run_dir = str(tmp_path)
    rundir.claim(run_dir, ml_collections.ConfigDict({"lr": 0.1}), force=False)
    rundir.write_json(run_dir, rundir.RESULTS, {"test_accuracy": 0.5})
    kept = rundir.claim(run_dir, ml_collections.ConfigDict({"lr": 0.2}), force=True)
    assert os.path.dirname(kept) == str(tmp_path / rundir.HISTORY)
    assert rundir.read_json(kept, rundir.CONFIG) == {"lr": 0.1}
    assert rundir.read_json(kept, rundir.RESULTS) == {"test_accuracy": 0.5}
    assert rundir.read_json(run_dir, rundir.CONFIG) == {"lr": 0.2}
    assert rundir.read_results(run_dir) is None  # the run is being redone
    # A second --force keeps its own history beside the first.
    again = rundir.claim(run_dir, ml_collections.ConfigDict({"lr": 0.3}), force=True)
    assert again != kept and rundir.read_json(again, rundir.CONFIG) == {"lr": 0.2}


def test_force_replaces_a_damaged_config_and_keeps_it(tmp_path):
    (tmp_path / rundir.CONFIG).write_text("")
    with pytest.raises(rundir.DamagedFileError):
        rundir.claim(str(tmp_path), ml_collections.ConfigDict({"lr": 0.1}), force=False)
    kept = rundir.claim(str(tmp_path), ml_collections.ConfigDict({"lr": 0.1}), force=True)
    assert open(os.path.join(kept, rundir.CONFIG)).read() == ""
    assert rundir.load_config(str(tmp_path)).lr == 0.1


def test_keep_metrics_drops_rows_and_a_line_cut_short(tmp_path):
    rows = [{"step": step, "loss": 1.0 / step} for step in range(1, 6)]
    with open(rundir.file_path(str(tmp_path), rundir.METRICS), "w") as f:
        f.write("".join(json.dumps(row) + "\n" for row in rows) + '{"step": 6, "lo')
    assert rundir.keep_metrics(str(tmp_path), lambda row: row["step"] <= 3) == 2
    assert rundir.read_metrics(str(tmp_path)) == rows[:3]
    assert (tmp_path / rundir.METRICS).read_text().endswith("}\n")  # the next row starts its own line


def test_a_second_lock_is_refused_naming_the_holder(tmp_path):
    run_dir = str(tmp_path / "run")
    held = rundir.lock(run_dir)
    with pytest.raises(rundir.WorkdirInUse, match=rf"{run_dir} is in use by another vitjax train "
                                                  rf"\(pid {os.getpid()} on host {socket.gethostname()}, since"):
        rundir.lock(run_dir)
    held.release()
    rundir.lock(run_dir).release()


def test_a_lock_dies_with_its_process(tmp_path):
    """However the holder ends (here SIGKILL), the OS drops its lock: nothing stale is left."""
    run_dir = str(tmp_path / "run")
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import time; from vitjax import rundir; rundir.lock({run_dir!r}); "
                               f"print('locked', flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(rundir.WorkdirInUse, match=f"pid {holder.pid} "):
            rundir.lock(run_dir)
    finally:
        holder.kill()
        holder.wait()
    rundir.lock(run_dir).release()


def test_a_report_that_cannot_be_written_is_printed_only(tmp_path, monkeypatch, capsys):
    import errno

    def read_only(path, text):
        raise OSError(errno.EROFS, "Read-only file system", path)
    monkeypatch.setattr(rundir, "replace_file", read_only)
    assert rundir.write_report(str(tmp_path), rundir.EVAL, {"test_accuracy": 0.5}) is False
    printed = capsys.readouterr().out
    assert "WARNING: could not write" in printed and "(Read-only file system); the results are only printed" in printed
    assert not (tmp_path / rundir.EVAL).exists()
