"""The validation split named by data.val_split (the way streamed datasets such as ImageNet get one), and
the one rule for whether a run has a validation split at all (data.has_validation)."""

import numpy as np
import pytest

from vitjax import data
from vitjax.data import sources
from tests.data.offline_fashion_mnist import needs_debian_files


@pytest.fixture(scope="module")
def npz(tmp_path_factory):
    """An npz dataset with splits train (200), minival (40) and test (50): 4 classes, 8x8x1 images."""
    make = lambda split, n, seed: sources.make_synthetic(split, n, n, (8, 8, 1), 4, seed)
    splits = {"train": make("train", 200, 0), "minival": make("test", 40, 1), "test": make("test", 50, 0)}
    path = tmp_path_factory.mktemp("npz") / "data.npz"
    np.savez(path, **{f"{s}_{k}": a for s, pair in splits.items() for k, a in zip(("images", "labels"), pair)})
    return dict(name=f"npz:{path}", pp_train="value_range(0, 1)", pp_eval="value_range(0, 255)"), splits


@pytest.mark.parametrize("changes, has", [({}, False), ({"val_size": 8}, True), ({"val_split": "test"}, True)])
def test_has_validation_is_val_size_or_val_split(changes, has):
    assert data.has_validation(dict(name="synthetic", **changes)) is has


def test_val_size_and_val_split_together_are_refused():
    with pytest.raises(data.DataError, match="val_size=8 and val_split='test' both define"):
        data.has_validation(dict(name="synthetic", val_size=8, val_split="test"))


def test_a_named_val_split_is_read_whole_with_pp_eval(npz):
    cfg, splits = npz
    cfg = dict(cfg, val_split="minival", train_size=100)
    info = data.get_info(cfg)
    assert (info.num_val, info.num_train, info.num_test) == (40, 100, 50)  # nothing held out of train
    batches = data.eval_batches(cfg, "val", global_batch_size=16)
    images = np.concatenate([b["image"][b["mask"]] for b in batches]).astype(np.uint8)
    labels = np.concatenate([b["label"][b["mask"]] for b in batches])
    assert batches.num_examples == 40 and len(batches) == 3
    np.testing.assert_array_equal(images, splits["minival"][0])  # pp_eval, in the split's order
    np.testing.assert_array_equal(labels, splits["minival"][1])


def test_a_named_val_split_that_is_missing_fails_before_training(npz):
    cfg, _ = npz
    with pytest.raises(data.DataError, match="has no split 'dev'"):
        data.get_info(dict(cfg, val_split="dev"))


def test_without_a_validation_split_val_is_refused(npz):
    cfg, _ = npz
    with pytest.raises(data.DataError, match="val_size is 0 and val_split is empty"):
        data.eval_batches(cfg, "val", global_batch_size=16)


@needs_debian_files
def test_a_streamed_dataset_validates_on_a_named_slice(offline):
    data_dir, attempts = offline
    cfg = dict(name="fashion_mnist", data_dir=data_dir, in_memory=False, shuffle_buffer=100,
               train_split="train[1000:]", val_split="train[:1000]", train_size=2000, pp_train="value_range(0, 1)")
    info = data.get_info(cfg)
    assert (info.num_val, info.num_train) == (1000, 2000)
    batches = data.eval_batches(cfg, "val", global_batch_size=256)
    assert batches.num_examples == 1000 and sum(int(b["mask"].sum()) for b in batches) == 1000
    assert data.tfds_source.first_examples("fashion_mnist", data_dir, "train[1000:]", 2000) == "train[1000:3000]"
    assert data.tfds_source.first_examples("fashion_mnist", data_dir, "train", 5) == "train[0:5]"
    with pytest.raises(data.DataError, match="train_size=59001 is larger than"):
        data.tfds_source.first_examples("fashion_mnist", data_dir, "train[1000:]", 59_001)
    with pytest.raises(data.DataError, match="name a split instead"):
        next(data.train_batches(dict(cfg, val_split="", val_size=100), global_batch_size=64))
    assert not attempts
