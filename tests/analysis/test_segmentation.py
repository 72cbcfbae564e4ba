"""The CLS-attention segmentation read-out (vitjax/analysis/segmentation.py) against hand-built cases and a
brute-force reference of DINO's mass threshold."""
import numpy as np
import pytest

from vitjax.analysis import segmentation


def _mass_mask_reference(values, mass):
    """One map at a time: patches from the largest down until their sum reaches `mass` of the total."""
    order = sorted(range(len(values)), key=lambda i: (-values[i], i))
    keep, total = np.zeros(len(values), bool), 0.0
    for i in order:
        if total >= mass * sum(values):
            break
        keep[i] = True
        total += values[i]
    return keep


def test_object_patches_of_a_bright_shape_on_black():
    image = np.full((1, 8, 8, 1), -1.0)  # value_range(-1, 1) black
    image[0, 0:4, 4:8] = 1.0  # the top-right 4x4 patch, whole
    image[0, 4:6, 0:4] = 0.5  # half of the bottom-left patch: not more than half, so not object
    image[0, 4:7, 4:8] = 0.8  # three quarters of the bottom-right patch
    got = segmentation.object_patches(image, (2, 2), 4)
    np.testing.assert_array_equal(got[0], [[False, True], [False, True]])
    # A pixel 10% of the range above black or less is background (dim noise does not make an object).
    image[0, :4, :4] = -1.0 + 0.1 * 2.0
    np.testing.assert_array_equal(segmentation.object_patches(image, (2, 2), 4)[0], [[False, True], [False, True]])


def test_mass_masks_keep_the_fewest_patches_holding_the_mass():
    maps = np.array([[0.5, 0.3], [0.1, 0.1]])
    np.testing.assert_array_equal(segmentation.mass_masks(maps, 0.6), [[True, True], [False, False]])
    np.testing.assert_array_equal(segmentation.mass_masks(maps, 0.5), [[True, False], [False, False]])
    rng = np.random.default_rng(0)
    maps = rng.dirichlet(np.full(16, 0.5), size=(5, 3)).reshape(5, 3, 4, 4)
    got = segmentation.mass_masks(maps, 0.6)
    assert got.shape == maps.shape
    for index in np.ndindex(5, 3):
        want = _mass_mask_reference(list(maps[index].ravel()), 0.6)
        np.testing.assert_array_equal(got[index].ravel(), want, err_msg=str(index))
        assert maps[index][got[index]].sum() >= 0.6 - 1e-12


def test_jaccard_and_its_random_placement():
    truth = np.zeros((4, 4), bool)
    truth[:2, :2] = True
    same, half = truth.copy(), np.zeros((4, 4), bool)
    half[:2, 1:3] = True  # 2 shared of 6 covered
    assert segmentation.jaccard(same, truth) == 1.0
    assert segmentation.jaccard(half, truth) == pytest.approx(2 / 6)
    assert segmentation.jaccard(np.zeros((4, 4), bool), np.zeros((4, 4), bool)) == 1.0
    # At random places a 4-patch mask meets a 4-patch object far less often than where it is.
    assert segmentation.permuted_jaccard(same, truth) < 0.3
    # Against an object covering everything, placement cannot matter: the score is the mask's share.
    everything = np.ones((4, 4), bool)
    assert segmentation.permuted_jaccard(half, everything) == pytest.approx(4 / 16)


def test_a_head_that_attends_to_the_object_beats_its_random_placement():
    rng = np.random.default_rng(1)
    objects = np.zeros((6, 16), bool)
    for row in objects:
        row[rng.choice(16, 4, replace=False)] = True  # 4 object patches per image, anywhere
    objects = objects.reshape(6, 4, 4)
    images = np.where(np.repeat(np.repeat(objects, 4, 1), 4, 2), 1.0, -1.0)[..., None]
    on_object = objects / 4.0  # head 1: uniform over the object, so 60% of its mass is 3 of its 4 patches
    uniform = np.full((6, 4, 4), 1 / 16)  # head 2: everywhere (ties: the first 10 patches by position)
    result = segmentation.score(np.stack([on_object, uniform], axis=1), images, (4, 4), 4)
    assert result["best_head"] == 0 and result["per_head"][0] == pytest.approx(0.75)  # 3 / 4, inside the object
    assert result["per_head_permuted"][0] < 0.4  # 3 patches at random meet few of 4
    assert result["per_head"][1] < 0.75
    assert result["object_share"] == pytest.approx(0.25)
    assert result["mask_share"] == pytest.approx((3 + 10) / 32)
    assert result["per_image"].shape == (6,) and result["mean"] == pytest.approx(result["per_image"].mean())
    assert result["mean_se"] == pytest.approx(result["per_image"].std(ddof=1) / np.sqrt(6))
