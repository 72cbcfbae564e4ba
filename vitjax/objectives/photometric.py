"""DINO's photometric augmentations of its views (Caron et al. 2021, the official DataAugmentationDINO), for
grey images, on the device.

    crops = photometric.apply(draws, crops, Photometric(), solarize_prob=0.2)   # crops [batch, h, w, 1]

What the official pipeline does to each view after its random resized crop and flip, and what of it a
grey image keeps:
- colour jitter with probability 0.8: brightness 0.4, contrast 0.4, saturation 0.2 and hue 0.1 in a
  random order. Saturation and hue change nothing on a grey image, so brightness and contrast remain, in
  one of their two orders, each with a factor ~ U(0.6, 1.4);
- grey-scale conversion with probability 0.2: nothing to do on a grey image;
- Gaussian blur (probability 1.0 on the first global view, 0.1 on the second, 0.5 on local views) of
  radius ~ U(0.1, 2) pixels on 224- and 96-pixel views. Scaled to this package's 28- and 12-pixel views
  (x 1/8) the radius is 0.0125-0.25 pixels, which gives a neighbouring pixel a weight below 4e-4: an
  identity, so it is left out;
- solarisation with probability 0.2 on the second global view: pixels at or above 128 of 255 inverted.

Brightness and contrast follow torchvision's functional ops on pixels in [0, 1]: brightness multiplies
by its factor, contrast blends with the image's mean (f x + (1 - f) mean), each clipped to [0, 1]. The
official pipeline applies them to 8-bit images, rounding after each op; here they stay float. One
reason for the device: the draws come from the train step's key, so a resumed run repeats exactly.
Tests: `python -m pytest tests/objectives/test_photometric.py` (against torchvision's ops).
"""
import dataclasses

import jax.numpy as jnp

SOLARIZE_THRESHOLD = 128 / 255  # PIL's ImageOps.solarize(threshold=128), the official Solarization
# Uniform draws per example and view: jitter or not, brightness factor, contrast factor, order, solarise.
DRAWS = 5


@dataclasses.dataclass(frozen=True)
class Photometric:
    pixel_range: tuple[float, float] = (-1.0, 1.0)  # what pp_train maps pixels to
    jitter_prob: float = 0.8
    brightness: float = 0.4
    contrast: float = 0.4
    solarize_probs: tuple[float, ...] = (0.0, 0.2)  # per global view; local views are never solarised


def adjust_brightness(x, factor):
    """torchvision's adjust_brightness: x * factor clipped to [0, 1]; x [batch, h, w, C], factor [batch]."""
    return jnp.clip(x * factor[:, None, None, None], 0.0, 1.0)


def adjust_contrast(x, factor):
    """torchvision's adjust_contrast on grey images: blend with each image's mean, clipped to [0, 1]."""
    mean = jnp.mean(x, axis=(1, 2, 3), keepdims=True)
    factor = factor[:, None, None, None]
    return jnp.clip(factor * x + (1.0 - factor) * mean, 0.0, 1.0)


def solarize(x, apply):
    """Pixels at or above SOLARIZE_THRESHOLD inverted (1 - x) in the images where `apply` [batch] is true."""
    return jnp.where(apply[:, None, None, None] & (x >= SOLARIZE_THRESHOLD), 1.0 - x, x)


def apply(draws, crops, settings: Photometric, solarize_prob: float):
    """crops [batch, h, w, C] in settings.pixel_range, augmented by the uniform draws [batch, DRAWS]."""
    low, high = settings.pixel_range
    x = (crops.astype(jnp.float32) - low) / (high - low)
    brightness = 1.0 + settings.brightness * (2.0 * draws[:, 1] - 1.0)
    contrast = 1.0 + settings.contrast * (2.0 * draws[:, 2] - 1.0)
    brightness_first = adjust_contrast(adjust_brightness(x, brightness), contrast)
    contrast_first = adjust_brightness(adjust_contrast(x, contrast), brightness)
    jittered = jnp.where((draws[:, 3] < 0.5)[:, None, None, None], brightness_first, contrast_first)
    x = jnp.where((draws[:, 0] < settings.jitter_prob)[:, None, None, None], jittered, x)
    x = solarize(x, draws[:, 4] < solarize_prob)
    return (x * (high - low) + low).astype(crops.dtype)
