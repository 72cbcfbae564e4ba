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


def test_inception_crop_stays_in_range_and_varies():
    a, b = run("inception_crop(6, area_min=20)", seed=0), run("inception_crop(6, area_min=20)", seed=1)
    assert a.dtype == np.uint8 and not np.array_equal(a, b)


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
