"""The train step: a finite step updates the state, a non-finite one leaves it exactly as it was."""
import jax
import jax.numpy as jnp
import numpy as np
import optax

from vitjax import models
from vitjax.train import step as steps


def _step_and_state():
    model = models.build("vit", 3, patch_size=4, width=16, depth=1, num_heads=2, mlp_dim=32)
    params = model.init(jax.random.key(0), jnp.zeros((1, 8, 8, 1)), train=False)["params"]
    tx = optax.adamw(1e-2)
    train_step = jax.jit(steps.make_train_step(model, tx, optax.constant_schedule(1e-2), label_smoothing=0.0,
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
