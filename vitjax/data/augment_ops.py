"""The image transforms RandAugment draws from (Cubuk et al. 2020), each on a batch with one level per image.

Every transform is `fn(x, level, cfg) -> x`: x is float32 [k, H, W, C] with pixel values on the 0..255 scale
(uint8 images cast, as PIL's ops see them), level is float32 [k] in [-1, 1] (the magnitude M / 10 with a
random sign), cfg the op's `Strengths`. Level 0 is the identity for every transform that has a magnitude;
for the sign-less ones (posterize, solarize) only |level| counts. Results stay float and are not rounded:
pp_randaugment.py rounds once at the end. Written batched with per-image parameters so that one call
handles any number of images of one size; pp_randaugment.py routes each image to the transform it drew.
"""

import dataclasses
import math

import tensorflow as tf

_LUMA = (0.299, 0.587, 0.114)  # ITU-R 601, what PIL's convert('L') uses for colour/contrast


@dataclasses.dataclass(frozen=True)
class Strengths:
    """What level +-1 (magnitude 10) means for the geometric transforms, and the fill for uncovered pixels."""

    rotate: float = 30.0  # degrees
    shear: float = 0.3  # horizontal (vertical) offset per pixel of height (width)
    translate: float = 0.45  # fraction of the image's width (height)
    fill: float = 0.0  # pixel value where a geometric transform uncovers the image


def _affine(x, level, cfg, matrix):
    """Projective warp of each image; `matrix(level, h, w)` gives [k, 8] maps from output to input pixels."""
    shape = tf.shape(x)
    h, w = tf.cast(shape[1], tf.float32), tf.cast(shape[2], tf.float32)
    return tf.raw_ops.ImageProjectiveTransformV3(
        images=x,
        transforms=matrix(level, h, w),
        output_shape=shape[1:3],
        fill_value=tf.constant(cfg.fill, tf.float32),
        interpolation="BILINEAR",
        fill_mode="CONSTANT",
    )


def _rows(*columns):
    """[k, 8] transforms from 8 columns, each a [k] tensor or a number."""
    k = tf.shape(next(c for c in columns if isinstance(c, tf.Tensor)))[0]
    return tf.stack([c if isinstance(c, tf.Tensor) else tf.fill([k], float(c)) for c in columns], axis=1)


def rotate(x, level, cfg):
    """Counter-clockwise as displayed (row 0 at the top) about the image centre, by level * cfg.rotate degrees."""

    def matrix(level, h, w):
        t = level * (cfg.rotate * math.pi / 180)
        cos, sin = tf.cos(t), tf.sin(t)
        cx, cy = (w - 1) / 2, (h - 1) / 2  # pixel centres, so 90 degrees maps pixels onto pixels
        return _rows(cos, -sin, cx - cos * cx + sin * cy, sin, cos, cy - sin * cx - cos * cy, 0, 0)

    return _affine(x, level, cfg, matrix)


def shear_x(x, level, cfg):
    """Rows slide sideways in proportion to their distance from the centre row (the centre stays put)."""
    matrix = lambda level, h, w: _rows(1, level * cfg.shear, -level * cfg.shear * (h - 1) / 2, 0, 1, 0, 0, 0)
    return _affine(x, level, cfg, matrix)


def shear_y(x, level, cfg):
    matrix = lambda level, h, w: _rows(1, 0, 0, level * cfg.shear, 1, -level * cfg.shear * (w - 1) / 2, 0, 0)
    return _affine(x, level, cfg, matrix)


def translate_x(x, level, cfg):
    """Content moves right by level * cfg.translate of the width (left for level < 0)."""
    matrix = lambda level, h, w: _rows(1, 0, -level * cfg.translate * w, 0, 1, 0, 0, 0)
    return _affine(x, level, cfg, matrix)


def translate_y(x, level, cfg):
    matrix = lambda level, h, w: _rows(1, 0, 0, 0, 1, -level * cfg.translate * h, 0, 0)
    return _affine(x, level, cfg, matrix)


def identity(x, level, cfg):
    del level, cfg
    return x


def _per_image(level):
    return level[:, None, None, None]


def _grey(x):
    """[k, H, W, 1] luminance: luma weights for 3 channels, the channel mean for any other count."""
    if x.shape[-1] == 3:
        return tf.reduce_sum(x * tf.constant(_LUMA), axis=-1, keepdims=True)
    return tf.reduce_mean(x, axis=-1, keepdims=True)


