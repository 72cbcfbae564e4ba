"""SAM's mask losses (Kirillov et al. 2023, appendix A): focal and dice loss of mask logits against a
target mask, 20:1, and the IoU the IoU head learns to predict (its loss is the squared error).

    loss = mask_loss(logits, targets)            # [..., H, W] -> [...]: 20 x focal + dice
    iou = mask_iou(logits > 0, targets)          # [...]

Per mask: focal loss is the mean over pixels of the sigmoid focal loss (Lin et al. 2017) with alpha 0.25
and gamma 2, the defaults of the focal loss SAM cites; dice loss is 1 - (2 sum(p t) + 1) / (sum(p) +
sum(t) + 1) with p the sigmoid of the logits (the +1 keeps an empty target and prediction at 0 loss).
"""
import jax
import jax.numpy as jnp
import optax

FOCAL_WEIGHT = 20.0  # focal : dice, the paper's 20:1
FOCAL_ALPHA, FOCAL_GAMMA = 0.25, 2.0


def focal_loss(logits, targets, alpha: float = FOCAL_ALPHA, gamma: float = FOCAL_GAMMA):
    """[..., H, W] logits and bool targets -> [...]: the mean over pixels of
    -alpha_t (1 - p_t)^gamma log(p_t), p_t the probability given to the right answer."""
    logits, targets = logits.astype(jnp.float32), targets.astype(jnp.float32)
    probability = jax.nn.sigmoid(logits)
    cross_entropy = optax.sigmoid_binary_cross_entropy(logits, targets)
    p_right = probability * targets + (1 - probability) * (1 - targets)
    alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
    return jnp.mean(alpha_t * (1 - p_right) ** gamma * cross_entropy, axis=(-2, -1))


def dice_loss(logits, targets):
    """[..., H, W] logits and bool targets -> [...]: 1 - (2 sum(p t) + 1) / (sum(p) + sum(t) + 1)."""
    probability = jax.nn.sigmoid(logits.astype(jnp.float32))
    targets = targets.astype(jnp.float32)
    overlap = jnp.sum(probability * targets, axis=(-2, -1))
    total = jnp.sum(probability, axis=(-2, -1)) + jnp.sum(targets, axis=(-2, -1))
    return 1.0 - (2.0 * overlap + 1.0) / (total + 1.0)


def mask_loss(logits, targets):
    """[..., H, W] -> [...]: FOCAL_WEIGHT x focal loss + dice loss."""
    return FOCAL_WEIGHT * focal_loss(logits, targets) + dice_loss(logits, targets)


def mask_iou(predicted, targets):
    """[..., H, W] bool masks -> [...] float32: |intersection| / |union|; 1 where both are empty."""
    intersection = jnp.sum(predicted & targets, axis=(-2, -1)).astype(jnp.float32)
    union = jnp.sum(predicted | targets, axis=(-2, -1)).astype(jnp.float32)
    return jnp.where(union > 0, intersection / jnp.maximum(union, 1.0), 1.0)
