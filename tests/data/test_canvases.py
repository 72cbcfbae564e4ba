"""Segmentation canvases (vitjax/data/canvases.py): drawn the same from the same seed, each item's mask its
visible pixels (a later item covering an earlier one), and no class of the evaluation's unseen half in any
training canvas; through the data config (`data.name='canvases'`) on the synthetic items."""
import numpy as np
import pytest

from vitjax import data
from vitjax.data import canvases

SIZE = 28


def _items(count=40):
    """Hand-made items: a bright square of class-dependent size on black, one class per item (0..9)."""
    labels = np.arange(count) % 10
    images = np.zeros((count, SIZE, SIZE, 1), np.uint8)
    for i, label in enumerate(labels):
        side = 10 + label
        images[i, 2:2 + side, 3:3 + side] = 100 + 10 * label + i % 7
    return images, labels


def test_canvases_repeat_from_their_seed_and_index_and_differ_with_the_seed():
    images, labels = _items()
    first, groups = canvases.make_split(images, labels, "train", seed=3, size=12)
    again, _ = canvases.make_split(images, labels, "train", seed=3, size=20)  # canvas i whatever the size
    other, _ = canvases.make_split(images, labels, "train", seed=4, size=12)
    np.testing.assert_array_equal(first, again[:12])
    assert not np.array_equal(first, other)
    assert first.dtype == np.uint8 and first.shape == (12, 64, 64, 3) and (groups == canvases.SEEN).all()


def test_each_mask_is_its_items_visible_pixels_and_later_items_cover_earlier_ones():
    square = np.full((2, 20, 20), 200.0, np.float32)
    masks = [pixels > canvases.MASK_THRESHOLD for pixels in square]
    packed = canvases.compose(list(square), masks, np.array([3, 7]), [(10, 10), (20, 20)], 64)
    first, second = canvases.item_masks(packed, 2)
    expected_second = np.zeros((64, 64), bool)
    expected_second[20:40, 20:40] = True
    expected_first = np.zeros((64, 64), bool)
    expected_first[10:30, 10:30] = True
    expected_first &= ~expected_second  # the later item's pixels hide the earlier one's
    np.testing.assert_array_equal(second, expected_second)
    np.testing.assert_array_equal(first, expected_first)
    assert canvases.item_classes(packed, 2).tolist() == [3, 7]
    np.testing.assert_array_equal(packed[..., canvases.PIXELS] > 0, expected_first | expected_second)


def test_a_drawn_items_mask_is_where_its_scaled_pixels_show():
    images, labels = _items()
    packed, _ = canvases.make_split(images, labels, "train", seed=0, size=30, num_items=3)
    ids, pixels = packed[..., canvases.ITEM_IDS], packed[..., canvases.PIXELS]
    # Masks are the items' own bright pixels: nothing is drawn outside them, nothing dark inside them.
    assert ((ids > 0) == (pixels > 0)).all() and pixels[ids > 0].min() >= canvases.MASK_THRESHOLD
    visible = canvases.item_masks(packed, 3).sum(axis=(-2, -1))
    assert visible.min() > 0  # every item keeps some of itself in view


def test_the_split_is_class_disjoint():
    images, labels = _items(200)
    train, train_groups = canvases.make_split(images, labels, "train", seed=0, size=60)
    test, test_groups = canvases.make_split(images, labels, "test", seed=0, size=60)
    unseen = canvases.unseen_classes(canvases.SEEN_CLASSES)
    train_classes = set(canvases.item_classes(train, 3).ravel().tolist())
    assert train_classes <= set(canvases.SEEN_CLASSES) and not train_classes & set(unseen)
    assert test_groups.tolist() == [0, 1] * 30
    test_classes = canvases.item_classes(test, 3)
    assert set(test_classes[test_groups == canvases.SEEN].ravel().tolist()) <= set(canvases.SEEN_CLASSES)
    assert set(test_classes[test_groups == canvases.UNSEEN].ravel().tolist()) <= set(unseen)


@pytest.mark.parametrize("settings, message", [
    (dict(size=3, split="test"), "even size"),
    (dict(seen=tuple(range(10))), "leaves no class unseen"),
    (dict(scale=(30, 80)), "scale=(30, 80)"),
])
def test_settings_no_canvas_can_use_are_refused(settings, message):
    images, labels = _items()
    args = dict(split="train", seed=0, size=4)
    args.update(settings)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        canvases.make_split(images, labels, args.pop("split"), **args)


def test_the_data_config_makes_canvases_of_the_synthetic_items():
    config = dict(name="canvases", pp_train="", pp_eval="",
                  synthetic=dict(num_train=64, num_test=32, image_shape=(8, 8, 1), num_classes=10),
                  canvases=dict(base="synthetic", canvas=32, num_items=2, scale=(8, 16), num_train=24,
                                num_test=8))
    info = data.get_info(config)
    assert info == data.DataInfo(num_train=24, num_test=8, num_classes=2, image_shape=(32, 32, 3))
    batch = next(iter(data.eval_batches(config, "test", global_batch_size=8)))
    assert batch["label"].tolist() == [0, 1] * 4
    assert set(np.unique(batch["image"][..., canvases.ITEM_IDS]).tolist()) <= {0.0, 1.0, 2.0}
