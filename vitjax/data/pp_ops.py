"""The preprocessing ops: the registry pp strings find them in, and every built-in op, written for batches
(see preprocess.py for the calling convention).

Built-in ops: decode, resize, random_crop, central_crop, inception_crop, flip_lr, value_range, to_rgb;
randaugment(n, m, ops=None, p=1.0, mstd=0.0, rotate=30, shear=0.3, translate=0.45, fill=0) and the
transforms it draws from; random_erasing(p=0.25, area=(0.02, 0.333), aspect=(0.3, 3.3), fill='pixel'|'zero').
Batch-level Mixup/CutMix are data config keys, not ops (mixing.py).

Each factory checks its own arguments when built, and what it needs of the image size when traced (static
shapes are known then), so mistakes surface as DataErrors before training rather than as TF errors mid-run.
Images stay uint8 until `value_range`; ops that interpolate round back to the input dtype so that
`value_range` always sees 0..255. Random ops turn their per-image uniforms `u` into crop offsets, coin
flips and so on; they never call a random op themselves.

The registry lives here, below the parser (preprocess.py), so that the ops register themselves as they are
defined and the parser imports them, with neither importing the other in a circle.
"""

import dataclasses
import math

import tensorflow as tf

from vitjax.data.config import DataError

_FACTORIES = {}  # pp op name -> its factory


def register(name):
    """Decorator: makes the op factory findable as `name` in pp strings."""

    def add(factory):
        if name in _FACTORIES:
            raise ValueError(f"pp op {name!r} is registered twice.")
        _FACTORIES[name] = factory
        return factory

    return add


def names() -> list[str]:
    return sorted(_FACTORIES)


def factory(name):
    """The factory registered as `name`, or None."""
    return _FACTORIES.get(name)


def _hw(size, op):
    """An int or an (h, w) pair -> (h, w), positive."""
    h, w = (size, size) if isinstance(size, int) else tuple(size)
    if not (isinstance(h, int) and isinstance(w, int) and h > 0 and w > 0):
        raise DataError(f"pp op {op}: size must be a positive int or (h, w), got {size!r}.")
    return h, w


def _check_fits(images, h, w, op):
    """Static check (at trace time) that images of known size can hold an h x w crop."""
    ih, iw = images.shape[1], images.shape[2]
    if (ih is not None and ih < h) or (iw is not None and iw < w):
        raise DataError(f"pp op {op}: crop {h}x{w} is larger than the image {ih}x{iw}; resize first.")


def like_input(resized, images):
    """Interpolated float output -> the input's dtype (rounded and clipped for uint8); the other
    augmentation ops (randaugment, random_erasing) return their results through it too."""
    if images.dtype == tf.uint8:
        return tf.cast(tf.clip_by_value(tf.round(resized), 0, 255), tf.uint8)
    return tf.cast(resized, images.dtype)


def _crop(images, top, left, h, w):
    """Per-image windows: images[i, top[i]:top[i]+h, left[i]:left[i]+w] for int32 [b] offsets."""
    rows = top[:, None] + tf.range(h)[None]
    cols = left[:, None] + tf.range(w)[None]
    images = tf.gather(images, rows, axis=1, batch_dims=1)
    return tf.gather(images, cols, axis=2, batch_dims=1)


def _randint(u, high):
    """Uniform ints in [0, high) from uniforms u in [0, 1)."""
    high = tf.cast(high, tf.float32)
    return tf.cast(tf.minimum(tf.floor(u * high), high - 1), tf.int32)


@register("decode")
def decode(channels=3):
    """Encoded PNG/JPEG/GIF/BMP bytes [b] -> uint8 [b, H, W, channels]; decoded images pass through.

    The pipeline already decodes encoded sources, so in a pp string this is accepted for compatibility.
    """

    def fn(images, u):
        del u
        if images.dtype != tf.string:
            return images
        decode_one = lambda x: tf.io.decode_image(x, channels=channels, expand_animations=False)
        return tf.map_fn(
            decode_one, images, fn_output_signature=tf.TensorSpec([None, None, channels], tf.uint8)
        )

    return fn


