"""DINO's multi-crop views (Caron et al. 2021; SwAV's multi-crop), made on the device from a batch of images.

    views = multicrop.views(rng, images, Crops(global_size=28, local_size=12, local_crops=8))
    views.global_crops   # [2, batch, 28, 28, C]: two random resized crops of scale (0.4, 1) each
    views.local_crops    # [8, batch, 12, 12, C]: eight of scale (0.05, 0.4)

Each crop is torchvision's RandomResizedCrop (the official code's): an area fraction s ~ U(scale) and an
aspect ratio r with log r ~ U(log 3/4, log 4/3) give a box of integer sides round(sqrt(s A r)) x
round(sqrt(s A / r)); of 10 tries the first box that fits is placed at a uniform integer offset (none
fits: the whole image), then resized to the view's size, bilinear with antialiasing; then a horizontal
flip with probability 1/2 when `flip`. Every example and view draws its own box.

Why on the device, inside the objective, and not as tf.data ops: the draws come from the train step's
key (the step's `fold_in(seed, step)`), so the views of a step depend on the state and the batch alone
and a resumed run repeats an uninterrupted one exactly; the data pipeline, shared by every objective,
stays as it is, batches of one image size; and the crops cost a small resampling next to the ViT's
forward passes on every view. With `photometric` set, each view then gets the official pipeline's
photometric augmentations that mean something on grey images (vitjax/objectives/photometric.py:
brightness and contrast jitter, solarisation of the second global view), from the same draws.
Tests: `python -m pytest tests/objectives/test_multicrop.py`.
"""
import dataclasses
import math

import flax
import jax
import jax.numpy as jnp

from vitjax.objectives import photometric as photometric_lib

RATIO = (3 / 4, 4 / 3)
ATTEMPTS = 10  # torchvision's


@dataclasses.dataclass(frozen=True)
class Crops:
    global_size: int
    local_size: int
    local_crops: int
    global_scale: tuple[float, float] = (0.4, 1.0)
    local_scale: tuple[float, float] = (0.05, 0.4)
    flip: bool = True
    global_crops: int = 2  # the teacher's views; DINO's loss pairs each with every other view
    photometric: photometric_lib.Photometric | None = None


@flax.struct.dataclass
class Views:
    global_crops: jax.Array  # [global views, batch, g, g, C]
    local_crops: jax.Array | None  # [local views, batch, l, l, C], None without local crops


def crop_boxes(rng, batch: int, height: int, width: int, scale, ratio=RATIO):
    """(top, left, box height, box width), each int32 [batch]: torchvision's RandomResizedCrop.get_params,
    vectorised over the batch and its 10 tries."""
    return boxes_from(jax.random.uniform(rng, (batch, DRAWS)), height, width, scale, ratio)


# Uniform draws per example and view, all from one call: 10 area fractions, 10 log-ratios, the two
# offsets and the flip. (Each call of the random generator adds seconds to the step's compilation.)
DRAWS = 2 * ATTEMPTS + 3


