"""The kill-and-resume tests' tiny run through `vitjax train` (tests/train/test_faults.py, tests/gcs): the
command, running it or starting it and waiting for a step, and comparing two runs' final parameters bit
for bit."""
import subprocess
import sys
import time

import numpy as np

from vitjax import config_compare, metrics_log
from vitjax.checkpoints import reader
from tests.paths import ROOT, TINY

KILL_SEED = 2026  # seeds the step a kill lands at: a failure reproduces
STEPS = 24
FLAGS = ("--config.log_every_steps=1", "--config.checkpoint_every_steps=1", "--config.keep_checkpoints=2")


def command(workdir, *extra, model="vit"):
    return [sys.executable, "-m", "vitjax", "train", "--config", f"{TINY}:model={model},steps={STEPS}",
            "--workdir", str(workdir), *FLAGS, *extra]


def run_vitjax_train(workdir, *extra, model="vit"):
    return subprocess.run(command(workdir, *extra, model=model), capture_output=True, text=True, timeout=600,
                          cwd=ROOT)


def logged_steps(workdir):
    return [row["step"] for row in metrics_log.read_metrics(workdir) if "loss" in row]


def start_and_wait(workdir, until_step, model="vit"):
    process = subprocess.Popen(command(workdir, model=model), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, cwd=ROOT)
    deadline = time.time() + 300
    while time.time() < deadline and process.poll() is None:
        steps = logged_steps(workdir)
        if steps and steps[-1] >= until_step:
            return process
        time.sleep(0.05)
    process.kill()
    raise AssertionError(f"the run never reached step {until_step}: {process.communicate()[0][-3000:]}")


def final_params(workdir):
    return reader.read_params(str(workdir))


def assert_bitwise_equal(a, b):
    flat_a, flat_b = flatten(a), flatten(b)
    assert flat_a.keys() == flat_b.keys()
    for key in flat_a:
        np.testing.assert_array_equal(flat_a[key], flat_b[key], err_msg=key)


def flatten(tree):
    return {key: np.asarray(value) for key, value in config_compare.flatten(tree).items()}