@register("resize")
def resize(size, method="bilinear"):
    h, w = _hw(size, f"resize({size!r})")

    def fn(images, u):
        del u
        # antialias: downscaling without it aliases badly (e.g. ImageNet -> 32 px).
        return like_input(tf.image.resize(images, (h, w), method=method, antialias=True), images)

    return fn


@register("random_crop")
def random_crop(size, pad=0):
    """Zero-pads `pad` pixels on every side, then crops a uniformly placed h x w window (CIFAR-style)."""
    h, w = _hw(size, f"random_crop({size!r})")
    if not isinstance(pad, int) or pad < 0:
        raise DataError(f"pp op random_crop: pad must be an int >= 0, got {pad!r}.")

    def fn(images, u):
        if pad:
            images = tf.pad(images, [[0, 0], [pad, pad], [pad, pad], [0, 0]])
        _check_fits(images, h, w, f"random_crop({size!r}, pad={pad})")
        shape = tf.shape(images)
        return _crop(images, _randint(u[:, 0], shape[1] - h + 1), _randint(u[:, 1], shape[2] - w + 1), h, w)

    return fn


@register("central_crop")
def central_crop(size):
    h, w = _hw(size, f"central_crop({size!r})")

    def fn(images, u):
        del u
        _check_fits(images, h, w, f"central_crop({size!r})")
        top = (tf.shape(images)[1] - h) // 2
        left = (tf.shape(images)[2] - w) // 2
        return images[:, top : top + h, left : left + w]

    return fn


@register("inception_crop")
def inception_crop(size, area_min=5, area_max=100):
    """Random window covering area_min..area_max % of the image, aspect ratio 3/4..4/3 (log-uniform), resized
    to `size`. Windows that would not fit are clipped to the image (rather than redrawn)."""
    h, w = _hw(size, f"inception_crop({size!r})")
    if not 0 < area_min <= area_max <= 100:
        raise DataError(
            f"pp op inception_crop: need 0 < area_min <= area_max <= 100, got {area_min}, {area_max}."
        )
    log_lo, log_hi = math.log(3 / 4), math.log(4 / 3)

    def fn(images, u):
        area = (area_min + u[:, 0] * (area_max - area_min)) / 100
        aspect = tf.exp(log_lo + u[:, 1] * (log_hi - log_lo))  # width / height, in pixels.
        shape = tf.cast(tf.shape(images), tf.float32)
        ih, iw = shape[1], shape[2]
        # As fractions of the image's height and width.
        crop_h = tf.minimum(tf.sqrt(area * iw / (aspect * ih)), 1.0)
        crop_w = tf.minimum(tf.sqrt(area * aspect * ih / iw), 1.0)
        top = u[:, 2] * (1 - crop_h)
        left = u[:, 3] * (1 - crop_w)
        boxes = tf.stack([top, left, top + crop_h, left + crop_w], axis=1)
        out = tf.image.crop_and_resize(
            tf.cast(images, tf.float32), boxes, tf.range(tf.shape(images)[0]), (h, w)
        )
        return like_input(out, images)

    return fn


@register("flip_lr")
def flip_lr():
    def fn(images, u):
        return tf.where((u[:, 0] < 0.5)[:, None, None, None], tf.reverse(images, axis=[2]), images)

    return fn


@register("value_range")
def value_range(lo=-1.0, hi=1.0, in_min=0, in_max=255):
    """Maps in_min..in_max (uint8 0..255 by default) linearly to lo..hi as float32."""
    if in_max <= in_min:
        raise DataError(f"pp op value_range: need in_min < in_max, got {in_min}, {in_max}.")

    def fn(images, u):
        del u
        x = (tf.cast(images, tf.float32) - in_min) / (in_max - in_min)
        return x * (hi - lo) + lo

    return fn


@register("to_rgb")
def to_rgb():
    """Grayscale [.., 1] -> [.., 3] by repeating the channel; RGB passes through."""

    def fn(images, u):
        del u
        channels = images.shape[3]
        if channels == 3:
            return images
        if channels != 1:
            raise DataError(f"pp op to_rgb: expected 1 or 3 channels, got {channels}.")
        return tf.image.grayscale_to_rgb(images)

    return fn