def _blend(base, x, level):
    """base + f (x - base) with f = 1 + 0.9 level (0.1..1.9): PIL's ImageEnhance factor, signed as in timm."""
    return base + _per_image(1 + 0.9 * level) * (x - base)


def color(x, level, cfg):
    """Saturation: towards (level < 0) or away from the grey image. The identity on 1 channel."""
    del cfg
    return _blend(_grey(x), x, level)


def contrast(x, level, cfg):
    """Towards or away from each image's mean grey level."""
    del cfg
    return _blend(tf.reduce_mean(_grey(x), axis=[1, 2, 3], keepdims=True), x, level)


def brightness(x, level, cfg):
    """Towards black, or brighter."""
    del cfg
    return _blend(tf.zeros_like(x), x, level)


def sharpness(x, level, cfg):
    """Away from (level > 0) or towards a 3x3 smoothed image; border pixels, which the kernel overhangs,
    are left as they are (as PIL does)."""
    del cfg
    kernel = tf.constant([[1, 1, 1], [1, 5, 1], [1, 1, 1]], tf.float32) / 13
    channels = tf.shape(x)[3]
    kernel = tf.tile(kernel[:, :, None, None], [1, 1, channels, 1])
    smooth = tf.nn.depthwise_conv2d(x, kernel, strides=[1, 1, 1, 1], padding="SAME")  # border: masked below
    shape = tf.shape(x)
    interior = tf.pad(tf.ones([shape[1] - 2, shape[2] - 2]), [[1, 1], [1, 1]])[None, :, :, None] > 0
    return tf.where(interior, _blend(smooth, x, level), x)


def posterize(x, level, cfg):
    """Keeps the top 8 - round(4 |level|) bits of each pixel (8 at level 0: the identity; 4 at magnitude 10)."""
    del cfg
    step = _per_image(tf.pow(2.0, tf.round(4 * tf.abs(level))))
    return tf.where(step > 1, tf.floor(x / step) * step, x)


def solarize(x, level, cfg):
    """Inverts pixels at or above 256 (1 - |level|): none at level 0, all at magnitude 10."""
    del cfg
    return tf.where(x >= _per_image(256 * (1 - tf.abs(level))), 255 - x, x)


def auto_contrast(x, level, cfg):
    """Stretches each image's channels to 0..255; a flat channel stays as it is. No magnitude."""
    del level, cfg
    lo = tf.reduce_min(x, axis=[1, 2], keepdims=True)
    hi = tf.reduce_max(x, axis=[1, 2], keepdims=True)
    flat = hi <= lo
    return tf.where(flat, x, (x - lo) * 255 / tf.where(flat, 1.0, hi - lo))


def equalize(x, level, cfg):
    """Histogram equalisation of each image's channels over 256 levels (PIL's rule: the last occupied level
    is left out of the step; a channel with one level stays as it is). No magnitude."""
    del level, cfg
    shape = tf.shape(x)
    k, h, w, c = shape[0], shape[1], shape[2], shape[3]
    levels = tf.cast(tf.clip_by_value(tf.round(x), 0, 255), tf.int32)
    per_channel = tf.reshape(tf.transpose(levels, [0, 3, 1, 2]), [k * c, h * w])
    hist = tf.math.bincount(per_channel, minlength=256, maxlength=256, axis=-1)
    last = tf.gather(hist, 255 - tf.argmax(tf.reverse(hist, [1]) > 0, axis=1, output_type=tf.int32), batch_dims=1)
    step = (h * w - last) // 255
    safe = tf.maximum(step, 1)[:, None]
    lut = tf.minimum((tf.cumsum(hist, axis=1, exclusive=True) + safe // 2) // safe, 255)
    out = tf.gather(lut, per_channel, batch_dims=1)
    out = tf.where((step > 0)[:, None], out, per_channel)
    return tf.cast(tf.transpose(tf.reshape(out, [k, c, h, w]), [0, 2, 3, 1]), tf.float32)


# The paper's 14 transforms, in its order. Name -> fn.
TRANSFORMS = {
    "identity": identity,
    "auto_contrast": auto_contrast,
    "equalize": equalize,
    "rotate": rotate,
    "solarize": solarize,
    "color": color,
    "posterize": posterize,
    "contrast": contrast,
    "brightness": brightness,
    "sharpness": sharpness,
    "shear_x": shear_x,
    "shear_y": shear_y,
    "translate_x": translate_x,
    "translate_y": translate_y,
}
