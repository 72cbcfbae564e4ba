"""Preprocessing ops: shapes, value ranges, randomness from the given uniforms, and errors."""

import numpy as np
import pytest
import tensorflow as tf

from vitjax import data
from vitjax.data.preprocess import UNIFORMS_PER_OP, Preprocess

IMAGES = np.random.default_rng(0).integers(0, 256, (5, 12, 10, 3)).astype(np.uint8)


def run(pp, images=IMAGES, seed=0):
    ops = Preprocess(pp)
    u = np.random.default_rng(seed).random((len(images), ops.num_ops, UNIFORMS_PER_OP), dtype=np.float32)
    return ops(tf.constant(images), tf.constant(u)).numpy()


@pytest.mark.parametrize(
    "pp, shape",
    [
        ("resize(6)", (6, 6, 3)),
        ("resize((4, 8))", (4, 8, 3)),
        ("random_crop(8)", (8, 8, 3)),
        ("random_crop(12, pad=4)", (12, 12, 3)),
        ("central_crop(4)", (4, 4, 3)),
        ("inception_crop(7)", (7, 7, 3)),
        ("flip_lr", (12, 10, 3)),
        ("decode|value_range(-1, 1)", (12, 10, 3)),
        ("", (12, 10, 3)),
    ],
)
def test_shapes_and_uint8_kept_until_value_range(pp, shape):
    out = run(pp)
    assert out.shape == (5, *shape)
    assert out.dtype == (np.float32 if "value_range" in pp else np.uint8)
    assert Preprocess(pp).output_spec((12, 10, 3))[0] == shape


def test_value_range_and_to_rgb():
    out = run("value_range(-1, 1)", np.array([0, 255], np.uint8).reshape(2, 1, 1, 1))
    np.testing.assert_allclose(out.ravel(), [-1, 1])
    gray = run("to_rgb", IMAGES[..., :1])
    assert gray.shape == (5, 12, 10, 3) and (gray == IMAGES[..., :1]).all()


def test_crops_take_the_right_windows():
    np.testing.assert_array_equal(run("central_crop(4)"), IMAGES[:, 4:8, 3:7])
    ops = Preprocess("random_crop(8, pad=2)")
    u = np.zeros((5, 1, UNIFORMS_PER_OP), np.float32)
    u[:, 0, 0] = [0, 0.99, 0.5, 0, 0]  # Row offsets 0, 8, 4 (of 16 - 8 + 1 = 9 choices).
    out = ops(tf.constant(IMAGES), tf.constant(u)).numpy()
    padded = np.pad(IMAGES, [(0, 0), (2, 2), (2, 2), (0, 0)])
    for i, top in enumerate([0, 8, 4, 0, 0]):
        np.testing.assert_array_equal(out[i], padded[i, top : top + 8, 0:8])


def test_flip_follows_its_uniforms():
    ops = Preprocess("flip_lr")
    u = np.array([0.1, 0.9, 0.4, 0.6, 0.0], np.float32)[:, None, None].repeat(UNIFORMS_PER_OP, 2)
    out = ops(tf.constant(IMAGES), tf.constant(u)).numpy()
    for i, flipped in enumerate([True, False, True, False, True]):
        np.testing.assert_array_equal(out[i], IMAGES[i, :, ::-1] if flipped else IMAGES[i])


