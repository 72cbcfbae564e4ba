"""A dataset in one .npz file ('npz:/path/data.npz'): arrays you already have, with no tfds builder.

A path may be a URL (gs://...; read through vitjax/storage.py).

Keys: '<split>_images' (uint8 [N, H, W, C]), '<split>_labels' (int [N]) for each split, and optionally
'num_classes' (otherwise 1 + the largest label over all splits in the file).
"""

import numpy as np

from vitjax import storage
from vitjax.data.errors import DataError, MissingDataError


def load(path, split):
    """(images, labels, num_classes) of `split`; checking them is left to sources.validate."""
    if not storage.exists(path):
        raise MissingDataError(f"npz data file {path} does not exist.")
    with np.load(storage.readable(path), allow_pickle=False) as f:
        keys = set(f.files)
        want = (f"{split}_images", f"{split}_labels")
        if not set(want) <= keys:
            raise DataError(f"{path} has no split {split!r}: it needs keys {want}, has {sorted(keys)}.")
        images, labels = f[want[0]], f[want[1]]
        if "num_classes" in keys:
            num_classes = int(f["num_classes"])
        else:
            all_labels = [f[k] for k in keys if k.endswith("_labels") and f[k].size]
            num_classes = 1 + max(int(np.max(l)) for l in all_labels) if all_labels else 0
    return images, labels, num_classes
