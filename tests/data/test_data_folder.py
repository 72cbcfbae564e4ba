"""Image folder sources (PNGs written with tf.io.encode_png)."""

import os

import numpy as np
import pytest
import tensorflow as tf

from vitjax import data


def write_png(path, image):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tf.io.write_file(path, tf.io.encode_png(image))


def make_folder(root, sizes=None, channels=3, per_class=3):
    """root/{train,test}/{cat,dog}/i.png; image i of class c is filled with 10 * (c + 1) + i."""
    sizes = sizes or [(6, 6)]
    for split in ("train", "test"):
        for c, name in enumerate(["dog", "cat"]):  # Written unsorted: indices must follow sorted names.
            for i in range(per_class):
                h, w = sizes[i % len(sizes)]
                value = 10 * (["cat", "dog"].index(name) + 1) + i
                write_png(f"{root}/{split}/{name}/{i}.png", np.full((h, w, channels), value, np.uint8))
    return f"folder:{root}"


def test_folder_source_labels_and_pixels(tmp_path):
    name = make_folder(tmp_path)
    cfg = dict(name=name, pp_train="value_range(0, 255)", pp_eval="value_range(0, 255)")
    assert data.get_info(cfg) == data.DataInfo(num_train=6, num_test=6, num_classes=2, image_shape=(6, 6, 3))
    batch = list(data.eval_batches(cfg, "test", global_batch_size=6))[0]
    np.testing.assert_array_equal(batch["label"], [0, 0, 0, 1, 1, 1])  # cat = 0, dog = 1 (sorted).
    np.testing.assert_array_equal(batch["image"][:, 0, 0, 0], [10, 11, 12, 20, 21, 22])
    train = next(data.train_batches(cfg, global_batch_size=4))
    assert train["image"].shape == (4, 6, 6, 3)


def test_mixed_sizes_need_a_resize_before_training(tmp_path):
    name = make_folder(tmp_path, sizes=[(6, 6), (9, 7)])
    with pytest.raises(data.DataError, match=r"not one fixed size; add e.g. resize"):
        data.get_info(dict(name=name, pp_train="value_range(-1, 1)"))
    cfg = dict(
        name=name, pp_train="resize(5)|flip_lr|value_range(-1, 1)", pp_eval="resize(5)|value_range(-1, 1)"
    )
    assert data.get_info(cfg).image_shape == (5, 5, 3)
    batch = next(data.train_batches(cfg, global_batch_size=6))
    assert batch["image"].shape == (6, 5, 5, 3)
    evals = list(data.eval_batches(cfg, "test", global_batch_size=4))
    assert sum(int(b["mask"].sum()) for b in evals) == 6


def test_grayscale_and_colour_mix_becomes_rgb(tmp_path):
    make_folder(tmp_path, channels=3)
    write_png(f"{tmp_path}/train/cat/gray.png", np.full((6, 6, 1), 200, np.uint8))
    info = data.get_info(dict(name=f"folder:{tmp_path}", pp_train="to_rgb", pp_eval="to_rgb"))
    assert info.image_shape == (6, 6, 3) and info.num_train == 7


def test_folder_errors(tmp_path):
    name = make_folder(tmp_path / "a")
    tf.io.write_file(f"{tmp_path}/a/train/cat/broken.png", b"not a png")
    with pytest.raises(data.DataError, match="Cannot decode image .*broken.png"):
        data.get_info(dict(name=name))
    name = make_folder(tmp_path / "b")
    for f in os.listdir(tmp_path / "b/test/cat"):
        os.remove(tmp_path / "b/test/cat" / f)
    for f in os.listdir(tmp_path / "b/test/dog"):
        os.remove(tmp_path / "b/test/dog" / f)
    with pytest.raises(data.DataError, match="split 'test' is empty"):
        data.get_info(dict(name=name))
    with pytest.raises(data.MissingDataError, match="does not exist"):
        data.get_info(dict(name=f"folder:{tmp_path}/nowhere"))
