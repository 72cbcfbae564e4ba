"""train_batches: determinism, exact resume, process shares, epochs, mixup, learnable synthetic data."""

import numpy as np
import pytest

from vitjax import data
from tests.data.iterators import take

CFG = dict(
    name="synthetic",
    pp_train="random_crop(8, pad=2)|flip_lr|value_range(-1, 1)",
    pp_eval="value_range(-1, 1)",
    synthetic=dict(num_train=96, num_test=40, image_shape=(8, 8, 3), num_classes=4),
)


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x["image"], y["image"])
        np.testing.assert_array_equal(x["labels"], y["labels"])


def test_resume_from_any_step_gives_the_uninterrupted_batches():
    cfg = dict(CFG, mixup_alpha=0.4)
    full = take(
        data.train_batches(cfg, global_batch_size=16, seed=5), 14
    )  # 6 steps an epoch: crosses 2 epochs.
    resumed = take(data.train_batches(cfg, global_batch_size=16, seed=5, start_step=9), 5)
    assert_same(full[9:14], resumed)


def test_seeds_change_order_and_augmentation():
    a = take(data.train_batches(CFG, global_batch_size=16, seed=0), 1)[0]
    b = take(data.train_batches(CFG, global_batch_size=16, seed=1), 1)[0]
    assert not np.array_equal(a["image"], b["image"])
    assert not np.array_equal(a["labels"], b["labels"])


def test_process_shares_partition_the_global_batch():
    whole = take(data.train_batches(CFG, global_batch_size=16, seed=2, start_step=3), 3)
    shares = [
        take(
            data.train_batches(
                CFG, global_batch_size=16, seed=2, start_step=3, process_index=p, process_count=2
            ),
            3,
        )
        for p in range(2)
    ]
    for step in range(3):
        assert shares[0][step]["image"].shape == (8, 8, 8, 3)
        for key in ("image", "labels"):
            np.testing.assert_array_equal(np.concatenate([s[step][key] for s in shares]), whole[step][key])


def test_each_epoch_sees_distinct_examples_and_drops_the_remainder():
    cfg = dict(CFG, pp_train="", synthetic=dict(CFG["synthetic"], num_train=50))
    it = data.train_batches(cfg, global_batch_size=16)  # 3 full batches an epoch, 2 examples skipped.
    rows = lambda batches: [bytes(r) for b in batches for r in b["image"].astype(np.uint8).reshape(16, -1)]
    epoch0, epoch1 = rows(take(it, 3)), rows(take(it, 3))
    assert len(set(epoch0)) == len(set(epoch1)) == 48
    assert epoch0 != epoch1  # A fresh permutation each epoch.


def test_outputs_are_float32_one_hot_and_mixup_keeps_label_mass():
    batch = take(data.train_batches(CFG, global_batch_size=16), 1)[0]
    assert batch["image"].dtype == batch["labels"].dtype == np.float32
    assert batch["image"].shape == (16, 8, 8, 3) and batch["labels"].shape == (16, 4)
    assert -1 <= batch["image"].min() and batch["image"].max() <= 1
    assert set(np.unique(batch["labels"])) == {0.0, 1.0}
    mixed = take(data.train_batches(dict(CFG, mixup_alpha=1.0), global_batch_size=16), 3)
    for b in mixed:
        np.testing.assert_allclose(b["labels"].sum(1), 1, rtol=1e-6)
    assert any(len(np.unique(b["labels"])) > 2 for b in mixed)  # Actually mixed, not one-hot.


def test_synthetic_data_is_learnable():
    """Nearest class mean from train examples classifies test examples well above chance (25%)."""
    cfg = dict(CFG, pp_train="value_range(-1, 1)")
    batches = take(data.train_batches(cfg, global_batch_size=32), 3)
    x = np.concatenate([b["image"] for b in batches]).reshape(96, -1)
    y = np.concatenate([b["labels"] for b in batches]).argmax(1)
    means = np.stack([x[y == k].mean(0) for k in range(4)])
    test = list(data.eval_batches(cfg, "test", global_batch_size=40))[0]
    pred = ((test["image"].reshape(40, 1, -1) - means[None]) ** 2).sum(-1).argmin(1)
    assert (pred == test["label"]).mean() > 0.9


def test_batch_size_errors():
    with pytest.raises(data.DataError, match="not a positive multiple of the process count 3"):
        data.train_batches(CFG, global_batch_size=16, process_count=3)
    with pytest.raises(data.DataError, match="global batch size 128 is larger than the training set"):
        data.train_batches(CFG, global_batch_size=128)
    with pytest.raises(data.DataError, match="process_index 2 is not in"):
        data.eval_batches(CFG, global_batch_size=16, process_index=2, process_count=2)
