"""eval_batches: padding and masks cover every example exactly once, on any number of processes."""

import numpy as np
import pytest

from vitjax import data
from vitjax.data import config, sources

CFG = dict(
    name="synthetic",
    pp_eval="value_range(0, 255)",
    pp_train="value_range(0, 255)",
    synthetic=dict(num_train=64, num_test=103, image_shape=(4, 4, 1), num_classes=3),
)


@pytest.mark.parametrize("process_count", [1, 2])
def test_every_example_exactly_once(process_count):
    parts = [
        data.eval_batches(CFG, "test", global_batch_size=20, process_index=p, process_count=process_count)
        for p in range(process_count)
    ]
    assert {len(part) for part in parts} == {6}  # ceil(103 / 20) batches on every process.
    batches = [list(part) for part in parts]
    # Reassemble the global batches in order: process shares are consecutive blocks of each global batch.
    images, labels = [], []
    for i in range(6):
        for p in range(process_count):
            b = batches[p][i]
            assert b["image"].shape == (20 // process_count, 4, 4, 1) and b["label"].dtype == np.int32
            assert b["mask"].dtype == bool
            assert (b["image"][~b["mask"]] == 0).all() and (b["label"][~b["mask"]] == 0).all()
            images.append(b["image"][b["mask"]])
            labels.append(b["label"][b["mask"]])
    test = sources.load(config.resolve(CFG), "test")
    np.testing.assert_array_equal(np.concatenate(images), test.images)
    np.testing.assert_array_equal(np.concatenate(labels), test.labels)


def test_re_iterable_and_train_split_is_the_subset():
    batches = data.eval_batches(dict(CFG, train_size=30), "train", global_batch_size=16)
    first, second = list(batches), list(batches)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a["image"], b["image"])
    assert len(batches) == 2 and sum(int(b["mask"].sum()) for b in first) == 30