# The image transforms RandAugment draws from (Cubuk et al. 2020), each on a batch with one level per image.
#
# Every transform is `fn(x, level, cfg) -> x`: x is float32 [k, H, W, C] with pixel values on the 0..255
# scale (uint8 images cast, as PIL's ops see them), level is float32 [k] in [-1, 1] (the magnitude M / 10
# with a random sign), cfg the op's `Strengths`. Level 0 is the identity for every transform that has a
# magnitude; for the sign-less ones (posterize, solarize) only |level| counts. Results stay float and are
# not rounded: the randaugment op rounds once at the end. Written batched with per-image parameters so that
# one call handles any number of images of one size; the randaugment op routes each image to the transform
# it drew.

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


# The `randaugment(n, m)` pp op: RandAugment (Cubuk et al. 2020), n transforms per image at magnitude m.
#
#     pp_train = "randaugment(2, 9)|random_crop(28, pad=2)|flip_lr|value_range(-1, 1)"
#
# Place it before `value_range`: the transforms (above) read pixels on the 0..255 scale, as PIL's do,
# whether the images are uint8 or float; the output has the input's dtype (uint8 rounded), shape and range.

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

    ops: None for the paper's 14 (TRANSFORMS: identity, auto_contrast, equalize, rotate,
    solarize, color, posterize, contrast, brightness, sharpness, shear_x, shear_y, translate_x,
    translate_y), or a tuple of their names. With ops=None, 'color' (saturation) is left out of the draw on
    1-channel images, where it is the identity and would only add a second 'identity'; named in `ops`, it
    stays (as the identity). Pixels go through bilinear interpolation in the geometric transforms.

    Each image's draws come from its own uniforms (4 per layer), so an image gets the same transforms in a
    batch as alone. Cost: each transform runs on just the images that drew it (dynamic_partition), so a
    layer costs about one transform per image, not fourteen.
    """
    where = f"randaugment({n!r}, {m!r})"
    names = _check_randaugment(where, n, m, ops, p, mstd, (rotate, shear, translate, fill))
    strengths = Strengths(float(rotate), float(shear), float(translate), float(fill))

    def fn(images, u):
        drawn = names if ops is not None or images.shape[-1] != 1 else tuple(x for x in names if x != "color")
        x = tf.cast(images, tf.float32)
        for layer in range(n):
            x = _layer(x, u[:, _PER_LAYER * layer : _PER_LAYER * (layer + 1)], drawn, m, p, mstd, strengths)
        return like_input(tf.clip_by_value(x, 0, 255), images)

    fn.num_uniforms = _PER_LAYER * n
    return fn


def _check_randaugment(where, n, m, ops, p, mstd, strengths):
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
        return tuple(TRANSFORMS)
    ops = (ops,) if isinstance(ops, str) else tuple(ops)
    unknown = [name for name in ops if name not in TRANSFORMS]
    if not ops or unknown:
        raise DataError(
            f"pp op {where}: ops={ops!r} names unknown transforms {unknown}; choose from "
            f"{', '.join(TRANSFORMS)}."
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
    outs = [TRANSFORMS[name](images[i], levels[i], strengths) for i, name in enumerate(names)]
    positions = tf.dynamic_partition(tf.range(tf.shape(x)[0]), choice, parts)
    return tf.dynamic_stitch(positions, outs + [images[-1]])


# The `random_erasing` pp op: Random Erasing (Zhong et al. 2020), one random box per image filled with noise.
#
#     pp_train = "random_crop(28, pad=2)|flip_lr|random_erasing(0.25)|value_range(-1, 1)"
#
# The per-pixel noise comes from a hash of the image's own uniforms and the pixel's index, not from a random
# op: an op gets only its uniforms (preprocess.py), and a hash keeps the noise a function of them, so the
# same image erases the same way in any batch, on any process, after any resume.

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
    _check_erasing(where, p, area, aspect, fill)
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


def _check_erasing(where, p, area, aspect, fill):
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
