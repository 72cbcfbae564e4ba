"""Nested, deterministic train subsets."""

import numpy as np
import pytest

from vitjax import data
from vitjax.data import sources

LABELS = np.random.default_rng(0).integers(0, 10, 20_000)


def test_subsets_are_nested_prefixes_of_one_permutation():
    small, big = sources.subset_indices(LABELS, 1000), sources.subset_indices(LABELS, 10_000)
    np.testing.assert_array_equal(small, big[:1000])
    assert len(set(big)) == 10_000 and set(small) <= set(big)


def test_subsets_are_deterministic_and_keyed_by_subset_seed():
    np.testing.assert_array_equal(sources.subset_indices(LABELS, 500), sources.subset_indices(LABELS, 500))
    assert not np.array_equal(sources.subset_indices(LABELS, 500), sources.subset_indices(LABELS, 500, seed=1))
    np.testing.assert_array_equal(sources.subset_indices(LABELS, None), np.arange(len(LABELS)))


def test_class_balanced_counts_and_nesting():
    small = sources.subset_indices(LABELS, 95, class_balanced=True, num_classes=10)
    big = sources.subset_indices(LABELS, 1000, class_balanced=True, num_classes=10)
    counts = np.bincount(LABELS[small], minlength=10)
    assert sorted(counts) == [9] * 5 + [10] * 5  # floor(95/10) each, the remainder spread one per class.
    np.testing.assert_array_equal(np.bincount(LABELS[big], minlength=10), [100] * 10)
    assert set(small) <= set(big)
    for n in range(1, 40):  # Quotas only grow with N, which is what keeps balanced subsets nested.
        assert (sources.class_quotas(n, 10) <= sources.class_quotas(n + 1, 10)).all()


def test_subset_errors():
    with pytest.raises(data.DataError, match="train_size=20001 is larger"):
        sources.subset_indices(LABELS, 20_001)
    rare = np.array([0] * 50 + [1] * 3)
    with pytest.raises(data.DataError, match="needs 5 examples of class 1.*only 3"):
        sources.subset_indices(rare, 10, class_balanced=True, num_classes=2)


def test_an_epoch_of_training_covers_the_subset_exactly_once():
    cfg = dict(
        name="synthetic", train_size=64, pp_train="", synthetic=dict(num_train=200, image_shape=(4, 4, 1))
    )
    assert data.get_info(cfg).num_train == 64
    it = data.train_batches(cfg, global_batch_size=16)
    seen = np.concatenate([next(it)["image"] for _ in range(4)]).astype(np.uint8)  # pp '' keeps 0..255.
    full = sources.load(data.config.resolve(cfg), "train").images
    expected = full[sources.subset_indices(np.zeros(200, int), 64)]
    as_rows = lambda x: sorted(map(bytes, x.reshape(len(x), -1)))
    assert as_rows(seen) == as_rows(expected)
