"""Which examples make up the global batch of a training step: a pure function of (n, batch, seed, step).

Because nothing depends on how many steps came before, an iterator started at step k yields exactly what an
uninterrupted run yields from step k on, which is what exact resume after preemption needs.

Epochs: each epoch is a fresh permutation of the n training examples keyed by (seed, epoch), cut into
floor(n / batch) global batches; the n mod batch examples left at the end of an epoch's permutation are
skipped for that epoch (a different set each epoch, so no example is systematically dropped).
"""

import functools

import numpy as np

from vitjax.data.errors import DataError

_EPOCH_TAG = 11  # Keeps the epoch permutations independent of other draws that share the seed.


def steps_per_epoch(n, global_batch_size):
    if global_batch_size > n:
        raise DataError(
            f"global batch size {global_batch_size} is larger than the training set ({n} examples); "
            f"use a smaller batch or a bigger train_size."
        )
    return n // global_batch_size


@functools.lru_cache(maxsize=2)  # The current epoch's permutation is reused by every step of that epoch.
def epoch_permutation(n, seed, epoch):
    perm = np.random.default_rng([_EPOCH_TAG, seed, epoch]).permutation(n)
    perm.flags.writeable = False
    return perm


def global_batch_indices(step, n, global_batch_size, seed, repeats=1):
    """Indices (into the n training examples) of the global batch of `step`, in batch order.

    repeats=R (repeated augmentation): global_batch_size / R examples, the batch their indices R times
    over ([a b c a b c], not [a a b b c c]: process shares and mixing's neighbours then pair different
    examples). The epoch keeps its steps, so it takes the first n / R or so of its permutation.
    """
    distinct = check_repeats(global_batch_size, repeats)
    epoch, k = divmod(step, steps_per_epoch(n, global_batch_size))
    return np.tile(epoch_permutation(n, seed, epoch)[k * distinct : (k + 1) * distinct], repeats)


def check_repeats(global_batch_size, repeats):
    """Distinct examples per global batch under repeated augmentation; DataError unless R divides the batch."""
    if global_batch_size % repeats:
        raise DataError(
            f"global batch size {global_batch_size} is not divisible by repeated_augmentation={repeats}; "
            f"each example appears R times in a batch: use a batch size that is a multiple of {repeats}."
        )
    return global_batch_size // repeats


def process_slice(global_batch_size, process_index, process_count):
    """This process's rows of every global batch: the process_index-th of process_count equal blocks."""
    if process_count < 1 or not 0 <= process_index < process_count:
        raise DataError(f"process_index {process_index} is not in [0, process_count={process_count}).")
    if global_batch_size <= 0 or global_batch_size % process_count:
        raise DataError(
            f"global batch size {global_batch_size} is not a positive multiple of the process count "
            f"{process_count}; each process must get the same number of examples."
        )
    local = global_batch_size // process_count
    return slice(process_index * local, (process_index + 1) * local)
