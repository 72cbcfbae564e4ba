"""The train state and the pure train step (jitted by the trainer; the eval step is vitjax/evaluate's).

A step draws its dropout randomness from `fold_in(seed_key, step)`, so it depends only on the state,
the batch and the step number: a resumed run repeats an uninterrupted one exactly.
"""
from typing import Any, Callable

import flax
import jax
import jax.numpy as jnp
import optax


@flax.struct.dataclass
class TrainState:
    step: jax.Array
    params: Any
    opt_state: Any
    skipped_updates: jax.Array  # non-finite steps whose update was dropped (nan_policy='skip')


def create_state(params, tx: optax.GradientTransformation) -> TrainState:
    return TrainState(step=jnp.zeros((), jnp.int32), params=params, opt_state=tx.init(params),
                      skipped_updates=jnp.zeros((), jnp.int32))


def cross_entropy(logits, labels, label_smoothing: float = 0.0):
    """Mean softmax cross-entropy against (soft) label distributions [batch, classes]."""
    if label_smoothing:
        num_classes = labels.shape[-1]
        labels = labels * (1.0 - label_smoothing) + label_smoothing / num_classes
    return jnp.mean(optax.softmax_cross_entropy(logits.astype(jnp.float32), labels))


def make_train_step(model, tx: optax.GradientTransformation, schedule: Callable, *,
                    label_smoothing: float, grad_accum_steps: int):
    """Returns train_step(state, batch, seed_key) -> (state, metrics).

    With `grad_accum_steps` k > 1 the batch is processed as k micro-batches whose gradients are
    averaged, so one step is still one optimiser update over the whole batch, in 1/k the memory.
    A non-finite loss or gradient never reaches the parameters: the update is dropped and flagged
    (`finite` = 0), and the trainer stops or counts it according to `nan_policy`.
    """

    def loss_fn(params, images, labels, rng):
        logits = model.apply({"params": params}, images, train=True, rngs={"dropout": rng})
        return cross_entropy(logits, labels, label_smoothing)

    grad_fn = jax.value_and_grad(loss_fn)

    def accumulated_grads(params, batch, rng):
        if grad_accum_steps == 1:
            return grad_fn(params, batch["image"], batch["labels"], rng)
        micro = jax.tree.map(
            lambda x: x.reshape(grad_accum_steps, x.shape[0] // grad_accum_steps, *x.shape[1:]), batch)

        def body(carry, xs):
            loss_sum, grad_sum = carry
            index, micro_batch = xs
            loss, grads = grad_fn(params, micro_batch["image"], micro_batch["labels"],
                                  jax.random.fold_in(rng, index))
            return (loss_sum + loss, jax.tree.map(jnp.add, grad_sum, grads)), None

        zeros = jax.tree.map(jnp.zeros_like, params)
        (loss_sum, grad_sum), _ = jax.lax.scan(
            body, (jnp.zeros((), jnp.float32), zeros), (jnp.arange(grad_accum_steps), micro))
        return loss_sum / grad_accum_steps, jax.tree.map(lambda g: g / grad_accum_steps, grad_sum)

    def train_step(state: TrainState, batch, seed_key):
        rng = jax.random.fold_in(seed_key, state.step)
        loss, grads = accumulated_grads(state.params, batch, rng)
        grad_norm = optax.tree.norm(grads)
        finite = jnp.isfinite(loss) & jnp.isfinite(grad_norm)

        def apply_update(operands):
            params, opt_state = operands
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state

        # Skipping the update, rather than computing it and then selecting the old values leaf by leaf,
        # saves passes over the whole state (measured: experiments/results/bench/README.md).
        params, opt_state = jax.lax.cond(finite, apply_update, lambda operands: operands,
                                         (state.params, state.opt_state))
        new_state = TrainState(
            step=state.step + 1,
            params=params,
            opt_state=opt_state,
            skipped_updates=state.skipped_updates + (~finite).astype(jnp.int32))
        metrics = {"loss": loss, "grad_norm": grad_norm, "lr": schedule(state.step),
                   "finite": finite.astype(jnp.int32), "skipped_updates": new_state.skipped_updates}
        return new_state, metrics

    return train_step
