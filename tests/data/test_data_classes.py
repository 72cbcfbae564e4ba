"""`data.classes`: training, validating and testing on some classes only, relabelled 0..k-1 (the transfer
probe pre-trains on classes A and probes classes B; experiments/transfer.py).

Run: nice -n 19 python -m pytest tests/data/test_data_classes.py -q (a few seconds, no model). Each
example of the npz file below carries its own index in its pixels, so the tests can tell which original
examples a split holds: only the kept classes, relabelled in the given order; the validation split
disjoint from every training subset; subsets nested across train_size.
"""
import numpy as np
import pytest

from vitjax import data
from vitjax.data import config, pipeline, sources

NUM_CLASSES = 6


def _npz(tmp_path, num_train=1_200, num_test=300):
    """npz data of 6 classes whose example i has pixels (i // 256, i % 256) and label i % 6 (train; test
    indices continue after the train split's, so no test image equals a training image)."""
    def split(start, n):
        index = np.arange(start, start + n)
        images = np.zeros((n, 2, 2, 1), np.uint8)
        images[:, 0, 0, 0], images[:, 0, 1, 0] = index // 256, index % 256
        return images, (index * 7 + 3) % NUM_CLASSES

    (train_x, train_y), (test_x, test_y) = split(0, num_train), split(num_train, num_test)
    path = tmp_path / "indexed.npz"
    np.savez(path, train_images=train_x, train_labels=train_y, test_images=test_x, test_labels=test_y,
             num_classes=NUM_CLASSES)
    return f"npz:{path}"


def _original(split):
    """(original index, original label) of each example of an ArraySplit."""
    index = split.images[:, 0, 0, 0].astype(np.int64) * 256 + split.images[:, 0, 1, 0]
    return index, (index * 7 + 3) % NUM_CLASSES


def _cfg(name, **changes):
    return config.resolve(dict(name=name, pp_train="", pp_eval="", classes=(4, 1, 2), **changes))


def test_kept_classes_are_relabelled_in_the_given_order_in_every_split(tmp_path):
    cfg = _cfg(_npz(tmp_path), val_size=60)
    info = data.get_info(cfg)
    assert info.num_classes == 3 and info.num_test == 150 and info.num_val == 60 and info.num_train == 600 - 60
    for split in (sources.load(cfg, "test"), pipeline.val_subset(cfg), pipeline.train_subset(cfg)):
        _, original = _original(split)
        assert set(original) == {4, 1, 2} and split.num_classes == 3
        np.testing.assert_array_equal(split.labels, np.array([9, 1, 2, 9, 0])[original])  # 4->0, 1->1, 2->2
    batches = list(data.eval_batches(cfg, "test", global_batch_size=64))
    assert sum(int(b["mask"].sum()) for b in batches) == 150
    assert set(np.concatenate([b["label"][b["mask"]] for b in batches])) == {0, 1, 2}


@pytest.mark.parametrize("class_balanced", [False, True])
def test_validation_is_disjoint_from_nested_training_subsets_of_the_kept_classes(tmp_path, class_balanced):
    name = _npz(tmp_path)
    held, _ = _original(pipeline.val_subset(_cfg(name, val_size=60)))
    assert len(set(held)) == 60 and np.bincount(pipeline.val_subset(_cfg(name, val_size=60)).labels).tolist() == [20] * 3
    previous = set()
    for size in (30, 90, 300, 540):
        split = pipeline.train_subset(_cfg(name, val_size=60, train_size=size, class_balanced=class_balanced))
        picked, original = _original(split)
        assert len(set(picked)) == size and not set(picked) & set(held) and set(original) <= {4, 1, 2}
        assert previous <= set(picked)  # nested across train_size
        if class_balanced:
            assert np.bincount(split.labels, minlength=3).tolist() == [size // 3] * 3
        previous = set(picked)
    assert len(previous | set(held)) == 600  # every kept example is trained on or held out


def test_no_classes_keeps_every_class(tmp_path):
    cfg = config.resolve(dict(name=_npz(tmp_path), pp_train="", pp_eval=""))
    assert data.get_info(cfg).num_classes == NUM_CLASSES and len(sources.load(cfg, "train")) == 1_200


@pytest.mark.parametrize("classes, message", [
    ((1, 6), r"class id\(s\) \[6\] out of range; .* has classes 0..5"),
    ((2, 3, 2), r"names class\(es\) \[2\] more than once"),
    ((-1, 2), r"class ids \(integers >= 0\)"),
])
def test_bad_class_lists_are_refused(tmp_path, classes, message):
    with pytest.raises(data.DataError, match=message):
        data.get_info(dict(name=_npz(tmp_path), pp_train="", pp_eval="", classes=classes))


def test_classes_survive_the_command_line():
    from vitjax import config as config_layer
    flags = config_layer.override_flags({"data.classes": (5,)})
    text, _ = config_layer.overrides_from_argv(flags)
    c = config_layer.load_config("tests/train/tiny_config.py")
    config_layer.apply_overrides(c, text)
    assert tuple(c.data.classes) == (5,)
