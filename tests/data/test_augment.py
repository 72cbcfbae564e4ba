"""randaugment and random_erasing pp ops: determinism per example, identities, exact transforms, ranges, errors."""

import numpy as np
import pytest
import tensorflow as tf

from vitjax import data
from vitjax.data import pp_ops
from vitjax.data.preprocess import UNIFORMS_PER_OP, Preprocess

GREY = np.random.default_rng(0).integers(0, 256, (6, 16, 16, 1)).astype(np.uint8)
RGB = np.random.default_rng(1).integers(0, 256, (6, 12, 10, 3)).astype(np.uint8)
MAGNITUDE_OPS = ("rotate", "solarize", "color", "posterize", "contrast", "brightness", "sharpness",
                 "shear_x", "shear_y", "translate_x", "translate_y")


def uniforms(ops, n, seed=0):
    return np.random.default_rng(seed).random((n, ops.num_ops, UNIFORMS_PER_OP), dtype=np.float32)


def run(pp, images, u=None, seed=0):
    ops = Preprocess(pp)
    u = uniforms(ops, len(images), seed) if u is None else u
    return ops(tf.constant(images), tf.constant(u)).numpy()


@pytest.mark.parametrize("pp", ["randaugment(3, 9, mstd=0.5, p=0.7)", "random_erasing(0.8)",
                                "random_erasing(1.0, fill='zero')"])
def test_each_image_follows_its_own_uniforms_alone(pp):
    """Same uniforms, same output, in a batch or alone; the same image with other uniforms, another draw."""
    ops = Preprocess(pp)
    u = uniforms(ops, len(GREY))
    batch = run(pp, GREY, u)
    np.testing.assert_array_equal(batch, run(pp, GREY, u))
    for i in range(len(GREY)):
        np.testing.assert_array_equal(run(pp, GREY[i : i + 1], u[i : i + 1]), batch[i : i + 1])
    same_image = np.repeat(GREY[:1], 6, axis=0)
    outs = run(pp, same_image, u)
    assert len({outs[i].tobytes() for i in range(6)}) >= 4  # rows differ (an erasing coin may skip one)


def test_magnitude_zero_identity_only_and_p_zero_are_the_identity():
    for images in (GREY, RGB, RGB.astype(np.float32)):
        np.testing.assert_array_equal(run(f"randaugment(4, 0, ops={MAGNITUDE_OPS})", images), images)
        np.testing.assert_array_equal(run("randaugment(2, 9, ops=('identity',))", images), images)
        np.testing.assert_array_equal(run("randaugment(2, 10, p=0.0)", images), images)
        np.testing.assert_array_equal(run("random_erasing(0.0)", images), images)


@pytest.mark.parametrize("name", list(pp_ops.TRANSFORMS))
@pytest.mark.parametrize("images", [GREY, RGB, RGB.astype(np.float32)], ids=["grey", "rgb", "rgb-float"])
def test_each_transform_keeps_shape_dtype_and_range(name, images):
    out = run(f"randaugment(2, 10, ops=('{name}',), mstd=1.0)", images)
    assert out.shape == images.shape and out.dtype == images.dtype
    assert out.min() >= 0 and out.max() <= 255


def test_rotate_by_90_turns_the_image_exactly():
    """Level +1 turns counter-clockwise as displayed (np.rot90), level -1 clockwise; the sign's uniform
    is each layer's second (< 0.5: negative)."""
    ops = Preprocess("randaugment(1, 10, ops=('rotate',), rotate=90)")
    u = np.zeros((6, 1, UNIFORMS_PER_OP), np.float32)
    u[:, 0, 1] = [0.9, 0.1, 0.9, 0.1, 0.9, 0.1]
    out = ops(tf.constant(GREY), tf.constant(u)).numpy()
    for i in range(6):
        np.testing.assert_array_equal(out[i], np.rot90(GREY[i], 1 if i % 2 == 0 else -1))


def test_translate_and_shear_move_pixels_by_their_stated_amounts():
    ops = Preprocess("randaugment(1, 10, ops=('translate_x', 'translate_y'), translate=0.25, fill=7)")
    u = np.zeros((2, 1, UNIFORMS_PER_OP), np.float32)
    u[:, 0, 0] = [0.2, 0.7]  # translate_x, translate_y
    u[:, 0, 1] = 0.9  # positive: right, down by 16 / 4 = 4 pixels
    out = ops(tf.constant(GREY[:2]), tf.constant(u)).numpy()
    np.testing.assert_array_equal(out[0, :, 4:], GREY[0, :, :-4])
    np.testing.assert_array_equal(out[1, 4:], GREY[1, :-4])
    assert (out[0, :, :4] == 7).all() and (out[1, :4] == 7).all()
    # Shear 0.5 about the centre row 7.5: row r samples column c + 0.5 (r - 7.5), so on a ramp of step 10
    # row 11 reads 17.5 higher wherever it samples inside the image.
    ramp = np.tile(np.arange(16, dtype=np.float32) * 10, (16, 1))[None, :, :, None]
    got = run("randaugment(1, 10, ops=('shear_x',), shear=0.5)", ramp, np.full((1, 1, 4), 0.9, np.float32))
    np.testing.assert_allclose(got[0, 11, 4:12, 0], ramp[0, 11, 4:12, 0] + 5 * 3.5, atol=1e-3)


