"""Training targets: integer labels -> one-hot, and batch-level mixup (Zhang et al. 2018) of images and targets.

Mixup draws one lambda ~ Beta(alpha, alpha) per step, keyed by (seed, step) so it survives resume, and mixes
each image with its neighbour in the batch (the batch rolled by one); the batch order is already a random
permutation, so neighbours are random pairs. With several processes each mixes within its own share, so
with mixup on the global batch depends on the process count (the lambda does not).
"""

import itertools

import numpy as np

_MIXUP_TAG = 13


def mixup(images, targets, alpha, seed, step):
    """(lam * x + (1 - lam) * roll(x, 1)) for images and targets; mixed one-hot targets still sum to 1."""
    lam = np.float32(np.random.default_rng([_MIXUP_TAG, seed, step]).beta(alpha, alpha))
    mix = lambda x: lam * x + (1 - lam) * np.roll(x, 1, axis=0)
    return mix(images), mix(targets)


def train_dicts(numpy_batches, num_classes, mixup_alpha, seed, start_step):
    """(images, int labels) batches of steps start_step, ... -> {'image', 'labels': float32 [b, K]} dicts."""
    eye = np.eye(num_classes, dtype=np.float32)
    for step, (images, labels) in zip(itertools.count(start_step), numpy_batches):
        targets = eye[labels]
        if mixup_alpha > 0:
            images, targets = mixup(images, targets, mixup_alpha, seed, step)
        yield {"image": images, "labels": targets}
