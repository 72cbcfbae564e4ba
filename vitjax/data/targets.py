"""Training targets: integer labels -> one-hot, then batch-level Mixup or CutMix (mixing.py) per step."""

import itertools

import numpy as np

from vitjax.data import mixing


def train_dicts(numpy_batches, num_classes, cfg, seed, start_step):
    """(images, int labels) batches of steps start_step, ... -> {'image', 'labels': float32 [b, K]} dicts,
    mixed as the data config `cfg` (mixup_alpha, cutmix_alpha, mixup_prob, mixup_switch_prob) says."""
    eye = np.eye(num_classes, dtype=np.float32)
    for step, (images, labels) in zip(itertools.count(start_step), numpy_batches):
        mix = mixing.draw(cfg, seed, step, images.shape[1], images.shape[2])
        images, targets = mixing.apply(images, eye[labels], mix)
        yield {"image": images, "labels": targets}
