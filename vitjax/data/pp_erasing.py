"""The `random_erasing` pp op: Random Erasing (Zhong et al. 2020), one random box per image filled with noise.

    pp_train = "random_crop(28, pad=2)|flip_lr|random_erasing(0.25)|value_range(-1, 1)"

The per-pixel noise comes from a hash of the image's own uniforms and the pixel's index, not from a random
op: an op gets only its uniforms (preprocess.py), and a hash keeps the noise a function of them, so the same
image erases the same way in any batch, on any process, after any resume.
"""

import math

import tensorflow as tf

from vitjax.data.errors import DataError
from vitjax.data.pp_registry import register

FILLS = ("pixel", "zero")


@register("random_erasing")
def random_erasing(p=0.25, area=(0.02, 0.333), aspect=(0.3, 3.3), fill="pixel"):
    """With probability p per image, fills one box of `area` (a fraction of the image, uniform in the range)
    and height/width `aspect` (log-uniform in the range) with `fill`.

    fill='pixel' (DeiT's mode='pixel'): independent random values per pixel and channel, uniform over
    0..255 for uint8 images; for float images Normal(0, 1), as timm draws for the normalised images it
    erases (after value_range(-1, 1) that reaches past -1..1; erase uint8 images, before value_range, to
    keep the range). fill='zero': zeros (black before value_range, mid-grey after value_range(-1, 1)).
    A box of that area and aspect that would not fit has its aspect moved to the nearest that fits (the
    area is kept) rather than being redrawn, so every draw is used; sides are rounded to whole pixels.
    Defaults: DeiT's (p=0.25, area 2..33%, aspect 0.3..3.3).
    """
    where = f"random_erasing(p={p!r}, area={area!r}, aspect={aspect!r}, fill={fill!r})"
    _check(where, p, area, aspect, fill)
    log_lo, log_hi = math.log(aspect[0]), math.log(aspect[1])

    def fn(images, u):
        shape = tf.shape(images)
        h, w = tf.cast(shape[1], tf.float32), tf.cast(shape[2], tf.float32)
        frac = area[0] + u[:, 1] * (area[1] - area[0])
        # Aspects (height / width) at which a box of this area fits: frac h / w .. h / (frac w).
        ratio = tf.clip_by_value(tf.exp(log_lo + u[:, 2] * (log_hi - log_lo)), frac * h / w, h / (frac * w))
        box_h = tf.clip_by_value(tf.round(tf.sqrt(frac * h * w * ratio)), 1, h)
        box_w = tf.clip_by_value(tf.round(tf.sqrt(frac * h * w / ratio)), 1, w)
        top = tf.floor(u[:, 3] * (h - box_h + 1))
        left = tf.floor(u[:, 4] * (w - box_w + 1))
        rows = tf.range(h)[None, :]
        cols = tf.range(w)[None, :]
        in_rows = (rows >= top[:, None]) & (rows < (top + box_h)[:, None])
        in_cols = (cols >= left[:, None]) & (cols < (left + box_w)[:, None])
        box = in_rows[:, :, None] & in_cols[:, None, :] & (u[:, 0] < p)[:, None, None]
        return tf.where(box[..., None], _fill(images, u[:, 5:7], fill), images)

    fn.num_uniforms = 7  # coin, area, aspect, top, left, and two to key the noise
    return fn


def _check(where, p, area, aspect, fill):
    if not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise DataError(f"pp op {where}: p must be in [0, 1], got {p!r}; e.g. 0.25 (DeiT).")
    if not (_pair(area) and 0 < area[0] <= area[1] <= 1):
        raise DataError(f"pp op {where}: area must be (lo, hi) with 0 < lo <= hi <= 1, got {area!r}.")
    if not (_pair(aspect) and 0 < aspect[0] <= aspect[1]):
        raise DataError(f"pp op {where}: aspect must be (lo, hi) with 0 < lo <= hi, got {aspect!r}.")
    if fill not in FILLS:
        raise DataError(f"pp op {where}: fill must be one of {FILLS}, got {fill!r}.")


def _pair(value):
    return isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value)


def _fill(images, keys, fill):
    """What erased pixels become: zeros, or per-pixel noise keyed by two uniforms per image."""
    if fill == "zero":
        return tf.zeros_like(images)
    bits = hash_uniforms(keys, tf.shape(images)[1:])
    if images.dtype == tf.uint8:
        return tf.cast(_shift(bits, 24), tf.uint8)  # the top 8 bits: uniform over 0..255
    top24 = tf.cast(_shift(bits, 8), tf.float32)  # exact in float32; (n + 0.5) / 2^24 is never 0 or 1
    return tf.cast(tf.math.ndtri((top24 + 0.5) / 2**24), images.dtype)


def _mix(x):
    """A 32-bit integer hash (xorshift-multiply rounds) on uint32: nearby inputs give unrelated outputs."""
    x = _xor_shift(x, 16) * tf.constant(0x7FEB352D, tf.uint32)
    x = _xor_shift(x, 15) * tf.constant(0x846CA68B, tf.uint32)
    return _xor_shift(x, 16)


def _xor_shift(x, n):
    return tf.bitwise.bitwise_xor(x, _shift(x, n))


def _shift(x, n):
    return tf.bitwise.right_shift(x, tf.constant(n, tf.uint32))


def hash_uniforms(keys, shape):
    """uint32 [k, *shape] of well-mixed bits, a function of each image's keys (float32 [k, 2]) and the
    element's index alone."""
    key_bits = tf.bitcast(keys, tf.uint32)
    key = _mix(tf.bitwise.bitwise_xor(key_bits[:, 0], _mix(key_bits[:, 1])))
    index = tf.reshape(tf.range(tf.reduce_prod(shape), dtype=tf.int32), shape)
    index = _mix(tf.cast(index, tf.uint32))
    rank = tf.size(shape)
    key = tf.reshape(key, tf.concat([[-1], tf.ones([rank], tf.int32)], 0))
    return _mix(tf.bitwise.bitwise_xor(index[None], key))