def test_pixel_transforms_agree_with_pil():
    """The sign-less transforms against PIL.ImageOps on grey images, at magnitude 10."""
    pil = pytest.importorskip("PIL.Image")
    ops_module = pytest.importorskip("PIL.ImageOps")
    low_contrast = (GREY // 4 + 60).astype(np.uint8)  # 60..123: something for auto_contrast to stretch
    cases = {
        "equalize": (ops_module.equalize, 0),
        "auto_contrast": (ops_module.autocontrast, 1),  # PIL truncates, we round: one level apart at most
        "posterize": (lambda im: ops_module.posterize(im, 4), 0),
        "solarize": (lambda im: ops_module.solarize(im, 0), 0),
    }
    for name, (reference, tolerance) in cases.items():
        out = run(f"randaugment(1, 10, ops=('{name}',))", low_contrast)
        for i in range(len(low_contrast)):
            want = np.asarray(reference(pil.fromarray(low_contrast[i, :, :, 0])))
            np.testing.assert_allclose(out[i, :, :, 0], want, atol=tolerance, err_msg=name)


def test_colour_is_left_out_of_the_draw_on_grey_images_only():
    ops = Preprocess("randaugment(1, 10)")
    u = np.zeros((1, 1, UNIFORMS_PER_OP), np.float32)
    u[0, 0, 0] = 5.5 / 14  # the 6th of the paper's 14: 'color' on RGB, 'posterize' on grey (13 to draw)
    out = ops(tf.constant(GREY[:1]), tf.constant(u)).numpy()
    np.testing.assert_array_equal(out, GREY[:1] // 16 * 16)


def test_random_erasing_p1_erases_one_box_within_the_area_and_aspect_ranges():
    n, size = 400, 32
    white = np.full((n, size, size, 1), 255, np.uint8)
    out = run("random_erasing(1.0, area=(0.05, 0.3), aspect=(0.5, 2.0), fill='zero')", white)
    for image in out[..., 0]:
        rows, cols = np.nonzero(image == 0)
        h, w = rows.max() - rows.min() + 1, cols.max() - cols.min() + 1
        assert len(rows) == h * w  # one filled rectangle
        slack = (h + w) / 2 + 1  # rounding each side to whole pixels
        assert 0.05 * size * size - slack <= h * w <= 0.3 * size * size + slack
        assert 0.5 / 1.25 <= h / w <= 2.0 * 1.25  # aspect, up to rounding sides of 5 pixels or more
    areas = (out == 0).sum(axis=(1, 2, 3)) / size**2
    assert areas.min() < 0.08 and areas.max() > 0.27  # the draws cover the range


def test_random_erasing_pixel_noise_is_uniform_bytes_or_standard_normal():
    big = np.full((50, 32, 32, 3), 128, np.uint8)
    noise = run("random_erasing(1.0, area=(0.9, 1.0), aspect=(1.0, 1.0))", big).astype(np.float64)
    erased = noise[noise != 128]
    assert abs(erased.mean() - 127.5) < 2 and abs(erased.std() - 73.9) < 2  # uniform over 0..255
    floats = run("random_erasing(1.0, area=(0.9, 1.0), aspect=(1.0, 1.0))", np.zeros_like(big, np.float32))
    erased = floats[floats != 0]
    assert abs(erased.mean()) < 0.03 and abs(erased.std() - 1) < 0.03
    assert floats.dtype == np.float32


@pytest.mark.parametrize(
    "pp, message",
    [
        ("randaugment(0, 9)", r"n \(transforms per image\) must be an int >= 1, got 0"),
        ("randaugment(2, 11)", r"magnitude m must be in 0..10, got 11"),
        ("randaugment(2, 9, ops=('rotate', 'colour'))", r"unknown transforms \['colour'\]; choose from identity"),
        ("randaugment(2, 9, p=1.5)", r"p \(chance each layer applies\) must be in \[0, 1\], got 1.5"),
        ("randaugment(2, 9, mstd=-1)", r"mstd \(magnitude noise\) must be >= 0, got -1"),
        ("random_erasing(1.5)", r"p must be in \[0, 1\], got 1.5"),
        ("random_erasing(area=(0.5, 0.2))", r"area must be \(lo, hi\) with 0 < lo <= hi <= 1, got \(0.5, 0.2\)"),
        ("random_erasing(aspect=(0, 2))", r"aspect must be \(lo, hi\) with 0 < lo <= hi"),
        ("random_erasing(area=0.3)", r"area must be \(lo, hi\) with 0 < lo <= hi <= 1, got 0.3"),
        ("random_erasing(fill='mean')", r"fill must be one of \('pixel', 'zero'\), got 'mean'"),
        ("randaugment(2, 9)|cutmix", r"Unknown pp op 'cutmix'.*randaugment.*random_erasing"),
    ],
)
def test_bad_arguments_fail_naming_the_value(pp, message):
    with pytest.raises(data.DataError, match=message):
        Preprocess(pp)


def test_pipelines_with_the_new_ops_keep_the_model_shape():
    cfg = dict(name="synthetic", synthetic=dict(image_shape=(8, 8, 1)), pp_eval="value_range(-1, 1)",
               pp_train="randaugment(2, 9)|random_crop(8, pad=1)|random_erasing(0.25)|value_range(-1, 1)")
    assert data.get_info(cfg).image_shape == (8, 8, 1)
