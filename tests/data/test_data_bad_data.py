"""Bad data and bad configs fail clearly before training (npz sources hold whatever arrays a user has)."""

import numpy as np
import pytest

from vitjax import data

GOOD = dict(
    train_images=np.zeros((20, 4, 4, 1), np.uint8),
    train_labels=np.arange(20) % 2,
    test_images=np.zeros((6, 4, 4, 1), np.uint8),
    test_labels=np.arange(6) % 2,
)


def npz(tmp_path, **changes):
    path = tmp_path / "d.npz"
    np.savez(path, **dict(GOOD, **changes))
    return dict(name=f"npz:{path}", pp_train="value_range(-1, 1)")


def test_good_npz_works(tmp_path):
    cfg = npz(tmp_path)
    assert data.get_info(cfg) == data.DataInfo(20, 6, 2, (4, 4, 1))
    assert next(data.train_batches(cfg, global_batch_size=10))["image"].shape == (10, 4, 4, 1)


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(train_images=np.zeros((20, 4, 4, 1), np.float32)), r"must be uint8 \(0..255\), got float32"),
        (dict(train_images=np.zeros((20, 4, 4), np.uint8)), r"must be \[N, H, W, C\].*Add a channel axis"),
        (dict(train_images=np.zeros((19, 4, 4, 1), np.uint8)), "19 images but 20 labels"),
        (dict(train_labels=np.arange(20) % 2 - 1), r"labels outside \[0, 2\) \(e.g. -1\)"),
        (dict(test_labels=np.arange(6) % 3, num_classes=2), r"split 'test': 2 labels outside \[0, 2\)"),
        (dict(test_images=np.zeros((0, 4, 4, 1), np.uint8), test_labels=np.zeros(0, int)), "'test' is empty"),
    ],
)
def test_bad_arrays(tmp_path, changes, message):
    with pytest.raises(data.DataError, match=message):
        data.get_info(npz(tmp_path, **changes))


def test_bad_config_values(tmp_path):
    cfg = npz(tmp_path)
    with pytest.raises(data.DataError, match="train_size=21 is larger than"):
        data.get_info(dict(cfg, train_size=21))
    with pytest.raises(
        data.DataError, match="Unknown data config field 'trian_size'.*Did you mean 'train_size'"
    ):
        data.get_info(dict(cfg, trian_size=5))
    with pytest.raises(data.DataError, match="class_balanced=True needs train_size"):
        data.get_info(dict(cfg, class_balanced=True))
    with pytest.raises(data.DataError, match="only possible for tfds"):
        data.train_batches(dict(cfg, in_memory=False), global_batch_size=4)
    with pytest.raises(data.DataError, match="has no split"):
        data.get_info(dict(cfg, test_split="validation"))
    with pytest.raises(data.DataError, match="Bad value .* for data config field train_size"):
        data.get_info(dict(cfg, train_size="all"))
    with pytest.raises(data.DataError, match="only tfds datasets need preparing"):
        data.prepare(cfg["name"])


def test_default_config_is_complete_and_overridable():
    cfg = data.default_config()
    cfg.name = "synthetic"
    cfg.train_size = 100
    cfg.pp_train = (
        "flip_lr|value_range(-1, 1)"  # The default random_crop(28, ...) is for 28 px Fashion-MNIST.
    )
    assert data.get_info(cfg).num_train == 100  # The trainer passes its config.data ConfigDict as is.
    as_json = dict(
        name="synthetic", pp_train="", synthetic=dict(image_shape=[5, 5, 2])
    )  # Lists become tuples.
    assert data.get_info(as_json).image_shape == (5, 5, 2)
