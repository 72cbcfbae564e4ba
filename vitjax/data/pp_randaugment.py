"""The `randaugment(n, m)` pp op: RandAugment (Cubuk et al. 2020), n transforms per image at magnitude m.

    pp_train = "randaugment(2, 9)|random_crop(28, pad=2)|flip_lr|value_range(-1, 1)"

Place it before `value_range`: the transforms (augment_ops.py) read pixels on the 0..255 scale, as PIL's do,
whether the images are uint8 or float; the output has the input's dtype (uint8 rounded), shape and range.
"""

import tensorflow as tf

from vitjax.data import augment_ops
from vitjax.data.errors import DataError
from vitjax.data.pp_ops import like_input
from vitjax.data.pp_registry import register

# Uniforms per layer: which transform, its sign, whether it applies (p), the magnitude's noise (mstd).
_PER_LAYER = 4


@register("randaugment")
def randaugment(n=2, m=9, *, ops=None, p=1.0, mstd=0.0, rotate=30.0, shear=0.3, translate=0.45, fill=0):
    """n layers; each picks one of `ops` uniformly per image and applies it with probability p at magnitude m.

    m is on the 0..10 scale (timm's, M of 10 levels): level m / 10 of each transform's full strength,
    with a random sign for those that have one (rotate left or right, brighter or darker); m=0 makes every
    transform that has a magnitude the identity. mstd > 0 adds Normal(0, mstd) noise to m per layer and
    image, clipped to 0..10 (timm's `mstd0.5`, which DeiT uses, with p=0.5). Full strengths: `rotate`
    degrees, `shear` (0.3: 17 degrees), `translate` of the image size (0.45, as AutoAugment's 150 of 331
    px), enhance factors 0.1..1.9, posterize to 4 bits, solarize at 0; uncovered pixels get `fill`.

    ops: None for the paper's 14 (augment_ops.TRANSFORMS: identity, auto_contrast, equalize, rotate,
    solarize, color, posterize, contrast, brightness, sharpness, shear_x, shear_y, translate_x,
    translate_y), or a tuple of their names. With ops=None, 'color' (saturation) is left out of the draw on
    1-channel images, where it is the identity and would only add a second 'identity'; named in `ops`, it
    stays (as the identity). Pixels go through bilinear interpolation in the geometric transforms.

    Each image's draws come from its own uniforms (4 per layer), so an image gets the same transforms in a
    batch as alone. Cost: each transform runs on just the images that drew it (dynamic_partition), so a
    layer costs about one transform per image, not fourteen.
    """
    where = f"randaugment({n!r}, {m!r})"
    names = _check(where, n, m, ops, p, mstd, (rotate, shear, translate, fill))
    strengths = augment_ops.Strengths(float(rotate), float(shear), float(translate), float(fill))

    def fn(images, u):
        drawn = names if ops is not None or images.shape[-1] != 1 else tuple(x for x in names if x != "color")
        x = tf.cast(images, tf.float32)
        for layer in range(n):
            x = _layer(x, u[:, _PER_LAYER * layer : _PER_LAYER * (layer + 1)], drawn, m, p, mstd, strengths)
        return like_input(tf.clip_by_value(x, 0, 255), images)

    fn.num_uniforms = _PER_LAYER * n
    return fn


def _check(where, n, m, ops, p, mstd, strengths):
    """The op names to draw from, after checking every argument (DataError naming the bad one)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise DataError(f"pp op {where}: n (transforms per image) must be an int >= 1, got {n!r}; e.g. 2.")
    if not isinstance(m, (int, float)) or not 0 <= m <= 10:
        raise DataError(f"pp op {where}: magnitude m must be in 0..10, got {m!r}; e.g. 9 (DeiT) or 5.")
    if not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise DataError(f"pp op {where}: p (chance each layer applies) must be in [0, 1], got {p!r}.")
    if not isinstance(mstd, (int, float)) or mstd < 0:
        raise DataError(f"pp op {where}: mstd (magnitude noise) must be >= 0, got {mstd!r}; 0: none.")
    if any(not isinstance(s, (int, float)) or s < 0 for s in strengths[:3]):
        raise DataError(f"pp op {where}: rotate, shear and translate must be >= 0, got {strengths[:3]!r}.")
    if ops is None:
        return tuple(augment_ops.TRANSFORMS)
    ops = (ops,) if isinstance(ops, str) else tuple(ops)
    unknown = [name for name in ops if name not in augment_ops.TRANSFORMS]
    if not ops or unknown:
        raise DataError(
            f"pp op {where}: ops={ops!r} names unknown transforms {unknown}; choose from "
            f"{', '.join(augment_ops.TRANSFORMS)}."
        )
    return ops


def _layer(x, u, names, m, p, mstd, strengths):
    """One RandAugment layer over float images x [b, H, W, C], from the layer's uniforms u [b, 4]."""
    choice = tf.cast(tf.minimum(tf.floor(u[:, 0] * len(names)), len(names) - 1), tf.int32)
    skip = u[:, 2] >= p
    choice = tf.where(skip, len(names), choice)  # partition len(names): images this layer leaves alone
    magnitude = tf.fill(tf.shape(u[:, 0]), float(m))
    if mstd > 0:
        noise = tf.math.ndtri(tf.clip_by_value(u[:, 3], 1e-6, 1 - 1e-6))  # uniform -> standard normal
        magnitude = tf.clip_by_value(magnitude + mstd * noise, 0, 10)
    level = tf.where(u[:, 1] < 0.5, -magnitude, magnitude) / 10
    parts = len(names) + 1
    images = tf.dynamic_partition(x, choice, parts)
    levels = tf.dynamic_partition(level, choice, parts)
    outs = [augment_ops.TRANSFORMS[name](images[i], levels[i], strengths) for i, name in enumerate(names)]
    positions = tf.dynamic_partition(tf.range(tf.shape(x)[0]), choice, parts)
    return tf.dynamic_stitch(positions, outs + [images[-1]])

