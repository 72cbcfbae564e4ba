"""Top-1 accuracy and mean cross-entropy: the classification metrics, summed per batch for split.py's
Evaluator (the default evaluation of every objective, vitjax/objectives/base.py)."""
import jax
import jax.numpy as jnp
import optax

from vitjax.evaluate import split


def sums(logits, batch) -> dict:
    """{'accuracy': correct predictions, 'loss': summed cross-entropy} over the rows of `batch` whose
    'mask' is set (padding rows add nothing); 'label' holds integer classes."""
    mask = batch["mask"].astype(jnp.float32)
    correct = (jnp.argmax(logits, -1) == batch["label"]).astype(jnp.float32)
    losses = optax.softmax_cross_entropy(logits, jax.nn.one_hot(batch["label"], logits.shape[-1]))
    return {"accuracy": jnp.sum(correct * mask), "loss": jnp.sum(losses * mask)}


def _logits_of(model, logits):
    return logits or (lambda params, images: model.apply({"params": params}, images, train=False))


def make_eval_step(model, logits=None):
    """Returns eval_step(params, batch) -> summed correct predictions, loss and valid examples.

    `logits(params, images)` gives the scored logits (default: the model at inference)."""
    logits_of = _logits_of(model, logits)

    def eval_step(params, batch):
        summed = sums(logits_of(params, batch["image"]), batch)
        return {"correct": summed["accuracy"], "loss": summed["loss"], "count": jnp.sum(batch["mask"])}

    return eval_step


class Evaluator(split.Evaluator):
    """split.Evaluator of a classifier: called with parameters, returns {'accuracy', 'loss'} on `split`.

    `logits(params, images)`: the scored logits (default: `model` at inference)."""

    def __init__(self, model, data_config, *, logits=None, **kwargs):
        logits_of = _logits_of(model, logits)
        super().__init__(lambda params, batch, rng: sums(logits_of(params, batch["image"]), batch), data_config,
                         **kwargs)
