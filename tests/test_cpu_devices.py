"""`vitjax train` splits a CPU host into devices that divide its batches, and its checkpoints restore
in processes with other device counts."""
import os
import re
import subprocess
import sys

import jax
import numpy as np
import pytest

from tests.train import tiny_config
from vitjax import cpu_devices, rundir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = os.path.join(ROOT, "tests", "train", "tiny_config.py")


def _config(batch=128, eval_batch=500, accum=1):
    config = tiny_config.get_config()
    config.batch_size, config.eval_batch_size, config.grad_accum_steps = batch, eval_batch, accum
    return config


@pytest.mark.parametrize("batch, eval_batch, accum, wanted, count", [
    (128, 500, 1, 4, 4),
    (128, 500, 16, 4, 4),   # micro-batch 8
    (128, 500, 64, 4, 2),   # micro-batch 2
    (6, 500, 1, 4, 2),
    (128, 250, 1, 4, 2),    # the eval batch must split too
    (3, 500, 1, 4, 1),
    (96, 96, 1, 6, 6),
    (32, 32, 1, 6, 1),      # 6, then 3, then 1
])
def test_count_divides_every_batch(batch, eval_batch, accum, wanted, count):
    assert cpu_devices.count_for(_config(batch, eval_batch, accum), wanted) == count


@pytest.mark.parametrize("environ, wanted", [
    ({}, cpu_devices.DEFAULT),
    ({"VITJAX_CPU_DEVICES": "1"}, 1),
    ({"VITJAX_CPU_DEVICES": " 8 "}, 8),
    ({"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}, None),  # the user's own count wins
    ({"JAX_NUM_CPU_DEVICES": "2"}, None),
])
def test_requested_count(monkeypatch, environ, wanted):
    for name in ("VITJAX_CPU_DEVICES", "XLA_FLAGS", "JAX_NUM_CPU_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert cpu_devices.requested() == wanted


@pytest.mark.parametrize("value", ["0", "four", "-2"])
def test_bad_request_names_the_variable(monkeypatch, value):
    monkeypatch.setenv("VITJAX_CPU_DEVICES", value)
    with pytest.raises(ValueError, match="VITJAX_CPU_DEVICES"):
        cpu_devices.requested()


def test_explicit_mesh_or_started_backend_is_left_alone(monkeypatch):
    monkeypatch.delenv("VITJAX_CPU_DEVICES", raising=False)
    monkeypatch.delenv("JAX_NUM_CPU_DEVICES", raising=False)
    monkeypatch.setenv("XLA_FLAGS", "")
    config = _config()
    config.mesh.fsdp = -1
    config.mesh.data = 1
    assert cpu_devices.apply(config) is None
    jax.devices()  # this test process's backends are running: their device count can no longer change
    assert cpu_devices.apply(_config()) is None
    assert jax.config.jax_num_cpu_devices in (-1, jax.local_device_count("cpu"))


def _run(*args, env=None):
    environ = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    return subprocess.run([sys.executable, "-m", "vitjax", *args], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**environ, **(env or {})})


def test_train_on_four_devices_then_restore_elsewhere(tmp_path):
    workdir = str(tmp_path / "w")
    run = _run("train", "--config", f"{TINY}:steps=10", "--workdir", workdir, env={"VITJAX_CPU_DEVICES": ""})
    assert run.returncode == 0, run.stderr[-3000:]
    assert "mesh data=4 fsdp=1 model=1" in run.stdout
    # Fine-tuning, few-shot and analysis read the parameters in this process (one CPU device).
    params = rundir.read_checkpoint_params(workdir)
    assert all(isinstance(leaf, np.ndarray) for leaf in jax.tree.leaves(params))
    assert params["head"]["kernel"].shape == (32, 4)
    # `vitjax eval` restores the train state in a process of its own, here with two devices.
    evaluated = _run("eval", "--workdir", workdir, "--fewshot", "--shots", "1",
                     env={"JAX_NUM_CPU_DEVICES": "2"})
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    assert re.search(r"step=10 test_accuracy=\S+ .*1shot=", evaluated.stdout)
