"""Synthetic, learnable data for tests and benchmarks: each class is a fixed random pattern plus noise.

The pattern carries most of the signal, so even a tiny model's loss falls within a few steps, which
lets end-to-end tests check that training works without any dataset on disk.
"""

import numpy as np

_SPLIT_TAGS = {"train": 1, "test": 2}  # Train and test draw different examples around the same patterns.


def make(split, num_train, num_test, image_shape, num_classes, seed):
    """(uint8 images [N, H, W, C], int64 labels [N]) for split 'train' or 'test'."""
    if split not in _SPLIT_TAGS:
        raise ValueError(f"synthetic data has splits 'train' and 'test', not {split!r}.")
    num = num_train if split == "train" else num_test
    patterns = np.random.default_rng([seed, 0]).uniform(0, 255, (num_classes, *image_shape))
    rng = np.random.default_rng([seed, _SPLIT_TAGS[split]])
    # Balanced classes in random order.
    labels = rng.permutation(np.arange(num) % num_classes)
    noise = rng.uniform(0, 255, (num, *image_shape))
    images = 0.6 * patterns[labels] + 0.4 * noise
    return images.round().astype(np.uint8), labels.astype(np.int64)
