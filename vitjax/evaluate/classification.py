"""Top-1 accuracy and mean cross-entropy: the classification metrics, summed per batch for evaluator.py's
Evaluator (the default evaluation of every objective, vitjax/objectives/base.py)."""
import jax
import jax.numpy as jnp
import optax



def sums(logits, batch) -> dict:
    """{'accuracy': correct predictions, 'loss': summed cross-entropy} over the rows of `batch` whose
    'mask' is set (padding rows add nothing); 'label' holds integer classes."""
    mask = batch["mask"].astype(jnp.float32)
    correct = (jnp.argmax(logits, -1) == batch["label"]).astype(jnp.float32)
    losses = optax.softmax_cross_entropy(logits, jax.nn.one_hot(batch["label"], logits.shape[-1]))
    return {"accuracy": jnp.sum(correct * mask), "loss": jnp.sum(losses * mask)}
