"""A multi-process run on a workdir another trainer holds fails on every process, at once."""
import os
import subprocess
import sys

from vitjax import rundir
from vitjax import train_lock
from tests.parallel.processes import CONFIG, env, free_port
from tests.paths import ROOT


def test_a_second_multi_process_run_fails_on_every_process(tmp_path):
    workdir = tmp_path / "multi"
    address = f"localhost:{free_port()}"
    with train_lock.lock(str(workdir)):  # this test process plays the trainer already at work
        procs = [subprocess.Popen(
            [sys.executable, "-m", "vitjax", "train", "--config", CONFIG, "--workdir", str(workdir),
             "--coordinator_address", address, "--num_processes", "2", "--process_id", str(i)],
            cwd=ROOT, env=env(devices=4), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for i in range(2)]
        outputs = [proc.communicate(timeout=300)[0] for proc in procs]
    for proc, output in zip(procs, outputs):
        assert proc.returncode == 1, output[-3000:]
    # Process 0 names the holder; process 1, which never touched the lock, points to process 0's error.
    assert f"is in use by another vitjax train (pid {os.getpid()} on host" in outputs[0]
    assert "is in use by another vitjax train (process 0's error names it)" in outputs[1]
    assert os.listdir(workdir) == [rundir.LOCK]
