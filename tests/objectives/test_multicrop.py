"""DINO's multi-crop views: torchvision's box rule (inside the image, area and ratio in range, the fallback),
exact crops where no resampling is needed, flips, shapes, and draws fixed by the key alone."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax.objectives import multicrop

# Jitted: op by op, the vmapped resampling takes most of a minute on two cores.
_views = jax.jit(multicrop.views, static_argnums=2)
_resized_crops = jax.jit(multicrop.resized_crops, static_argnums=2)


@pytest.mark.parametrize("scale", [(0.05, 0.4), (0.4, 1.0)])
def test_boxes_lie_inside_the_image_with_their_area_and_ratio_in_range(scale):
    boxes = jax.jit(multicrop.crop_boxes, static_argnums=(1, 2, 3, 4))(jax.random.key(0), 4000, 28, 28, scale)
    top, left, h, w = (np.asarray(a) for a in boxes)
    assert (top >= 0).all() and (left >= 0).all() and (top + h <= 28).all() and (left + w <= 28).all()
    full = (h == 28) & (w == 28)  # the fallback, or a draw that took the whole image
    area = h * w / 28 ** 2
    # Sides are rounded to whole pixels: the area and ratio ranges hold up to that rounding.
    slack = (h + w + 1) / 28 ** 2
    assert ((area >= scale[0] - slack) & (area <= scale[1] + slack) | full).all()
    ratio = w / h
    assert ((ratio >= 3 / 4 * (1 - 1 / h) - 1e-9) & (ratio <= 4 / 3 * (1 + 1 / h) + 1e-9) | full).all()
    assert len(np.unique(np.stack([top, left, h, w]), axis=1).T) > 200  # many different boxes


def test_the_fallback_is_torchvisions_central_box():
    # Area fractions near 1 at extreme ratios never fit a 10x40 image's box: the fallback cuts it to 4/3.
    assert multicrop._central_fallback(10, 40, multicrop.RATIO) == (10, 13)
    assert multicrop._central_fallback(40, 10, multicrop.RATIO) == (13, 10)
    assert multicrop._central_fallback(28, 28, multicrop.RATIO) == (28, 28)


def test_a_crop_of_its_own_size_is_the_plain_slice_and_the_whole_box_is_a_resize():
    images = jax.random.normal(jax.random.key(1), (3, 28, 28, 2))
    boxes = tuple(jnp.asarray(v, jnp.int32) for v in ([0, 5, 16], [0, 9, 4], [12, 12, 12], [12, 12, 12]))
    crops = _resized_crops(images, boxes, 12)
    for i, (top, left) in enumerate([(0, 0), (5, 9), (16, 4)]):
        np.testing.assert_allclose(crops[i], images[i, top:top + 12, left:left + 12], atol=1e-5)
    whole = tuple(jnp.asarray(v, jnp.int32) for v in ([0] * 3, [0] * 3, [28] * 3, [28] * 3))
    np.testing.assert_allclose(_resized_crops(images, whole, 28), images, atol=1e-5)
    small = _resized_crops(images, whole, 14)
    np.testing.assert_allclose(small, jax.image.resize(images, (3, 14, 14, 2), "linear", antialias=True), atol=1e-5)


def test_flips_mirror_about_half_the_crops():
    crops = jax.random.normal(jax.random.key(2), (400, 4, 4, 1))
    flipped = jax.jit(multicrop.random_flips)(jax.random.key(3), crops)
    mirrored = np.all(np.asarray(flipped) == np.asarray(crops[:, :, ::-1]), axis=(1, 2, 3))
    same = np.all(np.asarray(flipped) == np.asarray(crops), axis=(1, 2, 3))
    assert (mirrored | same).all() and 150 < mirrored.sum() < 250


def test_views_have_their_shapes_and_depend_on_the_key_alone():
    images = jax.random.normal(jax.random.key(4), (5, 28, 28, 1))
    crops = multicrop.Crops(global_size=28, local_size=12, local_crops=6)
    views = _views(jax.random.key(7), images, crops)
    assert views.global_crops.shape == (2, 5, 28, 28, 1) and views.local_crops.shape == (6, 5, 12, 12, 1)
    again = _views(jax.random.key(7), images, crops)
    np.testing.assert_array_equal(again.local_crops, views.local_crops)
    other = _views(jax.random.key(8), images, crops)
    assert not np.allclose(other.global_crops, views.global_crops)
    assert not np.allclose(views.global_crops[0], views.global_crops[1])  # each view its own draw
    assert _views(jax.random.key(7), images, multicrop.Crops(28, 12, 0)).local_crops is None
    assert math.isclose(float(jnp.mean(views.global_crops)), float(jnp.mean(images)), abs_tol=0.2)
