"""The built-in preprocessing ops, written for batches (see preprocess.py for the calling convention).

Each factory checks its own arguments when built, and what it needs of the image size when traced (static
shapes are known then), so mistakes surface as DataErrors before training rather than as TF errors mid-run.
Images stay uint8 until `value_range`; ops that interpolate round back to the input dtype so that
`value_range` always sees 0..255. Random ops turn their per-image uniforms `u` into crop offsets, coin
flips and so on; they never call a random op themselves.
"""

import math

import tensorflow as tf

from vitjax.data.errors import DataError
from vitjax.data.pp_registry import register


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
    augmentation ops (pp_randaugment.py, pp_erasing.py) return their results through it too."""
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
