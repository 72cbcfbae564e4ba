"""End to end: `vitjax sweep` on three tiny synthetic runs plus one that fails, then `vitjax plot`.

One sweep (module fixture) trains vit_n128_p4, vit_n512_p4 and vit_n512_p8 (two data sizes, two patch
sizes: every figure has something to draw) and vit_nan, whose huge unclipped learning rate only fails
inside the run (non-finite loss, nan_policy='stop'; a NaN learning rate is refused at start-up).
4 training and 3 few-shot subprocesses, two at a time. Two more sweeps of one long run are stopped,
one by SIGTERM and one by a terminal's Ctrl-C.
"""
import csv
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from vitjax import host
from vitjax.checkpoints import locations

from tests.paths import ROOT, TINY
from tests.sweep.sweep_files import run_sweep_file, run_vitjax
GOOD = ["vit_n128_p4", "vit_n512_p4", "vit_n512_p8"]

SWEEP = f'''
TINY = {TINY!r}
FEWSHOT = dict(shots=(1, 5), seeds=2)


def get_runs(arg=None):
    budget = {{"total_steps": 12, "checkpoint_every_steps": 6, "log_every_steps": 3}}
    runs = [("vit_n128_p4", TINY, {{**budget, "data.train_size": 128}}),
            ("vit_n512_p4", TINY, {{**budget, "data.train_size": 512}}),
            ("vit_n512_p8", TINY, {{**budget, "data.train_size": 512, "model.patch_size": 8}})]
    if arg == "with_failure":
        runs.append(("vit_nan", TINY, {{**budget, "lr": 1e30, "grad_clip_norm": 0.0}}))
    return runs
'''


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    return run_sweep_file(tmp_path_factory.mktemp("sweep"), SWEEP, ":with_failure")


def _rows(out):
    with open(out / "results.csv") as f:
        return {row["name"]: row for row in csv.DictReader(f)}


def test_good_runs_finish_and_the_failing_one_is_recorded(swept):
    _, out, run = swept
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    rows = _rows(out)
    assert list(rows) == GOOD + ["vit_nan"]
    for name in GOOD:
        row = rows[name]
        assert row["status"] == "finished", row
        assert float(row["test_accuracy"]) > 0.5  # 4 learnable classes; chance is 0.25
        assert float(row["fewshot_1shot"]) > 0.25 and float(row["fewshot_5shot"]) > 0.25
        for column in ("params", "train_flops", "examples_seen", "wall_seconds", "img_per_sec"):
            assert float(row[column]) > 0, (name, column)
        assert row["cpu"] == host.cpu()
    assert rows["vit_n512_p8"]["patch_size"] == "8" and rows["vit_n128_p4"]["train_size"] == "128"
    failed = rows["vit_nan"]
    assert failed["status"] == "failed" and "non-finite loss" in failed["error"]
    record = json.loads((out / "vit_nan" / "failed.json").read_text())
    assert record["stage"] == "train" and record["returncode"] == 1 and "--config.lr=1e+30" in record["command"]
    assert "non-finite loss" in record["traceback"]
    assert "1 of 4 runs did not finish: vit_nan (failed)" in run.stdout


def test_results_json_holds_each_runs_config_and_fewshot(swept):
    _, out, _ = swept
    saved = json.loads((out / "results.json").read_text())
    runs = {r["name"]: r for r in saved["runs"]}
    assert runs["vit_n512_p8"]["config"]["model"]["patch_size"] == 8
    assert runs["vit_n512_p8"]["overrides"]["model.patch_size"] == 8
    assert "fewshot_5shot_std" in runs["vit_n128_p4"]
    assert json.loads((out / "vit_n128_p4" / "fewshot.json").read_text())["shots"] == [1, 5]


def test_plot_draws_every_figure_with_its_table(swept, tmp_path):
    _, out, _ = swept
    figures = tmp_path / "figures"
    run = run_vitjax("plot", str(out), "--out", str(figures))
    assert run.returncode == 0, run.stderr[-3000:]
    for name in ("data_scaling", "compute", "patch_size"):
        assert (figures / f"{name}.png").stat().st_size > 10_000, name
        assert (figures / f"{name}.csv").exists(), name
    with open(figures / "data_scaling.csv") as f:
        rows = list(csv.DictReader(f))
    # A line joins runs that differ only in the x-axis key: patch 8 has one size, the failed run none.
    assert sorted((r["runs"], int(r["train_size"])) for r in rows) == [("vit_n128_p4", 128), ("vit_n512_p4", 512)]
    assert rows[0]["fewshot_5shot_mean"] and {r["n"] for r in rows} == {"1"} and rows[0]["accuracy_std"] == ""
    # The figure's table holds the runs' own results (one seed: the mean is the run's), not numbers of its own.
    table = _rows(out)
    for row in rows:
        for column in ("accuracy", "test_accuracy", "fewshot_5shot"):
            assert float(row[f"{column}_mean"]) == pytest.approx(float(table[row["runs"]][column]), abs=1e-6), \
                (row, column)
    with open(figures / "patch_size.csv") as f:
        assert sorted((r["runs"], int(r["patch_size"]), int(r["tokens"])) for r in csv.DictReader(f)) == \
            [("vit_n512_p4", 4, 16), ("vit_n512_p8", 8, 4)]  # 16x16 images


def test_plot_skips_figures_whose_runs_are_missing(swept, tmp_path):
    from vitjax.sweep import plots
    _, out, _ = swept
    one_size = [r for r in json.loads((out / "results.json").read_text())["runs"] if r["name"] == "vit_n128_p4"]
    assert one_size[0]["status"] == "finished"
    with pytest.raises(plots.Skipped, match="two training-set sizes"):
        plots.data_scaling(one_size, str(tmp_path))
    with pytest.raises(plots.Skipped, match="two patch sizes"):
        plots.patch_size(one_size, str(tmp_path))


