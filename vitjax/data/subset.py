"""Deterministic, nested training subsets (for data-scaling experiments: train on 1k, 10k, ... examples).

All subsets of a split come from ONE permutation keyed by `subset_seed`, so the first N examples of it are
also the first examples of any bigger subset: the 1k subset lies inside the 10k subset, and a curve over
subset sizes measures size, not luck of the draw.

Class-balanced subsets keep that property: class quotas grow monotonically with N (the N mod K leftover
examples go to the first classes of a seeded class order), and each class contributes its earliest examples
in the permutation.
"""

import numpy as np

from vitjax.data.errors import DataError

_PERMUTATION_TAG = 7  # Keeps this permutation independent of other draws that share the seed.
_CLASS_ORDER_TAG = 8


def subset_indices(labels, size, seed=0, class_balanced=False, num_classes=None, where="the train split"):
    """Indices (into `labels`' split, in permutation order) of the first `size` examples; None: all."""
    n = len(labels)
    if size is None:
        return np.arange(n)
    if size > n:
        raise DataError(f"train_size={size} is larger than {where} ({n} examples).")
    perm = np.random.default_rng([_PERMUTATION_TAG, seed]).permutation(n)
    if not class_balanced:
        return perm[:size]
    return perm[_balanced_positions(np.asarray(labels)[perm], size, seed, num_classes, where)]


def class_quotas(size, num_classes, seed=0):
    """Examples per class: floor(size/K), plus one for the first size mod K classes of a seeded order."""
    order = np.random.default_rng([_CLASS_ORDER_TAG, seed]).permutation(num_classes)
    quotas = np.full(num_classes, size // num_classes)
    quotas[order[: size % num_classes]] += 1
    return quotas


def _balanced_positions(permuted_labels, size, seed, num_classes, where):
    num_classes = num_classes or int(permuted_labels.max()) + 1
    quotas = class_quotas(size, num_classes, seed)
    # Rank of each example among the examples of its own class, in permutation order.
    rank = np.empty(len(permuted_labels), np.int64)
    for k in range(num_classes):
        members = np.flatnonzero(permuted_labels == k)
        if len(members) < quotas[k]:
            raise DataError(
                f"class_balanced train_size={size} needs {quotas[k]} examples of class {k}, but "
                f"{where} has only {len(members)}."
            )
        rank[members] = np.arange(len(members))
    return np.flatnonzero(rank < quotas[permuted_labels])
