"""The train state and the pure train step (jitted by the trainer; the eval step is vitjax/evaluate's).

What the step optimises is its objective's (vitjax/objectives): the loss, its metrics, and any extra
state beside the parameters. Everything else is here, once, for every objective: micro-batches and
their gradients, the optimiser, the non-finite guard. A step draws its dropout randomness from
`fold_in(seed_key, step)`, so it depends only on the state, the batch and the step number: a resumed
run repeats an uninterrupted one exactly.
"""
import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
import optax

from vitjax.objectives.base import EXTRA_INPUTS, Objective, StepInfo

_FIELDS = ("step", "params", "opt_state", "skipped_updates")


@jax.tree_util.register_pytree_with_keys_class
@dataclasses.dataclass(frozen=True)
class TrainState:
    """`extra`: the objective's state beside the parameters (None for none). A None extra is no node of
    the tree at all, so a supervised run's checkpoint has the layout it had before objectives existed,
    and those checkpoints still restore (orbax refuses a tree with a node its checkpoint lacks)."""
    step: jax.Array
    params: Any
    opt_state: Any
    skipped_updates: jax.Array  # non-finite steps whose update was dropped (nan_policy='skip')
    extra: Any = None

    def _names(self):
        return _FIELDS + (("extra",) if self.extra is not None else ())

    def tree_flatten_with_keys(self):
        return [(jax.tree_util.GetAttrKey(name), getattr(self, name)) for name in self._names()], None

    def tree_flatten(self):
        return [getattr(self, name) for name in self._names()], None

    @classmethod
    def tree_unflatten(cls, _, children):
        return cls(*children)

    def replace(self, **changes) -> "TrainState":
        return dataclasses.replace(self, **changes)


def create_state(params, tx: optax.GradientTransformation, extra=None) -> TrainState:
    return TrainState(step=jnp.zeros((), jnp.int32), params=params, opt_state=tx.init(params),
                      skipped_updates=jnp.zeros((), jnp.int32), extra=extra)


def make_step(objective: Objective, tx: optax.GradientTransformation, schedule: Callable, *,
              grad_accum_steps: int):
    """Returns train_step(state, batch, seed_key) -> (state, metrics) for `objective`.

    With `grad_accum_steps` k > 1 the batch is processed as k micro-batches whose gradients (and the
    objective's metrics) are averaged, so one step is still one optimiser update over the whole batch,
    in 1/k the memory. A non-finite loss or gradient never reaches the parameters or the extra state:
    the update is dropped and flagged (`finite` = 0), and the trainer stops or counts it according to
    `nan_policy`.
    """
    # Differentiated with respect to the parameters alone: the extra state (a teacher) gets no gradient.
    grad_fn = jax.value_and_grad(objective.loss, has_aux=True)
    accumulated_grads = _accumulator(grad_fn, grad_accum_steps)

    def train_step(state: TrainState, batch, seed_key):
        rng = jax.random.fold_in(seed_key, state.step)
        info = StepInfo(step=state.step)
        loss, objective_metrics, grads = accumulated_grads(state.params, state.extra, batch, rng, info)
        objective_metrics = dict(objective_metrics)
        extra_inputs = objective_metrics.pop(EXTRA_INPUTS, None)  # for update_extra, not for the log
        grad_norm = optax.tree.norm(grads)
        finite = jnp.isfinite(loss) & jnp.isfinite(grad_norm)

        def apply_update(operands):
            params, opt_state, extra = operands
            with jax.named_scope("optimizer"):  # the scopes `vitjax bench --profile` reports time by
                updates, opt_state = tx.update(grads, opt_state, params)
                params = optax.apply_updates(params, updates)
            with jax.named_scope("update_extra"):
                return params, opt_state, objective.update_extra(extra, params, info, extra_inputs)

        # Skipping the update, rather than computing it and then selecting the old values leaf by leaf,
        # saves passes over the whole state (measured: experiments/results/bench/README.md).
        params, opt_state, extra = jax.lax.cond(finite, apply_update, lambda operands: operands,
                                                (state.params, state.opt_state, state.extra))
        new_state = TrainState(
            step=state.step + 1,
            params=params,
            opt_state=opt_state,
            skipped_updates=state.skipped_updates + (~finite).astype(jnp.int32),
            extra=extra)
        metrics = {**objective_metrics, "loss": loss, "grad_norm": grad_norm, "lr": schedule(state.step),
                   "finite": finite.astype(jnp.int32), "skipped_updates": new_state.skipped_updates}
        return new_state, metrics

    return train_step


def _accumulator(grad_fn, grad_accum_steps: int):
    """(params, extra, batch, rng, info) -> (loss, metrics, grads), averaged over the micro-batches."""

    def one(params, extra, batch, rng, info):
        (loss, metrics), grads = grad_fn(params, extra, batch, rng, info)
        return loss, metrics, grads

    if grad_accum_steps == 1:
        return one

    def accumulated(params, extra, batch, rng, info):
        micro = jax.tree.map(
            lambda x: x.reshape(grad_accum_steps, x.shape[0] // grad_accum_steps, *x.shape[1:]), batch)

        def body(carry, xs):
            index, micro_batch = xs
            out = one(params, extra, micro_batch, jax.random.fold_in(rng, index), info)
            return jax.tree.map(jnp.add, carry, out), None

        first = jax.tree.map(lambda x: x[0], micro)
        shapes = jax.eval_shape(one, params, extra, first, rng, info)
        zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
        sums, _ = jax.lax.scan(body, zeros, (jnp.arange(grad_accum_steps), micro))
        return jax.tree.map(lambda total: total / grad_accum_steps, sums)

    return accumulated
