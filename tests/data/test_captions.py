"""The image-caption pairs made here (vitjax/data/captions.py): the same seed gives the same pairs, held-out
colour-item pairs never occur among training pairs, and each caption says what is drawn (the tint's
channels carry the item, the item sits in the named region, a small item is half a large one)."""
import numpy as np
import pytest

from vitjax import data
from vitjax.data import captions, sources
from vitjax.data import config as data_config

CANVAS = 32
SYNTHETIC = {"num_train": 400, "num_test": 200, "image_shape": (12, 12, 3), "num_classes": 10, "seed": 3}


def caption_data(**captions_settings):
    return {"name": "captions", "synthetic": SYNTHETIC, "pp_train": "value_range(-1, 1)",
            "captions": {"base": "synthetic", "canvas": CANVAS, **captions_settings}}


def split(which, **captions_settings):
    return sources.load(data_config.resolve(caption_data(**captions_settings)), which)


def test_the_same_seed_gives_the_same_pairs_and_pair_i_does_not_depend_on_how_many_are_taken():
    base, labels = sources.make_synthetic("train", 400, 200, (12, 12, 3), 10, 3)
    first = captions.make_split(base, labels, "train", seed=5, canvas=CANVAS)
    again = captions.make_split(base, labels, "train", seed=5, canvas=CANVAS)
    fewer = captions.make_split(base, labels, "train", seed=5, canvas=CANVAS, size=50)
    other = captions.make_split(base, labels, "train", seed=6, canvas=CANVAS)
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    np.testing.assert_array_equal(first[0][:50], fewer[0])
    np.testing.assert_array_equal(first[1][:50], fewer[1])
    assert (first[1] != other[1]).mean() > 0.5


def test_held_out_colour_item_pairs_never_occur_in_training_and_do_in_test():
    train, test = split("train"), split("test")
    item, colour, _, _ = captions.attributes(train.labels)
    assert not captions.held_out(item, colour).any()
    item, colour, _, _ = captions.attributes(test.labels)
    assert 0.15 < captions.held_out(item, colour).mean() < 0.35  # 10 of 40 pairs, drawn as often as the rest
    assert len({int(k) for k in captions.colour_item_pair(train.labels)}) == 30  # every seen pair occurs
    assert train.num_classes == captions.NUM_COMPOSITIONS and train.images.shape[1:] == (CANVAS, CANVAS, 3)


def test_each_caption_says_what_is_drawn():
    pairs = split("train")
    for image, label in zip(pairs.images, pairs.labels):
        text = captions.caption(label)
        item, colour, size, position = (int(a) for a in captions.attributes(label))
        assert text.startswith(f"a {captions.SIZES[size]} {captions.COLOUR_NAMES[colour]} {captions.ITEMS[item]}")
        rows, cols = np.nonzero(image.max(axis=-1))
        lit = image[rows, cols].astype(float).mean(axis=0)  # mean R, G, B over the item's pixels
        named = np.array(captions.COLOURS[captions.COLOUR_NAMES[colour]]) > 0
        assert lit[named].min() > 10 * max(lit[~named].max(), 0.1), (text, lit)
        extent = rows.max() - rows.min() + 1  # the synthetic items fill their box
        assert extent == (6 if captions.SIZES[size] == "small" else 12), text
        centre = np.array([rows.mean(), cols.mean()]) / CANVAS  # in canvas fractions
        where = captions.POSITION_NAMES[position]
        if where == "centre":
            assert np.abs(centre - 0.5).max() < 0.1, (text, centre)
        else:
            assert (centre[0] < 0.5) == where.startswith("top") and (centre[1] < 0.5) == where.endswith("left"), (
                text, centre)


def test_caption_ids_round_trip_and_every_composition_has_its_own_caption():
    ids = np.arange(captions.NUM_COMPOSITIONS)
    np.testing.assert_array_equal(captions.composition_id(*captions.attributes(ids)), ids)
    texts = captions.captions()
    assert len(set(texts)) == captions.NUM_COMPOSITIONS == 400
    assert captions.caption(captions.composition_id(7, 0, 0, 0)) == "a small red sneaker at the top left"


def test_get_info_and_bad_settings_name_the_fix():
    assert data.get_info(caption_data()).image_shape == (CANVAS, CANVAS, 3)
    with pytest.raises(data.DataError, match="canvas >= 12"):
        split("train", canvas=10)
    with pytest.raises(data.DataError, match="use 'fashion_mnist' or 'synthetic'"):
        sources.load(data_config.resolve({**caption_data(), "captions": {"base": "cifar10"}}), "train")
