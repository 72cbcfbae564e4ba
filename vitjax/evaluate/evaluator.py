"""Means of per-example metrics over a whole split, every example exactly once: the trainer's evaluator.

    evaluator = Evaluator(objective.eval_sums, config.data, batch_size=500, mesh=mesh,
                          params_sharding=shardings.params, split="val")
    evaluator(params)   # {'accuracy': 0.91, 'loss': 0.25} for a classifier

What is summed is the caller's (an objective's `eval_sums`, vitjax/objectives/base.py); this module owns
the rest, the same for every objective: the batches of the split, their padding, their placement on
the devices, one compilation, and the fixed key each batch gets (`batch_key`), which makes an
evaluation that draws (MAE's masks) give the same numbers every time it sees the same parameters.

A metric over some of the examples only (SAM's mIoU on the canvases of unseen classes) gives its own
count: `sums` may hold METRIC_COUNTS, {metric: how many things its sum is over}, and that metric is then
its sum over the split divided by its count's sum; a metric whose count is 0 over the split is left out.
"""
import math

import jax
import jax.numpy as jnp

from vitjax import data, parallel

EVAL_SEED = 0  # the root of every evaluation key: one fixed key per batch index, whatever the run
METRIC_COUNTS = "metric_counts"  # the key of `sums`' own counts (module docstring)


def batch_key(index):
    """The key of an evaluation's `index`-th batch (0, 1, ...): the same at every step and on resume."""
    return jax.random.fold_in(jax.random.key(EVAL_SEED), index)


class Evaluator:
    """Compiled once; called with parameters, returns {metric: mean over the examples of `split`}.

    `sums(params, batch, rng)` -> {metric: sum over the batch's real rows} (`Objective.eval_sums`). The
    last batch is padded with masked rows, so every example counts once whatever the batch size.
    `batch_size` is rounded up to a multiple of the devices and processes a batch is split over (500 on
    8 devices: 504), so any eval_batch_size works on any mesh. `split` None: the test split.
    """

    def __init__(self, sums, data_config, *, batch_size: int, mesh, params_sharding, split: str | None = None,
                 compiler_options: dict | None = None):
        self._data_config = data_config
        self._split = split or data_config.test_split
        self._batch_size = _padded(batch_size, math.lcm(parallel.data_parallel_size(mesh), jax.process_count()))
        self._batch_sharding = parallel.batch_sharding(mesh)

        def step(params, batch, index):
            return {**sums(params, batch, batch_key(index)), "count": jnp.sum(batch["mask"].astype(jnp.float32))}

        replicated = parallel.replicated(mesh)
        self._step = jax.jit(step, in_shardings=(params_sharding, self._batch_sharding, replicated),
                             out_shardings=replicated, compiler_options=compiler_options or None)

    def __call__(self, params) -> dict:
        totals = None
        batches = data.eval_batches(self._data_config, split=self._split, global_batch_size=self._batch_size,
                                    process_index=jax.process_index(), process_count=jax.process_count())
        for index, batch in enumerate(batches):
            sums = self._step(params, data.to_global(batch, self._batch_sharding), jnp.int32(index))
            totals = sums if totals is None else jax.tree.map(lambda a, b: a + b, totals, sums)
        totals = jax.device_get(totals)
        count = float(totals.pop("count")) if totals is not None else 0.0
        if count == 0:
            raise ValueError(f"split {self._split!r} of {self._data_config.name} is empty; nothing to evaluate")
        own = {name: float(total) for name, total in totals.pop(METRIC_COUNTS, {}).items()}
        return {name: float(total) / own.get(name, count) for name, total in totals.items() if own.get(name, count)}


def _padded(batch_size: int, multiple: int) -> int:
    return -(-batch_size // multiple) * multiple
