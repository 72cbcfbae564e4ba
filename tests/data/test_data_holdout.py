"""The validation split val_size holds out of the train split: fixed, class-balanced, never trained on."""

import numpy as np
import pytest

from vitjax import data
from vitjax.data import config, pipeline, sources

LABELS = np.random.default_rng(1).integers(0, 10, 6_000)
# holdout_indices(LABELS, 13, 0, 10) as the code before the classes-present change drew it.
PINNED_HOLDOUT = [1404, 1029, 4002, 4784, 909, 2902, 3187, 5098, 1121, 846, 5182, 1623, 2938]


def _training(size, seed=0, class_balanced=False, val_size=500, val_seed=0):
    return sources.training_indices(LABELS, size, seed, class_balanced, 10, val_size=val_size, val_seed=val_seed)


@pytest.mark.parametrize("subset_seed", [0, 1, 5])
@pytest.mark.parametrize("class_balanced", [False, True])
def test_validation_is_disjoint_from_every_training_subset_and_subsets_stay_nested(subset_seed, class_balanced):
    held = set(sources.holdout_indices(LABELS, 500, 0, 10))
    previous = set()
    for size in (100, 1000, 3000, 5000 if class_balanced else 5500):
        picked = _training(size, subset_seed, class_balanced)
        assert len(set(picked)) == size and not held & set(picked)
        assert previous <= set(picked)  # nested across sizes
        previous = set(picked)
    everything = _training(None, subset_seed)
    assert len(everything) == 5500 and set(everything) | held == set(range(len(LABELS)))


def test_validation_is_class_balanced_and_fixed_by_val_seed_alone():
    held = sources.holdout_indices(LABELS, 503, 0, 10)
    counts = np.bincount(LABELS[held], minlength=10)
    assert counts.max() - counts.min() <= 1 and counts.sum() == 503 and len(set(held)) == 503
    np.testing.assert_array_equal(held, sources.holdout_indices(LABELS, 503, 0, 10))
    assert set(held) != set(sources.holdout_indices(LABELS, 503, 1, 10))
    # The training subset's seed and size do not move it (the training seed never reaches the data config).
    cfg = dict(name="synthetic", val_size=40, pp_train="", synthetic=dict(num_train=300, image_shape=(4, 4, 1)))
    first = _val_labels_and_images(dict(cfg, subset_seed=0, train_size=100))
    second = _val_labels_and_images(dict(cfg, subset_seed=3, train_size=200))
    np.testing.assert_array_equal(first, second)


def _val_labels_and_images(cfg):
    batches = list(data.eval_batches(cfg, "val", global_batch_size=16))
    return np.concatenate([b["image"][b["mask"]].ravel() for b in batches])


def test_val_size_0_draws_exactly_the_subsets_of_before():
    for size, seed, balanced in [(None, 0, False), (777, 0, False), (777, 3, False), (95, 2, True)]:
        np.testing.assert_array_equal(
            sources.training_indices(LABELS, size, seed, balanced, 10),
            sources.subset_indices(LABELS, size, seed, balanced, 10),
        )
    assert len(sources.holdout_indices(LABELS, 0)) == 0


def test_the_pipeline_evaluates_the_held_out_examples_once_and_trains_on_the_rest():
    cfg = dict(name="synthetic", val_size=30, pp_train="", pp_eval="",
               synthetic=dict(num_train=200, num_classes=4, image_shape=(4, 4, 1)))
    info = data.get_info(cfg)
    assert (info.num_train, info.num_val) == (170, 30)
    assert data.get_info(dict(cfg, train_size=50)).num_train == 50
    full = sources.load(config.resolve(cfg), "train")
    val = pipeline.val_subset(config.resolve(cfg))
    rows = lambda x: set(map(bytes, x.reshape(len(x), -1)))
    evaluated = _val_labels_and_images(cfg).reshape(-1, 16).astype(np.uint8)
    assert len(evaluated) == 30 and rows(evaluated) == rows(val.images)
    trained = pipeline.train_subset(config.resolve(cfg))
    assert len(trained) == 170 and not rows(trained.images) & rows(val.images)
    assert rows(trained.images) | rows(val.images) == rows(full.images)


@pytest.mark.parametrize("val_size, message", [
    (6_000, "val_size=6000 would hold out all of the train split \\(6000 examples\\)"),
    (7_000, "val_size=7000 would hold out all"),
    (9, "val_size=9 is smaller than the 10 classes"),
])
def test_a_validation_split_that_cannot_be_held_out_is_refused(val_size, message):
    with pytest.raises(data.DataError, match=message):
        sources.holdout_indices(LABELS, val_size, 0, 10)


def test_config_errors_name_the_key():
    base = dict(name="synthetic", pp_train="", synthetic=dict(num_train=200, num_classes=4))
    with pytest.raises(data.DataError, match="train_size=171 is larger than .* less its val_size=30"):
        data.get_info(dict(base, val_size=30, train_size=171))
    with pytest.raises(data.DataError, match="val_size=200 would hold out all"):
        data.get_info(dict(base, val_size=200))
    with pytest.raises(data.DataError, match="val_size must be >= 0"):
        data.get_info(dict(base, val_size=-1))
    with pytest.raises(data.DataError, match="val_seed must be >= 0"):
        data.get_info(dict(base, val_seed=-1))
    with pytest.raises(data.DataError, match="val_size is 0"):
        data.eval_batches(base, "val", global_batch_size=8)


def test_validation_balances_over_the_classes_the_split_has_and_keeps_the_draw_where_all_are_there():
    # The canvases' training split holds only group 0 of its 2 (seen classes): all of val_size comes from it.
    held = sources.holdout_indices(np.zeros(1_000, np.int64), 100, 0, 2)
    assert len(set(held)) == 100
    # Every class present: the very indices class-balancing over all of them gave (pinned before the change).
    assert sources.holdout_indices(LABELS, 13, 0, 10).tolist() == PINNED_HOLDOUT
