"""Deterministic, nested training subsets (for data-scaling experiments: train on 1k, 10k, ... examples),
and the validation split held out of the train split before any subset is taken.

All subsets of a split come from ONE permutation keyed by `subset_seed`, so the first N examples of it are
also the first examples of any bigger subset: the 1k subset lies inside the 10k subset, and a curve over
subset sizes measures size, not luck of the draw.

Class-balanced subsets keep that property: class quotas grow monotonically with N (the N mod K leftover
examples go to the first classes of a seeded class order), and each class contributes its earliest examples
in the permutation.

The validation split (`val_size` examples, `holdout_indices`) is class-balanced the same way, from a
permutation of its own keyed by `val_seed` alone: it stays the same set whatever the subset size, subset
seed or training seed, so validation accuracies of a data-scaling sweep are comparable. The training
subsets are then drawn from the examples it leaves (`training_indices`); with val_size=0 nothing is held
out and they are exactly `subset_indices`.
"""

import numpy as np

from vitjax.data.errors import DataError

_PERMUTATION_TAG = 7  # Keeps this permutation independent of other draws that share the seed.
_CLASS_ORDER_TAG = 8
_HOLDOUT_TAG = 9  # The validation split's permutation, independent of the subsets' and the training's.


def subset_indices(labels, size, seed=0, class_balanced=False, num_classes=None, where="the train split"):
    """Indices (into `labels`' split, in permutation order) of the first `size` examples; None: all."""
    n = len(labels)
    if size is None:
        return np.arange(n)
    check_train_size(size, n, where)
    perm = np.random.default_rng([_PERMUTATION_TAG, seed]).permutation(n)
    if not class_balanced:
        return perm[:size]
    what = f"class_balanced train_size={size}"
    return perm[_balanced_positions(np.asarray(labels)[perm], size, seed, num_classes, what, where)]


def check_train_size(size, num_examples, where):
    """Raises DataError when a train subset of `size` examples does not fit in `num_examples`."""
    if size is not None and size > num_examples:
        raise DataError(f"train_size={size} is larger than {where} ({num_examples} examples).")


def training_where(where, val_size):
    """`where` (the train split, in error messages) as what is left of it once `val_size` are held out."""
    return f"{where} less its val_size={val_size} validation examples" if val_size else where


def remaining_size(num_examples, num_classes, val_size, where="the train split"):
    """Examples of a split of `num_examples` left for training once `val_size` are held out.

    Raises DataError when no validation split of that size can be held out: one that leaves nothing to
    train on, or one smaller than the number of classes (some class would have no validation example).
    """
    if val_size == 0:
        return num_examples
    if val_size >= num_examples:
        raise DataError(
            f"val_size={val_size} would hold out all of {where} ({num_examples} examples), leaving none to "
            f"train on; use val_size < {num_examples} (e.g. a tenth, {num_examples // 10})."
        )
    if val_size < num_classes:
        raise DataError(
            f"val_size={val_size} is smaller than the {num_classes} classes, so some class would have no "
            f"validation example; use val_size >= {num_classes}."
        )
    return num_examples - val_size


def holdout_indices(labels, size, seed=0, num_classes=None, where="the train split"):
    """Indices (into `labels`' split, in permutation order) of its validation split: `size` examples with
    class_quotas(size) per class, each class's earliest in a permutation keyed by `seed`. Empty for 0."""
    labels = np.asarray(labels)
    num_classes = num_classes or int(labels.max()) + 1
    remaining_size(len(labels), num_classes, size, where)
    if size == 0:
        return np.empty(0, np.int64)
    perm = np.random.default_rng([_HOLDOUT_TAG, seed]).permutation(len(labels))
    return perm[_balanced_positions(labels[perm], size, seed, num_classes, f"val_size={size}", where)]


def training_indices(labels, size, seed=0, class_balanced=False, num_classes=None, where="the train split",
                     val_size=0, val_seed=0):
    """`subset_indices` over the examples the validation split (`holdout_indices(val_size, val_seed)`)
    leaves, as indices into the whole split: disjoint from it, nested in `size` as ever."""
    held = holdout_indices(labels, val_size, val_seed, num_classes, where)
    rest = np.delete(np.arange(len(labels)), held)  # In split order, as subset_indices expects.
    picked = subset_indices(np.asarray(labels)[rest], size, seed, class_balanced, num_classes,
                            training_where(where, val_size))
    return rest[picked]


def class_quotas(size, num_classes, seed=0):
    """Examples per class: floor(size/K), plus one for the first size mod K classes of a seeded order."""
    order = np.random.default_rng([_CLASS_ORDER_TAG, seed]).permutation(num_classes)
    quotas = np.full(num_classes, size // num_classes)
    quotas[order[: size % num_classes]] += 1
    return quotas


def _balanced_positions(permuted_labels, size, seed, num_classes, what, where):
    """Positions of the first class_quotas(size) examples of each class; `what` names the request in errors."""
    num_classes = num_classes or int(permuted_labels.max()) + 1
    quotas = class_quotas(size, num_classes, seed)
    # Rank of each example among the examples of its own class, in permutation order.
    rank = np.empty(len(permuted_labels), np.int64)
    for k in range(num_classes):
        members = np.flatnonzero(permuted_labels == k)
        if len(members) < quotas[k]:
            raise DataError(
                f"{what} needs {quotas[k]} examples of class {k}, but {where} has only {len(members)}."
            )
        rank[members] = np.arange(len(members))
    return np.flatnonzero(rank < quotas[permuted_labels])
