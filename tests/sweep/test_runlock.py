"""Whether a run is being worked on is the kernel's answer (a flock that dies with its holders), not a
guess from pids and hostnames that a reboot, a reused pid or a new container leaves wrong."""
import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from tests.paths import ROOT
from tests.sweep.sweep_files import write_sweep_file
from vitjax import rundir
from vitjax.sweep import runlock, runner, spec, table

ONE_RUN = "FEWSHOT = None\ndef get_runs(arg=None):\n    return [('a', TINY, {})]\n"


@pytest.fixture
def started_run(tmp_path, monkeypatch):
    """A sweep of one run 'a' that was started (config.json), and a record of the runs it starts."""
    sweep = spec.load(write_sweep_file(tmp_path, ONE_RUN))
    run_dir = tmp_path / "out" / "a"
    os.makedirs(run_dir)
    (run_dir / rundir.CONFIG).write_text(json.dumps(sweep.runs[0].config_dict))
    started = []
    monkeypatch.setattr(runner, "_stages", lambda run, *rest: started.append(run.name) or "interrupted")
    return sweep, run_dir, started


@pytest.mark.parametrize("host", ["this", "old-container"])
def test_a_leftover_running_marker_does_not_hold_a_run(started_run, host):
    # A marker the old runner wrote, left by a killed sweep: the pid since reused (here by this very
    # process), or the hostname of a container that is gone.
    sweep, run_dir, started = started_run
    (run_dir / "running.json").write_text(json.dumps(
        {"pids": [os.getpid()], "host": socket.gethostname() if host == "this" else host}))
    assert table.run_status(str(run_dir)) == "interrupted"
    runner.run_sweep(sweep, str(run_dir.parent), echo=lambda line: None)
    assert started == ["a"]  # resumed, not left alone for ever


def test_a_held_lock_marks_the_run_running_and_a_second_sweep_leaves_it_alone(started_run):
    sweep, run_dir, started = started_run
    held = runlock.acquire(str(run_dir))  # as another sweep would (flock conflicts across open files)
    runlock.describe(held, pids=[12345], host="elsewhere")
    try:
        assert table.run_status(str(run_dir)) == "running"
        lines = []
        assert runner.run_sweep(sweep, str(run_dir.parent), echo=lines.append) == 1
        assert started == []
        assert any("a: left alone: another process holds" in line and "[12345] on elsewhere" in line
                   for line in lines), lines
        assert runlock.acquire(str(run_dir)) is None
    finally:
        runlock.release(held)
    assert table.run_status(str(run_dir)) == "interrupted"
    runner.run_sweep(sweep, str(run_dir.parent), echo=lambda line: None)
    assert started == ["a"]
    assert not runlock.is_held(str(run_dir))  # the sweep let go of it when the run was done


def test_the_lock_dies_with_its_process(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom vitjax.sweep import runlock\n"
                               "assert runlock.acquire(sys.argv[1]) is not None\nprint('locked', flush=True)\n"
                               "time.sleep(600)\n", str(tmp_path)],
        stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline() == "locked\n"
        assert runlock.is_held(str(tmp_path)) and table.run_status(str(tmp_path)) == "running"
    finally:
        holder.send_signal(signal.SIGKILL)  # no clean-up of any kind, as in a crash
        holder.wait()
    assert not runlock.is_held(str(tmp_path))
    assert table.run_status(str(tmp_path)) == "pending"


def test_on_a_pod_only_host_0_locks_and_the_other_hosts_run_what_host_0_holds(started_run, monkeypatch):
    # Every host of a pod runs the same sweep on a shared directory; host 0's lock on a run is for the
    # very run the others must join, so host 1 starts it, unlocked, with its own log file.
    sweep, run_dir, _ = started_run
    calls = []
    monkeypatch.setattr(runner, "_stages", lambda run, run_dir, action, settings, env, live, say, prefix, lock,
                        host: calls.append((run.name, lock, host)) or "finished")
    monkeypatch.setenv("JAX_PROCESS_ID", "1")
    monkeypatch.setenv("JAX_NUM_PROCESSES", "2")
    assert runner.launch_process() == (1, 2)
    held = runlock.acquire(str(run_dir))  # host 0's sweep, working on the run
    try:
        runner.run_sweep(sweep, str(run_dir.parent), echo=lambda line: None)
    finally:
        runlock.release(held)
    assert calls == [("a", None, 1)]
    assert runner._log_path(str(run_dir), rundir.TRAIN_LOG, 1).endswith("train.host1.log")
    monkeypatch.setenv("JAX_PROCESS_ID", "0")
    runner.run_sweep(sweep, str(run_dir.parent), echo=lambda line: None)  # host 0 locks as a lone sweep does
    assert calls[1][0] == "a" and calls[1][1] is not None and calls[1][2] == 0


@pytest.mark.parametrize("second_exit, status", [(0, "finished"), (-signal.SIGABRT, "failed")])
def test_a_collective_hang_resumes_the_run_once(tmp_path, monkeypatch, second_exit, status):
    # XLA:CPU's abort of an all-reduce that not every device joined (a hang of the 4-device split, not the
    # run's fault): the sweep resumes the trainer once from its checkpoint, and records a second one.
    sweep = spec.load(write_sweep_file(tmp_path, ONE_RUN))
    run_dir = tmp_path / "out" / "a"
    hang = "E1205 rendezvous.cc:118] Termination timeout ... only 2 of them arrived\n"
    exits = [(-signal.SIGABRT, hang), (second_exit, hang if second_exit else "done\n")]
    calls = []

    def fake_subprocess(argv, log_path, env, live, lock):
        calls.append(argv)
        code, output = exits[len(calls) - 1]
        if code == 0:
            (run_dir / rundir.RESULTS).write_text(json.dumps({"test_accuracy": 0.5}))
        return code, 1.0, output

    monkeypatch.setattr(runner, "_subprocess", fake_subprocess)
    said = []
    os.makedirs(run_dir)
    assert runner._stages(sweep.runs[0], str(run_dir), "train", {}, {}, runner._Live(), said.append,
                          "[1/1] a", None) == status
    assert len(calls) == 2 and calls[0] == calls[1]  # never a third attempt
    assert "resuming once" in said[1]
    assert not runner.collective_hang(-signal.SIGABRT, "Traceback ...\nValueError: bad config\n")
    assert not runner.collective_hang(1, hang)
