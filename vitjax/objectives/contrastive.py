"""The contrastive losses of dual encoders (vitjax/models/dual_encoder.py), as pure functions.

    loss = softmax_loss(logits)            # CLIP; logits [N, N]: image i against text j, pairs on the diagonal
    loss = sigmoid_loss(logits)            # SigLIP, on the same matrix
    # SigLIP over devices, inside jax.shard_map with the batch split over axis "data":
    loss = sigmoid_loss_chunked(image_embeds, text_embeds, logit_scale, logit_bias, axis_name="data")

CLIP's loss (Radford et al. 2021) is the mean of two softmax cross-entropies, each image classifying
the N texts and each text the N images. SigLIP's (Zhai et al. 2023) scores every image-text pair on its
own as a binary classification, positive on the diagonal:
    L = -1/N sum_i sum_j log sigmoid(z_ij * logits_ij),   z_ij = 1 if i == j else -1,
so it needs no normalisation over the batch, and `sigmoid_loss_chunked` never forms the global
[N, N] matrix: each of D devices scores its own N/D images against its own texts (the positives),
then the texts move one device along a ring (`jax.lax.ppermute`) D - 1 times, each step scoring only
negatives. Memory per device is one [N/D, N/D] block; the value and the gradients are those of
`sigmoid_loss` on the gathered batch (tests/objectives/test_contrastive.py, on 8 devices).
The objective plug-in that trains with them is vitjax/objectives/contrastive_objective.py.
"""
import jax
import jax.numpy as jnp

from vitjax.models.dual_encoder import pairwise_logits


def softmax_loss(logits):
    """CLIP: the mean over both directions (image -> text rows, text -> image columns) of the softmax
    cross-entropy of the matching pair, which sits on the diagonal of the square `logits`."""
    logits = logits.astype(jnp.float32)
    matching = jnp.diagonal(logits)
    image_to_text = jnp.mean(jax.nn.logsumexp(logits, axis=1) - matching)
    text_to_image = jnp.mean(jax.nn.logsumexp(logits, axis=0) - matching)
    return (image_to_text + text_to_image) / 2


def _sigmoid_sum(logits, positives_on_diagonal: bool):
    """-sum log sigmoid(z * logits) over a block: z = 1 on its diagonal if it holds the positives, else -1."""
    logits = logits.astype(jnp.float32)
    signs = -jnp.ones_like(logits)
    if positives_on_diagonal:
        signs = signs + 2 * jnp.eye(*logits.shape, dtype=logits.dtype)
    return -jnp.sum(jax.nn.log_sigmoid(signs * logits))


def sigmoid_loss(logits):
    """SigLIP on the whole square `logits` (bias included): summed over texts, averaged over images."""
    return _sigmoid_sum(logits, positives_on_diagonal=True) / logits.shape[0]


def sigmoid_loss_chunked(image_embeds, text_embeds, logit_scale, logit_bias, *, axis_name: str):
    """`sigmoid_loss` of the batch split over the devices of `axis_name`, for use inside shard_map.

    Each device passes its own rows (the i-th image matches the i-th text, on the same device) and the
    replicated scalars; every device gets the loss of the whole batch. The ring is a Python loop of
    D - 1 steps (D, the axis size, is static inside shard_map).
    """
    devices = jax.lax.axis_size(axis_name)
    ring = [(i, (i + 1) % devices) for i in range(devices)]
    total = _sigmoid_sum(pairwise_logits(image_embeds, text_embeds, logit_scale, logit_bias), True)
    for _ in range(devices - 1):
        text_embeds = jax.lax.ppermute(text_embeds, axis_name, ring)
        total += _sigmoid_sum(pairwise_logits(image_embeds, text_embeds, logit_scale, logit_bias), False)
    return jax.lax.psum(total, axis_name) / (image_embeds.shape[0] * devices)
