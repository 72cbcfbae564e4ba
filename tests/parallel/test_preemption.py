"""A preemption notice to one process of a multi-process run stops every process at the same step.

SIGTERM reaches the hosts of a pod slice at different moments; if each saved when it saw it, the
checkpoint would be a collective that some processes never join. jax.distributed's preemption
service agrees on one step; the trainer asks it after every step (trainer._StopFlag).

30 steps and no periodic checkpoint keep it to two start-ups of a 2-process run; the notice is sent as
soon as the first step is logged, so it lands early in training whatever the machine's load.
"""
import json
import os
import signal
import subprocess
import sys
import time

from vitjax.train.preemption import PREEMPTED_EXIT_CODE
from tests.parallel.processes import CONFIG, env, free_port
from tests.paths import ROOT


STEPS = 30


def _launch(workdir, log):
    address = f"localhost:{free_port()}"
    return [subprocess.Popen(
        [sys.executable, "-m", "vitjax", "train", "--config", f"{CONFIG}:steps={STEPS}", "--workdir", str(workdir),
         "--config.checkpoint_every_steps=1000", "--coordinator_address", address, "--num_processes", "2",
         "--process_id", str(i)], cwd=ROOT, env=env(devices=4), stdout=log, stderr=subprocess.STDOUT)
        for i in range(2)]


def _rows(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


def test_sigterm_to_one_process_checkpoints_all_at_one_step_and_resumes(tmp_path):
    workdir, metrics = tmp_path / "run", tmp_path / "run" / "metrics.jsonl"
    with open(tmp_path / "log", "w") as log:
        procs = _launch(workdir, log)
        deadline = time.time() + 600
        while not _rows(metrics) and time.time() < deadline and all(p.poll() is None for p in procs):
            time.sleep(0.1)
        procs[1].send_signal(signal.SIGTERM)  # process 0 is never told
        codes = [p.wait(timeout=600) for p in procs]
        assert codes == [PREEMPTED_EXIT_CODE] * 2, open(tmp_path / "log").read()[-3000:]
        # One checkpoint, written by both processes together, at the step the service agreed on.
        saved = sorted(int(s) for s in os.listdir(workdir / "checkpoints") if s.isdigit())
        assert len(saved) == 1 and 1 <= saved[0] < STEPS, saved
        assert not (workdir / "results.json").exists()

        procs = _launch(workdir, log)
        assert [p.wait(timeout=900) for p in procs] == [0, 0], open(tmp_path / "log").read()[-3000:]
    steps = [r["step"] for r in _rows(metrics) if "loss" in r]
    assert steps == list(range(1, STEPS + 1))  # each step logged once: up to the checkpoint, then on resume
    assert (workdir / "results.json").exists()
