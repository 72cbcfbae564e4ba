"""Top-1 accuracy and mean loss over a whole split, exactly once per example."""
import math

import jax
import jax.numpy as jnp
import optax

from vitjax import data, parallel


def make_eval_step(model, logits=None):
    """Returns eval_step(params, batch) -> summed correct predictions, loss and valid examples.

    `logits(params, images)` gives the scored logits (default: the model at inference; the trainer
    passes its objective's `eval_logits`)."""
    logits_of = logits or (lambda params, images: model.apply({"params": params}, images, train=False))

    def eval_step(params, batch):
        logits = logits_of(params, batch["image"])
        mask = batch["mask"].astype(jnp.float32)
        correct = (jnp.argmax(logits, -1) == batch["label"]).astype(jnp.float32)
        labels = jax.nn.one_hot(batch["label"], logits.shape[-1])
        losses = optax.softmax_cross_entropy(logits, labels)
        return {"correct": jnp.sum(correct * mask), "loss": jnp.sum(losses * mask), "count": jnp.sum(mask)}

    return eval_step


class Evaluator:
    """Compiled once; called with parameters, returns {'accuracy', 'loss'} on `split`.

    The last batch is padded with masked rows, so every example counts once whatever the batch size.
    `batch_size` is rounded up to a multiple of the devices and processes a batch is split over (500
    on 8 devices: 504), so any eval_batch_size works on any mesh. `logits`: see `make_eval_step`.
    """

    def __init__(self, model, data_config, *, batch_size: int, mesh, params_sharding, split: str | None = None,
                 compiler_options: dict | None = None, logits=None):
        self._data_config = data_config
        self._split = split or data_config.test_split
        self._batch_size = _padded(batch_size, math.lcm(parallel.data_parallel_size(mesh), jax.process_count()))
        self._batch_sharding = parallel.batch_sharding(mesh)
        self._step = jax.jit(make_eval_step(model, logits), in_shardings=(params_sharding, self._batch_sharding),
                             out_shardings=parallel.replicated(mesh), compiler_options=compiler_options or None)

    def __call__(self, params) -> dict:
        totals = None
        for batch in data.eval_batches(self._data_config, split=self._split, global_batch_size=self._batch_size,
                                       process_index=jax.process_index(), process_count=jax.process_count()):
            sums = self._step(params, data.to_global(batch, self._batch_sharding))
            totals = sums if totals is None else jax.tree.map(lambda a, b: a + b, totals, sums)
        totals = jax.device_get(totals)
        count = float(totals["count"])
        if count == 0:
            raise ValueError(f"split {self._split!r} of {self._data_config.name} is empty; nothing to evaluate")
        return {"accuracy": float(totals["correct"]) / count, "loss": float(totals["loss"]) / count}


def _padded(batch_size: int, multiple: int) -> int:
    return -(-batch_size // multiple) * multiple
