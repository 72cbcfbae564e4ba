"""Prompts drawn from masks (vitjax/segment/clicks.py): a first point inside its target, the box its bounding
box, each next click inside the error region with the label that names the error, all repeated by the key."""
import jax
import jax.numpy as jnp
import numpy as np

from vitjax.segment import clicks


def _masks(count=16, size=24, seed=0):
    """Random rectangles (targets) and random blobs (predictions) on a size x size grid."""
    rng = np.random.default_rng(seed)
    targets = np.zeros((count, size, size), bool)
    for mask in targets:
        top, left = rng.integers(0, size - 6, 2)
        mask[top:top + rng.integers(3, 7), left:left + rng.integers(3, 7)] = True
    predicted = rng.random((count, size, size)) < 0.1
    return jnp.asarray(targets), jnp.asarray(predicted)


def test_the_first_point_lies_inside_its_target_and_is_foreground():
    targets, _ = _masks()
    points, labels = clicks.first_point(jax.random.key(1), targets)
    cols, rows = np.asarray(points[:, 0, 0], int), np.asarray(points[:, 0, 1], int)
    assert np.asarray(targets)[np.arange(len(rows)), rows, cols].all()
    assert (np.asarray(labels) == clicks.FOREGROUND).all() and points.shape == (16, 1, 2)


def test_an_error_click_lies_in_the_error_region_labelled_by_the_error():
    targets, predicted = _masks()
    for seed in range(5):
        points, labels = clicks.error_click(jax.random.key(seed), predicted, targets)
        cols, rows = np.asarray(points[:, 0, 0], int), np.asarray(points[:, 0, 1], int)
        index = np.arange(len(rows))
        false_negative = np.asarray(targets & ~predicted)[index, rows, cols]
        false_positive = np.asarray(predicted & ~targets)[index, rows, cols]
        assert (false_negative | false_positive).all()
        np.testing.assert_array_equal(np.asarray(labels[:, 0]), np.where(false_negative, 1, 0))


def test_a_perfect_prediction_gets_a_padding_click():
    targets, _ = _masks(4)
    _, labels = clicks.error_click(jax.random.key(0), targets, targets)
    assert (np.asarray(labels) == clicks.NOT_A_POINT).all()


def test_the_box_is_the_masks_bounding_box():
    targets, _ = _masks()
    boxes = np.asarray(clicks.bounding_box(targets))
    for mask, box in zip(np.asarray(targets), boxes):
        rows, cols = np.nonzero(mask)
        assert box.tolist() == [cols.min(), rows.min(), cols.max(), rows.max()]


def test_noisy_boxes_stay_ordered_on_the_image():
    targets, _ = _masks()
    boxes = np.asarray(clicks.noisy_box(jax.random.key(0), clicks.bounding_box(targets), (24, 24), noise=0.5))
    assert (boxes[:, :2] <= boxes[:, 2:]).all() and boxes.min() >= 0 and boxes.max() <= 23


def test_clicks_repeat_from_their_key_and_differ_with_it():
    targets, predicted = _masks()
    same = [np.asarray(clicks.error_click(jax.random.key(7), predicted, targets)[0]) for _ in range(2)]
    other = np.asarray(clicks.error_click(jax.random.key(8), predicted, targets)[0])
    np.testing.assert_array_equal(same[0], same[1])
    assert not np.array_equal(same[0], other)
