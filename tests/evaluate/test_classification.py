"""Evaluation counts every test example once: a padded, masked last batch gives the plain mean, whatever
the eval batch size and the device count."""
import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from vitjax import models, parallel
from vitjax.data import config as data_config, sources
from vitjax.evaluate import classification
from vitjax.evaluate.evaluator import METRIC_COUNTS, Evaluator

NUM_TEST = 128


def _data_config():
    return data_config.resolve(dict(
        name="synthetic", pp_train="value_range(-1, 1)", pp_eval="value_range(-1, 1)",
        synthetic=dict(num_train=16, num_test=NUM_TEST, image_shape=(8, 8, 1), num_classes=4)))


@pytest.fixture(scope="module")
def model_and_params():
    model = models.build("vit", 4, patch_size=4, width=16, depth=1, num_heads=2, mlp_dim=32)
    params = model.init(jax.random.key(0), jnp.zeros((1, 8, 8, 1)), train=False)["params"]
    # A random head (the default is zero) so that predictions, and so accuracy and loss, vary by example.
    params["head"]["kernel"] = jax.random.normal(jax.random.key(1), params["head"]["kernel"].shape)
    return model, params


def _logits(model, params, images):
    return model.apply({"params": params}, images, train=False)


def _plain_means(model, params):
    """Accuracy and mean cross-entropy over the 128 test examples in one batch, no padding, no mask."""
    test = sources.load(_data_config(), "test")
    images = test.images.astype(np.float32) / 255 * 2 - 1  # value_range(-1, 1) of uint8
    logits = np.asarray(model.apply({"params": params}, images, train=False), np.float64)
    log_softmax = logits - logits.max(-1, keepdims=True)
    log_softmax -= np.log(np.exp(log_softmax).sum(-1, keepdims=True))
    loss = -log_softmax[np.arange(NUM_TEST), test.labels]
    return float(np.mean(logits.argmax(-1) == test.labels)), float(np.mean(loss))


# 48 and 96 leave a last batch of 32 real rows padded with 16 and 64 masked ones (label 0, zero image);
# 64 divides 128 and needs no padding.
@pytest.mark.parametrize("batch_size", [48, 96, 64])
def test_padded_last_batch_gives_the_plain_mean_over_the_examples(model_and_params, batch_size):
    model, params = model_and_params
    mesh = parallel.make_mesh({"data": -1})
    evaluator = Evaluator(lambda p, batch, rng: classification.sums(_logits(model, p, batch["image"]), batch),
                          _data_config(), batch_size=batch_size, mesh=mesh, params_sharding=parallel.replicated(mesh))
    got = evaluator(params)
    accuracy, loss = _plain_means(model, params)
    assert 0.1 < accuracy < 0.9, "a degenerate model would hide a miscounted padding row"
    assert got["accuracy"] == pytest.approx(accuracy, abs=1e-9)  # k / 128 exactly
    assert got["loss"] == pytest.approx(loss, rel=1e-5)


def test_the_sums_count_only_the_unmasked_rows(model_and_params):
    model, params = model_and_params
    rng = np.random.default_rng(2)
    batch = {"image": rng.normal(size=(6, 8, 8, 1)).astype(np.float32), "label": np.array([0, 1, 2, 3, 0, 0]),
             "mask": np.array([True, True, True, False, True, False])}
    logits = model.apply({"params": params}, batch["image"], train=False)
    sums = jax.jit(classification.sums)(logits, batch)
    losses = np.asarray(optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]))
    correct = np.asarray(logits).argmax(-1) == batch["label"]
    keep = batch["mask"]
    assert float(sums["accuracy"]) == correct[keep].sum()
    assert float(sums["loss"]) == pytest.approx(losses[keep].sum(), rel=1e-5)


from tests.paths import ROOT

# On 8 devices, with the tiny config's 128 test examples: batch sizes that do not divide by 8.
EIGHT_DEVICES = """
import json, os
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
import flax.linen as nn
import jax
from vitjax.evaluate.evaluator import Evaluator
from vitjax.train import trainer
from tests.train import tiny_config

config = tiny_config.get_config()
p = trainer.plan(config)
spec = trainer.state_spec(config, p)
with jax.set_mesh(p.mesh), nn.logical_axis_rules(p.rules):
    params = trainer.init_state(spec, jax.random.key(0)).params
    metrics = {size: Evaluator(p.objective.eval_sums, config.data, batch_size=size, mesh=p.mesh,
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


def test_a_metric_with_its_own_count_is_averaged_over_it_and_left_out_where_it_counts_nothing():
    """eval_sums may count a metric over some examples only (SAM's mIoU on unseen classes): the mean is
    over those, across the padded batches; a metric counting nothing in the split is not reported."""
    def sums(params, batch, rng):
        mask = batch["mask"].astype(jnp.float32)
        zero, low = (batch["label"] == 0) * mask, (batch["label"] < 2) * mask
        return {"zero_among_low": jnp.sum(zero), "never": jnp.sum(zero),
                METRIC_COUNTS: {"zero_among_low": jnp.sum(low), "never": jnp.sum(low * 0)}}

    mesh = parallel.make_mesh({"data": -1})
    got = Evaluator(sums, _data_config(), batch_size=48, mesh=mesh, params_sharding=parallel.replicated(mesh))({})
    labels = sources.load(_data_config(), "test").labels
    assert 0 < (labels == 0).sum() < (labels < 2).sum()  # the two counts differ, so a wrong divisor shows
    assert got == {"zero_among_low": pytest.approx((labels == 0).sum() / (labels < 2).sum(), abs=1e-9)}