def test_inception_crop_windows_follow_their_uniforms_and_stay_in_range():
    """Each image's pixels hold their own (row, column), so the output shows the window it sampled.

    crop_and_resize samples bilinearly, which reproduces a linear ramp exactly: output row 0 holds the
    window's top, the last row its bottom (in pixel-centre coordinates, 0..H-1). The expected windows
    follow the op's stated rule, from its uniforms: area (5 + 95 u0)% of the image (area_min=5,
    area_max=100), aspect w/h = exp(log 3/4 + u1 log 16/9) in pixels, each side clipped to the image,
    top = u2 (1 - h), left = u3 (1 - w) as fractions of the image.
    """
    n, height, width, out = 300, 40, 30, 5
    rows, cols = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    images = np.broadcast_to(np.stack([rows, cols], -1).astype(np.float32), (n, height, width, 2))
    u = np.random.default_rng(0).random((n, 1, UNIFORMS_PER_OP), dtype=np.float32)
    got = Preprocess(f"inception_crop({out})")(tf.constant(images), tf.constant(u)).numpy()
    assert got.shape == (n, out, out, 2)
    # The window each image got, as fractions of the image (sampling spans H - 1 pixel centres).
    top, bottom = got[:, 0, 0, 0] / (height - 1), got[:, -1, 0, 0] / (height - 1)
    left, right = got[:, 0, 0, 1] / (width - 1), got[:, 0, -1, 1] / (width - 1)
    h, w = bottom - top, right - left

    # In range: inside the image; area 5..100% (less only where a side was clipped to the whole image);
    # aspect 3/4..4/3 in pixels, unless clipped.
    assert (top >= -1e-6).all() and (bottom <= 1 + 1e-6).all() and (left >= -1e-6).all() and (right <= 1 + 1e-6).all()
    clipped = (h > 1 - 1e-5) | (w > 1 - 1e-5)
    area, aspect = h * w, (w * width) / (h * height)
    assert (area[~clipped] >= 0.05 - 1e-5).all() and (area <= 1 + 1e-5).all()
    assert (aspect[~clipped] >= 3 / 4 - 1e-4).all() and (aspect[~clipped] <= 4 / 3 + 1e-4).all()
    assert 0.2 < clipped.mean() < 0.8 and area.min() < 0.1  # the draws cover clipped and small windows

    # Exactly the windows the uniforms ask for.
    u = u[:, 0].astype(np.float64)
    want_area = (5 + 95 * u[:, 0]) / 100
    want_aspect = np.exp(np.log(3 / 4) + u[:, 1] * np.log(16 / 9))
    want_h = np.minimum(np.sqrt(want_area * width / (want_aspect * height)), 1)
    want_w = np.minimum(np.sqrt(want_area * want_aspect * height / width), 1)
    np.testing.assert_allclose(top, u[:, 2] * (1 - want_h), atol=1e-5)
    np.testing.assert_allclose(h, want_h, atol=1e-5)
    np.testing.assert_allclose(left, u[:, 3] * (1 - want_w), atol=1e-5)
    np.testing.assert_allclose(w, want_w, atol=1e-5)


def test_unknown_op_and_bad_arguments():
    with pytest.raises(data.DataError, match=r"Unknown pp op 'rotate'.*random_crop.*value_range"):
        Preprocess("rotate(3)|value_range(-1, 1)")
    with pytest.raises(data.DataError, match=r"Bad arguments for pp op 'resize'.*resize\(size"):
        Preprocess("resize()")
    with pytest.raises(data.DataError, match="size must be a positive int"):
        Preprocess("resize(-3)")
    with pytest.raises(data.DataError, match="arguments must be literals"):
        Preprocess('resize(__import__("os"))')
    with pytest.raises(data.DataError, match="Cannot parse"):
        Preprocess("resize(3")


def test_shape_problems_fail_before_training():
    cfg = dict(name="synthetic", synthetic=dict(image_shape=(8, 8, 3)))
    with pytest.raises(data.DataError, match=r"crop 10x10 is larger than the image 8x8"):
        data.get_info(dict(cfg, pp_train="random_crop(10)"))
    with pytest.raises(data.DataError, match=r"pp_train .* gives images of shape \(6, 6, 3\) but pp_eval"):
        data.get_info(dict(cfg, pp_train="random_crop(6)", pp_eval="value_range(-1, 1)"))


def test_plugin_ops_are_found_by_name():
    @data.register_pp_op("test_invert_colours")
    def invert():  # pylint: disable=unused-variable
        return lambda images, u: 255 - images

    np.testing.assert_array_equal(run("test_invert_colours"), 255 - IMAGES)
    assert "test_invert_colours" in data.known_ops()
