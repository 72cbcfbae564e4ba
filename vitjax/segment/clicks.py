"""Prompts drawn from masks, as SAM's interactive training simulates a user (Kirillov et al. 2023, sec. 3
and appendix A): a first point uniformly inside the target mask, or the mask's bounding box (with noise
in training); then each next point uniformly inside the error region of the previous prediction,
foreground where the prediction missed the target (a false negative), background where it spilled over
(a false positive). All of it traced JAX, drawn from the key given: the same key, the same clicks.

    points, labels = first_point(key, targets)                 # [n, 1, 2] (x, y), [n, 1] ones
    boxes = bounding_box(targets)                              # [n, 4] (x0, y0, x1, y1), inclusive
    point, label = error_click(key, predicted, targets)        # [n, 1, 2], [n, 1]: 1, 0, or -1

Masks are bool [n, H, W] on the image's pixel grid; a point (x, y) is a pixel's column and row, as the
prompt encoder takes them (it adds the half pixel). A prediction that equals its target leaves no error
to click on: its click is a padding point (label -1, "not a point"), which tells the model nothing new.
"""
import jax
import jax.numpy as jnp

FOREGROUND, BACKGROUND, NOT_A_POINT = 1, 0, -1


def sample_pixels(key, regions):
    """(points [n, 2] (x, y) float32, found [n] bool): one pixel uniformly from each region (bool
    [n, H, W]): the region's argmax of independent uniforms. An empty region gives (0, 0), not found."""
    count, _, width = regions.shape
    scores = jnp.where(regions, jax.random.uniform(key, regions.shape), -1.0)
    flat = jnp.argmax(scores.reshape(count, -1), axis=-1)
    rows, cols = jnp.divmod(flat, width)
    return jnp.stack([cols, rows], axis=-1).astype(jnp.float32), regions.any(axis=(1, 2))


def first_point(key, targets):
    """A foreground point uniformly inside each target: ([n, 1, 2], [n, 1] int32 ones)."""
    points, _ = sample_pixels(key, targets)
    return points[:, None], jnp.full((targets.shape[0], 1), FOREGROUND, jnp.int32)


def bounding_box(masks):
    """[n, 4] float32 (x0, y0, x1, y1): the first and last row and column holding the mask, inclusive,
    as segment-anything's batched_mask_to_box gives them (an empty mask gives (0, 0, 0, 0))."""
    rows, cols = masks.any(axis=2), masks.any(axis=1)

    def extent(hit):
        first = jnp.argmax(hit, axis=-1)
        last = hit.shape[-1] - 1 - jnp.argmax(hit[:, ::-1], axis=-1)
        return jnp.where(hit.any(axis=-1), first, 0), jnp.where(hit.any(axis=-1), last, 0)

    (y0, y1), (x0, x1) = extent(rows), extent(cols)
    return jnp.stack([x0, y0, x1, y1], axis=-1).astype(jnp.float32)


def noisy_box(key, boxes, image_size: tuple[int, int], noise: float = 0.1, max_noise: float = 20.0):
    """Boxes [n, 4] with each coordinate moved by N(0, (noise x the box's side)^2), the standard deviation
    capped at `max_noise` pixels (SAM's training boxes: 10%, 20 pixels), kept on the image and ordered."""
    height, width = image_size
    sides = jnp.stack([boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]] * 2, axis=-1) + 1.0
    moved = boxes + jax.random.normal(key, boxes.shape) * jnp.minimum(noise * sides, max_noise)
    moved = jnp.clip(moved, 0.0, jnp.asarray([width - 1, height - 1] * 2, jnp.float32))
    low, high = jnp.minimum(moved[:, :2], moved[:, 2:]), jnp.maximum(moved[:, :2], moved[:, 2:])
    return jnp.concatenate([low, high], axis=-1)


def error_click(key, predicted, targets):
    """A point uniformly inside each error region (predicted != target): ([n, 1, 2], [n, 1] int32), the
    label 1 on a false negative, 0 on a false positive, -1 (a padding point) where there is no error."""
    points, found = sample_pixels(key, predicted != targets)
    rows, cols = points[:, 1].astype(jnp.int32), points[:, 0].astype(jnp.int32)
    inside = targets[jnp.arange(targets.shape[0]), rows, cols]
    labels = jnp.where(found, jnp.where(inside, FOREGROUND, BACKGROUND), NOT_A_POINT)
    return points[:, None], labels[:, None].astype(jnp.int32)
