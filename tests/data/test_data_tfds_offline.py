"""tfds sources with the network cut: Fashion-MNIST prepared offline from the Debian package, streaming,
and the errors for unknown or unprepared datasets. Any connection attempt raises AND is recorded, and every
test asserts none was made, so "works offline" is proven rather than assumed."""

import gzip
import os
import shutil

import numpy as np
import pytest

from vitjax import data
from vitjax.data import tfds_source
from tests.data.offline_fashion_mnist import block_network, needs_debian_files

@needs_debian_files
def test_fashion_mnist_prepared_offline_on_first_use(offline):
    data_dir, attempts = offline
    # Explicit preparation of an already prepared dir is a cheap no-op that returns the dir.
    assert data.prepare("fashion_mnist", data_dir=data_dir) == data_dir
    # A slice of the train split keeps this test fast; the full split is the same code with more examples.
    cfg = dict(
        name="fashion_mnist",
        data_dir=data_dir,
        train_split="train[:5000]",
        train_size=1000,
        pp_train="value_range(0, 1)",
    )
    assert data.get_info(cfg).num_train == 1000
    batch = next(data.train_batches(cfg, global_batch_size=100))
    assert batch["image"].shape == (100, 28, 28, 1) and batch["labels"].shape == (100, 10)
    assert 0 <= batch["image"].min() and batch["image"].max() <= 1 and batch["image"].max() > 0.5
    assert not attempts


def read_idx(name, offset):
    with gzip.open(os.path.join(tfds_source.DEBIAN_DIR, name)) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


@needs_debian_files
def test_fashion_mnist_test_split_is_the_debian_data(offline):
    data_dir, attempts = offline
    cfg = dict(
        name="fashion_mnist", data_dir=data_dir, pp_eval="value_range(0, 255)", pp_train="value_range(0, 1)"
    )
    batches = data.eval_batches(cfg, "test", global_batch_size=4096)
    images = np.concatenate([b["image"][b["mask"]] for b in batches]).astype(np.uint8)
    labels = np.concatenate([b["label"][b["mask"]] for b in batches])
    assert len(batches) == 3 and len(labels) == 10_000
    np.testing.assert_array_equal(np.bincount(labels, minlength=10), [1000] * 10)
    # Same (image, label) pairs as the raw files; tfds stores them in its own shuffled order.
    raw_images = read_idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 784)
    raw_labels = read_idx("t10k-labels-idx1-ubyte.gz", 8)
    pairs = lambda x, y: sorted(bytes(row) + bytes([label]) for row, label in zip(x, y))
    assert pairs(images.reshape(-1, 784), labels) == pairs(raw_images, raw_labels)
    assert not attempts


@needs_debian_files
def test_streaming_path_shards_and_pads(offline):
    data_dir, attempts = offline
    cfg = dict(name="fashion_mnist", data_dir=data_dir, in_memory=False, shuffle_buffer=100)
    it = data.train_batches(cfg, global_batch_size=64, seed=3, process_index=1, process_count=2)
    for _ in range(2):
        batch = next(it)
        assert batch["image"].shape == (32, 28, 28, 1) and batch["labels"].shape == (32, 10)
    np.testing.assert_allclose(batch["labels"].sum(1), 1)
    mixed = next(data.train_batches(dict(cfg, cutmix_alpha=1.0), global_batch_size=64, seed=3))
    np.testing.assert_allclose(mixed["labels"].sum(1), 1, rtol=1e-6)  # CutMix runs on streamed batches too
    with pytest.raises(data.DataError, match=r"repeated_augmentation=3 repeats examples .* needs the dataset in memory"):
        data.get_info(dict(cfg, repeated_augmentation=3))
    cfg["test_split"] = "test[:1001]"  # Odd size: the processes' parts differ by one, padding evens them out.
    parts = [
        data.eval_batches(cfg, "test", global_batch_size=200, process_index=p, process_count=2)
        for p in range(2)
    ]
    assert len(parts[0]) == len(parts[1]) == 6 and parts[0].num_examples == 1001
    assert sum(int(b["mask"].sum()) for part in parts for b in part) == 1001
    assert not attempts


def test_unknown_and_unprepared_tfds_names_fail_without_network(tmp_path):
    with pytest.MonkeyPatch.context() as mp:
        attempts = block_network(mp)
        with pytest.raises(data.DataError, match="'fashion_mnits'.*Did you mean 'fashion_mnist'"):
            data.get_info(dict(name="fashion_mnits", data_dir=str(tmp_path)))
        with pytest.raises(
            data.MissingDataError, match="'cifar10' is not prepared.*vitjax data prepare cifar10"
        ):
            data.get_info(dict(name="cifar10", data_dir=str(tmp_path)))
        assert not attempts


def test_missing_debian_files_say_how_to_get_them(tmp_path):
    with pytest.raises(data.MissingDataError, match=r"apt-get install dataset-fashion-mnist.*vitjax data prepare fashion_mnist --download"):
        tfds_source.prepare_offline(str(tmp_path / "tfds"), raw_dir=str(tmp_path / "nowhere"))


@needs_debian_files
def test_a_prepared_dataset_without_a_registered_builder_is_read_from_its_directory(offline, tmp_path):
    # As ImageNet-21k, or a dataset the user built with tfds: no builder code, only DATA_DIR/<name>/<version>/.
    data_dir, attempts = offline
    (version,) = os.listdir(os.path.join(data_dir, "fashion_mnist"))
    shutil.copytree(os.path.join(data_dir, "fashion_mnist", version), tmp_path / "my_fashion" / version)
    cfg = dict(name="my_fashion", data_dir=str(tmp_path), train_split="train[:1000]", pp_train="value_range(0, 1)")
    assert data.get_info(cfg) == data.DataInfo(num_train=1000, num_test=10_000, num_classes=10,
                                               image_shape=(28, 28, 1))
    batch = next(data.train_batches(cfg, global_batch_size=100))
    assert batch["image"].shape == (100, 28, 28, 1) and batch["labels"].shape == (100, 10)
    assert data.get_info({**cfg, "name": f"my_fashion:{version}"}).num_train == 1000  # a version named
    with pytest.raises(data.DataError, match=r"not a prepared tfds dataset in data_dir"):
        data.get_info({**cfg, "name": "my_fashion:9.9.9"})
    assert not attempts


@pytest.mark.parametrize("name, fix", [
    ("mnist", r"`vitjax data prepare mnist --download` downloads and prepares it \(needs internet\)"),
    ("imagenet2012", r"tfds cannot download it: put its files in .*/downloads/manual .* then run `vitjax data "
                     r"prepare imagenet2012`"),
])
def test_data_prepare_without_its_files_says_how_in_one_line(tmp_path, monkeypatch, name, fix):
    from vitjax import cli

    attempts = block_network(monkeypatch)
    with pytest.raises(SystemExit, match=rf"vitjax data prepare: error: tfds dataset '{name}' is not prepared .*{fix}"):
        cli.main(["data", "prepare", name, "--data_dir", str(tmp_path)])
    with pytest.raises(data.MissingDataError, match=fix):  # what training on it says
        data.get_info(dict(name=name, data_dir=str(tmp_path)))
    assert not attempts
