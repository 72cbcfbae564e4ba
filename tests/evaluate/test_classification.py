"""The evaluator counts every example once, whatever the eval batch size and the device count."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# On 8 devices, with the tiny config's 128 test examples: batch sizes that do not divide by 8.
EIGHT_DEVICES = """
import json, os
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
import flax.linen as nn
import jax
from vitjax.evaluate.classification import Evaluator
from vitjax.train import trainer
from tests.train import tiny_config

config = tiny_config.get_config()
p = trainer.plan(config)
spec = trainer.state_spec(config, p)
with jax.set_mesh(p.mesh), nn.logical_axis_rules(p.rules):
    params = trainer.init_state(spec, jax.random.key(0)).params
    metrics = {size: Evaluator(p.model, config.data, batch_size=size, mesh=p.mesh,
                               params_sharding=spec.shardings.params)(params) for size in (500, 36, 128)}
print(json.dumps({"devices": jax.device_count(), "metrics": metrics}))
"""


def test_an_eval_batch_size_that_does_not_divide_by_the_devices_is_padded():
    run = subprocess.run([sys.executable, "-c", EIGHT_DEVICES], capture_output=True, text=True, timeout=300,
                         cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["devices"] == 8
    reference = out["metrics"]["128"]
    for size in ("500", "36"):
        assert out["metrics"][size]["accuracy"] == reference["accuracy"], size
        assert out["metrics"][size]["loss"] == pytest.approx(reference["loss"], rel=1e-5), size
