"""Losses objectives share: cross-entropy against label distributions, and temperature-scaled KL."""
import jax
import jax.numpy as jnp
import optax


def cross_entropy(logits, labels, label_smoothing: float = 0.0):
    """Mean softmax cross-entropy against (soft) label distributions [batch, classes]."""
    if label_smoothing:
        num_classes = labels.shape[-1]
        labels = labels * (1.0 - label_smoothing) + label_smoothing / num_classes
    return jnp.mean(optax.softmax_cross_entropy(logits.astype(jnp.float32), labels))


def kl_divergence(target_logits, logits, temperature: float = 1.0):
    """Mean over the batch of KL(softmax(target / T) || softmax(logits / T)), summed over classes.

    The target (a teacher's logits) is the distribution to match; the gradient flows through `logits`."""
    target = jax.nn.log_softmax(target_logits.astype(jnp.float32) / temperature, axis=-1)
    prediction = jax.nn.log_softmax(logits.astype(jnp.float32) / temperature, axis=-1)
    return jnp.mean(jnp.sum(jnp.exp(target) * (target - prediction), axis=-1))
