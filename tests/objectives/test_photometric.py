"""DINO's photometric augmentations (vitjax/objectives/photometric.py) against torchvision's functional ops,
their draws (order, probabilities), and which views get them (solarisation: the second global view only)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from torchvision.transforms import functional as TF

from vitjax.objectives import multicrop, photometric

_rng = np.random.default_rng(0)


def _grey(batch=6, size=9):
    """Pixels in [0, 1] with both halves of the solarisation threshold represented."""
    return _rng.uniform(0, 1, size=(batch, size, size, 1)).astype(np.float32)


def _torch(x):
    return torch.from_numpy(np.moveaxis(x, -1, 1).copy())  # NHWC -> NCHW


def _back(t):
    return np.moveaxis(t.numpy(), 1, -1)


def test_brightness_contrast_and_solarize_are_torchvisions():
    x, factors = _grey(), np.linspace(0.6, 1.4, 6).astype(np.float32)
    bright = [TF.adjust_brightness(_torch(x[i:i + 1]), float(f)) for i, f in enumerate(factors)]
    contrast = [TF.adjust_contrast(_torch(x[i:i + 1]), float(f)) for i, f in enumerate(factors)]
    np.testing.assert_allclose(photometric.adjust_brightness(x, factors), _back(torch.cat(bright)), atol=1e-6)
    np.testing.assert_allclose(photometric.adjust_contrast(x, factors), _back(torch.cat(contrast)), atol=1e-6)
    on = np.array([True, False] * 3)
    expected = [TF.solarize(_torch(x[i:i + 1]), 128 / 255) if on[i] else _torch(x[i:i + 1]) for i in range(6)]
    np.testing.assert_allclose(photometric.solarize(x, on), _back(torch.cat(expected)), atol=0)


def _draws(jitter, brightness, contrast, order, solar):
    return jnp.asarray([[jitter, brightness, contrast, order, solar]], jnp.float32)


@pytest.mark.parametrize("order", [0.2, 0.7])  # < 0.5: brightness first
def test_a_jittered_view_is_both_ops_in_the_drawn_order_in_the_pixel_range(order):
    x = _grey(batch=1)
    settings = photometric.Photometric(pixel_range=(-1.0, 1.0))
    # Draws 0.75 and 0.125 give factors 1 + 0.4 * 0.5 = 1.2 and 1 + 0.4 * (-0.75) = 0.7.
    out = photometric.apply(_draws(0.1, 0.75, 0.125, order, 0.9), jnp.asarray(2 * x - 1), settings, 0.2)
    t = _torch(x)
    if order < 0.5:
        expected = TF.adjust_contrast(TF.adjust_brightness(t, 1.2), 0.7)
    else:
        expected = TF.adjust_brightness(TF.adjust_contrast(t, 0.7), 1.2)
    np.testing.assert_allclose((np.asarray(out) + 1) / 2, _back(expected), atol=1e-6)
    assert not np.allclose(out, 2 * x - 1)


def test_without_jitter_or_solarisation_a_view_is_unchanged_and_solarisation_follows_its_probability():
    x = jnp.asarray(2 * _grey(batch=1) - 1)
    settings = photometric.Photometric()
    np.testing.assert_allclose(photometric.apply(_draws(0.9, 0.75, 0.1, 0.3, 0.5), x, settings, 0.2), x, atol=1e-6)
    solarised = photometric.apply(_draws(0.9, 0.75, 0.1, 0.3, 0.1), x, settings, 0.2)
    expected = TF.solarize(_torch((np.asarray(x) + 1) / 2), 128 / 255)
    np.testing.assert_allclose((np.asarray(solarised) + 1) / 2, _back(expected), atol=1e-6)


def test_jitter_probability_over_many_draws():
    x = jnp.asarray(np.repeat(2 * _grey(batch=1) - 1, 4000, axis=0))
    draws = jax.random.uniform(jax.random.key(0), (4000, photometric.DRAWS))
    out = jax.jit(photometric.apply, static_argnums=2)(draws, x, photometric.Photometric(), 0.0)
    changed = np.abs(np.asarray(out) - np.asarray(x)).max(axis=(1, 2, 3)) > 1e-6
    # Binomial(4000, 0.8): sd 0.0063. A factor drawn near 1 may leave a view (almost) unchanged: rarely.
    assert 0.77 < changed.mean() <= 0.8 + 0.02


def test_only_the_second_global_view_is_solarised():
    images = jnp.asarray(2 * _grey(batch=16, size=28) - 1)
    settings = photometric.Photometric(jitter_prob=0.0, solarize_probs=(0.0, 1.0))
    crops = multicrop.Crops(global_size=28, local_size=12, local_crops=3, flip=False, photometric=settings)
    views = jax.jit(multicrop.views, static_argnums=2)(jax.random.key(3), images, crops)
    at_or_above = lambda v: ((np.asarray(v) + 1) / 2 >= 128 / 255 - 1e-6).any(axis=(-3, -2, -1))  # noqa: E731
    assert at_or_above(views.global_crops[0]).all() and at_or_above(views.local_crops).all()
    assert not at_or_above(views.global_crops[1]).any()  # every bright pixel inverted
