"""The train step: a finite step updates the state, a non-finite one leaves it exactly as it was; its
loss (label smoothing) and its gradient over accumulated micro-batches against direct computations."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from vitjax import models
from vitjax.objectives.losses import cross_entropy
from vitjax.objectives.supervised import Supervised
from vitjax.train import step as steps


def _step_and_state():
    model = models.build("vit", 3, patch_size=4, width=16, depth=1, num_heads=2, mlp_dim=32)
    params = model.init(jax.random.key(0), jnp.zeros((1, 8, 8, 1)), train=False)["params"]
    tx = optax.adamw(1e-2)
    train_step = jax.jit(steps.make_step(Supervised(model, label_smoothing=0.0), tx, optax.constant_schedule(1e-2),
                                               grad_accum_steps=1))
    return train_step, steps.create_state(params, tx)


def _batch(value=None):
    images = np.random.default_rng(0).normal(size=(4, 8, 8, 1)).astype(np.float32)
    if value is not None:
        images[1, 2, 3, 0] = value
    return {"image": images, "labels": np.eye(3, dtype=np.float32)[[0, 1, 2, 0]]}


def _leaves(tree):
    return [np.asarray(leaf) for leaf in jax.tree.leaves(tree)]


def test_finite_step_updates_parameters_and_optimiser_state():
    train_step, state = _step_and_state()
    new, metrics = train_step(state, _batch(), jax.random.key(1))
    assert int(metrics["finite"]) == 1 and int(new.step) == 1 and int(new.skipped_updates) == 0
    assert any((a != b).any() for a, b in zip(_leaves(new.params), _leaves(state.params)))
    assert any((a != b).any() for a, b in zip(_leaves(new.opt_state), _leaves(state.opt_state)))


def test_non_finite_step_leaves_the_state_bit_identical():
    train_step, state = _step_and_state()
    state, _ = train_step(state, _batch(), jax.random.key(1))  # an Adam state that is not all zeros
    before_params, before_opt = _leaves(state.params), _leaves(state.opt_state)
    new, metrics = train_step(state, _batch(np.nan), jax.random.key(1))
    assert int(metrics["finite"]) == 0 and int(new.skipped_updates) == 1 and int(new.step) == 2
    for after, before in zip(_leaves(new.params) + _leaves(new.opt_state), before_params + before_opt):
        np.testing.assert_array_equal(after, before)


# --- The loss, and the gradient of a batch split into micro-batches ------------------------------

def _reference_cross_entropy(logits, labels, smoothing):
    """Mean over the batch of -sum_k q_k log softmax(z)_k, q = (1 - eps) y + eps / K, in float64."""
    logits, labels = np.asarray(logits, np.float64), np.asarray(labels, np.float64)
    q = (1 - smoothing) * labels + smoothing / labels.shape[-1]
    z = logits - logits.max(-1, keepdims=True)
    log_softmax = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return float(np.mean(-(q * log_softmax).sum(-1)))


def test_label_smoothing_follows_its_formula_for_hard_and_soft_labels():
    rng = np.random.default_rng(3)
    logits = rng.normal(scale=3.0, size=(6, 5)).astype(np.float32)
    hard = np.eye(5, dtype=np.float32)[[0, 4, 2, 2, 1, 3]]
    soft = 0.7 * hard + 0.3 * hard[::-1]  # mixup's labels: two classes weighted
    for labels in (hard, soft):
        for smoothing in (0.0, 0.1, 0.5):
            ours = float(cross_entropy(jnp.asarray(logits), jnp.asarray(labels), smoothing))
            assert ours == pytest.approx(_reference_cross_entropy(logits, labels, smoothing), rel=1e-6)


def test_train_step_uses_the_label_smoothing_it_is_given():
    model = models.build("vit", 3, patch_size=4, width=16, depth=1, num_heads=2, mlp_dim=32)
    params = model.init(jax.random.key(0), jnp.zeros((1, 8, 8, 1)), train=False)["params"]
    # A head that is not zero (the default initialisation) makes the logits, and the smoothing, matter.
    params["head"]["kernel"] = jax.random.normal(jax.random.key(5), params["head"]["kernel"].shape)
    batch = _batch()
    logits = model.apply({"params": params}, batch["image"], train=False)
    tx = optax.sgd(0.1)
    step = jax.jit(steps.make_step(Supervised(model, label_smoothing=0.2), tx, optax.constant_schedule(0.1),
                                         grad_accum_steps=1))
    _, metrics = step(steps.create_state(params, tx), batch, jax.random.key(1))
    assert float(metrics["loss"]) == pytest.approx(_reference_cross_entropy(logits, batch["labels"], 0.2), rel=1e-6)
    assert float(metrics["loss"]) != pytest.approx(_reference_cross_entropy(logits, batch["labels"], 0.0), rel=1e-3)


@pytest.mark.parametrize("accum", [1, 4])
def test_accumulated_micro_batches_equal_one_step_on_the_whole_batch(accum):
    """float32, no dropout, plain SGD: Adam would divide away a gradient that is k times too large."""
    model = models.build("vit", 3, patch_size=4, width=16, depth=1, num_heads=2, mlp_dim=32)
    params = model.init(jax.random.key(0), jnp.zeros((1, 8, 8, 1)), train=False)["params"]
    params["head"]["kernel"] = jax.random.normal(jax.random.key(5), params["head"]["kernel"].shape)
    rng = np.random.default_rng(4)
    batch = {"image": rng.normal(size=(8, 8, 8, 1)).astype(np.float32),
             "labels": np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)]}
    lr = 0.01  # updates of ~0.1: far above the 1e-6 tolerance, small enough to keep float32 error below it

    # The reference: the gradient of the mean loss over all 8 examples, taken in one piece.
    def full_loss(p):
        logits = model.apply({"params": p}, batch["image"], train=False)
        return jnp.mean(optax.softmax_cross_entropy(logits, batch["labels"]))

    loss, grads = jax.value_and_grad(full_loss)(params)
    expected = jax.tree.map(lambda p, g: p - lr * g, params, grads)

    tx = optax.sgd(lr)
    step = jax.jit(steps.make_step(Supervised(model, label_smoothing=0.0), tx, optax.constant_schedule(lr),
                                         grad_accum_steps=accum))
    state, metrics = step(steps.create_state(params, tx), batch, jax.random.key(1))
    assert float(metrics["loss"]) == pytest.approx(float(loss), abs=1e-6)
    assert float(metrics["grad_norm"]) == pytest.approx(float(optax.tree.norm(grads)), rel=1e-5)
    for got, want in zip(_leaves(state.params), _leaves(expected)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    # The step moved the parameters far beyond that tolerance, so the comparison has teeth.
    assert max(np.abs(a - b).max() for a, b in zip(_leaves(state.params), _leaves(params))) > 1e-2