def test_running_again_skips_finished_runs(swept):
    sweep_file, out, _ = swept
    logs = {name: (out / name / "train.log").read_text() for name in GOOD}
    metrics = {name: (out / name / "metrics.jsonl").read_text() for name in GOOD}
    start = time.time()
    run = run_vitjax("sweep", str(sweep_file), "--workdir", str(out))  # without the failing run
    elapsed = time.time() - start
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert run.stdout.count("finished already, skipped") == 3
    for name in GOOD:
        assert (out / name / "train.log").read_text() == logs[name]  # no subprocess was started
        assert (out / name / "metrics.jsonl").read_text() == metrics[name]
    print(f"re-run of the finished sweep took {elapsed:.1f}s")
    assert _rows(out)["vit_nan"]["status"] == "failed"  # still listed: its directory is in the sweep's


def test_fewshot_cli_on_a_trained_run(swept):
    _, out, _ = swept
    run = run_vitjax("eval", "--workdir", str(out / "vit_n512_p4"), "--fewshot", "--shots", "2", "--fewshot_seeds", "1")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "test_accuracy=" in run.stdout and "2shot=" in run.stdout
    assert json.loads((out / "vit_n512_p4" / "fewshot.json").read_text())["shots"] == [2]


LONG = ("FEWSHOT = None\n"
        "def get_runs(arg=None):\n"
        f"    return [('long', {TINY!r}, {{'total_steps': 100000, 'log_every_steps': 5, "
        f"'checkpoint_every_steps': 100000}})]\n")  # only a stop's checkpoint: it shows the stop was clean


# A shell's foreground job gets SIGINT's default action even when pytest itself runs with SIGINT ignored
# (started with `&` from a script), where the sweep would rightly keep ignoring Ctrl-C. A small Python
# restores it and execs the sweep: a preexec_fn would run Python in a child forked from this process,
# whose JAX threads make that unsafe (JAX warns of a deadlock).
_AS_FOREGROUND_JOB = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                      "os.execv(sys.argv[1], sys.argv[1:])")


def _start_sweep(sweep_file, out):
    # In a session of its own, like a shell's foreground job: the test plays the terminal.
    command = [sys.executable, "-m", "vitjax", "sweep", str(sweep_file), "--workdir", str(out)]
    return subprocess.Popen([sys.executable, "-c", _AS_FOREGROUND_JOB, *command],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                            start_new_session=True)


def _wait_for(proc, path, text, offset=0):
    deadline = time.time() + 600
    while not (path.exists() and text in path.read_text()[offset:]):
        assert proc.poll() is None and time.time() < deadline, proc.stdout.read()[-3000:]
        time.sleep(0.2)


def _children(pid) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError):
            continue
        if parent == pid:
            found.append(int(entry))
    return found


def _alive(pid) -> bool:
    """Running (not exited, and not a zombie waiting for its parent to read its status)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_sigterm_stops_the_sweep_and_leaves_a_resumable_run(tmp_path):
    from vitjax.sweep import runlock
    sweep_file, out = tmp_path / "long_sweep.py", tmp_path / "out"
    sweep_file.write_text(LONG)
    proc = _start_sweep(sweep_file, out)
    _wait_for(proc, out / "long" / "train.log", "step 5/")  # training is under way
    assert runlock.is_held(str(out / "long"))
    trainer_pid = runlock.holder(str(out / "long"))["pids"][0]
    proc.terminate()  # a preemption notice for the whole sweep
    output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130, output[-3000:]
    with pytest.raises(ProcessLookupError):  # the trainer stopped with the sweep, not orphaned
        os.kill(trainer_pid, 0)
    assert "interrupted" in output
    assert not runlock.is_held(str(out / "long")) and not (out / "long" / "failed.json").exists()
    # The trainer checkpointed the step it was on, so re-running the sweep resumes from there.
    assert any(name.isdigit() for name in os.listdir(out / "long" / "checkpoints")), output[-3000:]
    assert _rows(out)["long"]["status"] == "interrupted"


def test_ctrl_c_checkpoints_the_run_keeps_its_lock_until_the_trainer_exits_and_a_rerun_resumes(tmp_path):
    from vitjax.sweep import table
    sweep_file, out = tmp_path / "long_sweep.py", tmp_path / "out"
    sweep_file.write_text(LONG)
    run_dir, log = out / "long", out / "long" / "train.log"
    proc = _start_sweep(sweep_file, out)
    _wait_for(proc, log, "step 5/")
    (trainer,) = _children(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals its whole foreground process group
    while True:
        status = table.run_status(str(run_dir))
        if not _alive(trainer):  # asked after the status: the trainer was alive when the status was read
            break
        assert status == "running", "the run's lock went while its trainer still ran"
        time.sleep(0.05)
    output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130, output[-3000:]
    assert "(exit 75: checkpoint saved)" in output, output[-3000:]
    assert "checkpoint saved, re-run the same command to resume" in log.read_text()
    steps = locations.checkpoint_steps(locations.checkpoint_dir(str(run_dir)))
    assert steps and steps[-1] >= 5, log.read_text()[-3000:]
    assert _rows(out)["long"]["status"] == "interrupted"

    offset = len(log.read_text())
    proc = _start_sweep(sweep_file, out)  # the same command again
    _wait_for(proc, log, f"resuming from step {steps[-1]} ", offset)
    _wait_for(proc, log, "| loss", log.read_text().index("resuming from step"))  # in the loop: SIGTERM saves
    os.killpg(proc.pid, signal.SIGINT)
    output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130 and "(exit 75: checkpoint saved)" in output, output[-3000:]