def boxes_from(uniforms, height: int, width: int, scale, ratio=RATIO):
    """`crop_boxes` from uniform draws [batch, DRAWS] in [0, 1)."""
    area, log_ratio = uniforms[:, :ATTEMPTS], uniforms[:, ATTEMPTS:2 * ATTEMPTS]
    target = height * width * (scale[0] + (scale[1] - scale[0]) * area)
    aspect = jnp.exp(math.log(ratio[0]) + (math.log(ratio[1]) - math.log(ratio[0])) * log_ratio)
    box_w = jnp.round(jnp.sqrt(target * aspect)).astype(jnp.int32)
    box_h = jnp.round(jnp.sqrt(target / aspect)).astype(jnp.int32)
    fits = (box_w > 0) & (box_h > 0) & (box_w <= width) & (box_h <= height)
    first = jnp.argmax(fits, axis=1)[:, None]
    fallback_h, fallback_w = _central_fallback(height, width, ratio)
    found = jnp.any(fits, axis=1)
    box_h = jnp.where(found, jnp.take_along_axis(box_h, first, 1)[:, 0], fallback_h)
    box_w = jnp.where(found, jnp.take_along_axis(box_w, first, 1)[:, 0], fallback_w)
    # randint(0, H - h + 1): uniform integer offsets, the box inside the image.
    top = jnp.floor(uniforms[:, 2 * ATTEMPTS] * (height - box_h + 1)).astype(jnp.int32)
    left = jnp.floor(uniforms[:, 2 * ATTEMPTS + 1] * (width - box_w + 1)).astype(jnp.int32)
    fallback = ~found  # torchvision centres its fallback box
    top = jnp.where(fallback, (height - box_h) // 2, top)
    left = jnp.where(fallback, (width - box_w) // 2, left)
    return top, left, box_h, box_w


def _central_fallback(height: int, width: int, ratio):
    """torchvision's box when no try fits: the whole image, cut to the ratio range."""
    in_ratio = width / height
    if in_ratio < min(ratio):
        return int(round(width / min(ratio))), width
    if in_ratio > max(ratio):
        return height, int(round(height * max(ratio)))
    return height, width


def resized_crops(images, boxes, size: int):
    """[batch, size, size, C]: each image's box (top, left, h, w) resampled to size x size, bilinear with
    antialiasing; output pixel centres spread evenly over the box, as torchvision's resize of the crop."""
    def one(image, top, left, box_h, box_w):
        scale = jnp.stack([size / box_h, size / box_w]).astype(jnp.float32)
        translation = -jnp.stack([top, left]).astype(jnp.float32) * scale
        return jax.image.scale_and_translate(image, (size, size, image.shape[-1]), (0, 1), scale, translation,
                                             method="linear", antialias=True)

    return jax.vmap(one)(images.astype(jnp.float32), *boxes).astype(images.dtype)


def random_flips(rng, crops):
    """Each crop [batch, h, w, C] mirrored left-right with probability 1/2."""
    return _flipped(crops, jax.random.uniform(rng, (crops.shape[0],)) < 0.5)


def _flipped(crops, flip):
    return jnp.where(flip[:, None, None, None], crops[:, :, ::-1], crops)


def _views_of(rng, images, count: int, size: int, scale, flip: bool, photometric=None, solarize_probs=()):
    """[count, batch, size, size, C]: `count` independent random resized crops of every image, then with
    `photometric` its augmentations, view i solarised with probability solarize_probs[i] (0 past its end)."""
    batch, height, width = images.shape[:3]
    extra = photometric_lib.DRAWS if photometric else 0
    uniforms = jax.random.uniform(rng, (count, batch, DRAWS + extra))
    solarize = jnp.asarray([(solarize_probs[i] if i < len(solarize_probs) else 0.0) for i in range(count)])

    def one(draws, solarize_prob):
        crops = resized_crops(images, boxes_from(draws, height, width, scale), size)
        if flip:
            crops = _flipped(crops, draws[:, DRAWS - 1] < 0.5)
        if photometric:
            crops = photometric_lib.apply(draws[:, DRAWS:], crops, photometric, solarize_prob)
        return crops

    return jax.vmap(one)(uniforms, solarize)


def views(rng, images, crops: Crops) -> Views:
    """The global and local views of a batch [batch, H, W, C], drawn from `rng` alone."""
    global_key, local_key = jax.random.split(rng)
    photometric = crops.photometric
    global_crops = _views_of(global_key, images, crops.global_crops, crops.global_size, crops.global_scale,
                             crops.flip, photometric, photometric.solarize_probs if photometric else ())
    local_crops = None
    if crops.local_crops:
        local_crops = _views_of(local_key, images, crops.local_crops, crops.local_size, crops.local_scale,
                                crops.flip, photometric)
    return Views(global_crops, local_crops)
