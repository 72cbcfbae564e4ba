"""`train_batches` and `eval_batches`: per-process numpy batches, from an in-memory split or streamed
(devices.py's `to_global` / `prefetch` turn them into global jax.Arrays).

In memory (Fashion-MNIST, CIFAR, folders, npz, synthetic): each step's examples (`global_batch_indices`) and
their augmentation uniforms (`batch_uniforms`) are picked in numpy, then one traced TF function runs the pp
ops on the batch. Everything is a function of (cfg, seed, step, global batch size), so resume is exact.
Large tfds datasets stream instead (`_streamed_train_batches`); their resume is approximate.
"""

import dataclasses
import functools
import itertools
import math

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from vitjax.data import config as config_lib
from vitjax.data import mixing, sources, tfds_source
from vitjax.data.config import DataError
from vitjax.data.preprocess import UNIFORMS_PER_OP, Preprocess

VAL = "val"  # eval_batches' name for the validation split: held out by data.val_size, or data.val_split.


def _checked(cfg, global_batch_size, process_index, process_count):
    """Resolved cfg, DataInfo and this process's rows of a global batch, or an error before any data flows."""
    cfg = config_lib.resolve(cfg)
    rows = process_slice(global_batch_size, process_index, process_count)
    return cfg, sources.get_info(cfg), rows


def train_subset(cfg):
    """The in-memory train split restricted to the configured nested subset (never the validation split)."""
    split = sources.load(cfg, "train")
    idx = sources.training_indices(
        split.labels, cfg.train_size, cfg.subset_seed, cfg.class_balanced, split.num_classes, split.where,
        cfg.val_size, cfg.val_seed,
    )
    return split.take(idx)


def val_subset(cfg):
    """The validation split: the `val_size` examples held out of the in-memory train split."""
    split = sources.load(cfg, "train")
    idx = sources.holdout_indices(split.labels, cfg.val_size, cfg.val_seed, split.num_classes, split.where)
    return dataclasses.replace(split.take(idx), where=f"the validation split held out of {split.where}")


def _eval_split(cfg, split):
    """The in-memory examples `eval_batches` goes over (see there)."""
    if split == "train":
        return train_subset(cfg)
    if split == VAL and cfg.val_size:
        return val_subset(cfg)
    return sources.load(cfg, split)  # 'val' here is the split data.val_split names.


def _preprocessor(split, pp, image_shape):
    """(fn(raw images, uniforms) -> float32 numpy [b, *image_shape], num_ops) for a split's raw images.

    Called directly per batch rather than through tf.data: the ops are batched already, and JAX's async
    dispatch overlaps this host work with the running train step.
    """
    channels = split.channels if split.encoded else None
    return _traced_preprocessor(pp, tuple(image_shape), split.image_shape, channels)


@functools.lru_cache(maxsize=8)  # Periodic evaluations reuse the traced function instead of retracing.
def _traced_preprocessor(pp, image_shape, raw_shape, channels):
    if channels is not None:  # Encoded images whose sizes vary until the ops fix them: one at a time.
        one, num_ops = make_example_fn(pp, image_shape, channels)
        image_spec = tf.TensorSpec([None], tf.string)
        batch = lambda x, u: tf.map_fn(
            lambda xu: one(*xu), (x, u), fn_output_signature=tf.TensorSpec(image_shape, tf.float32)
        )
    else:
        batch, num_ops = make_batch_fn(pp, image_shape)
        image_spec = tf.TensorSpec([None, *raw_shape], tf.uint8)
    traced = tf.function(
        batch,
        autograph=False,
        input_signature=[image_spec, tf.TensorSpec([None, num_ops, UNIFORMS_PER_OP], tf.float32)],
    )
    return (lambda images, uniforms: traced(images, uniforms).numpy()), num_ops


def train_batches(cfg, *, global_batch_size, start_step=0, seed=0, process_index=0, process_count=1):
    """Infinite iterator of {'image': float32 [b, H, W, C], 'labels': float32 [b, K]} with b = this process's
    share of the global batch; the batch of step t depends only on (cfg, seed, t, global_batch_size)."""
    cfg, info, rows = _checked(cfg, global_batch_size, process_index, process_count)
    if seed < 0 or start_step < 0:
        raise DataError(f"seed and start_step must be >= 0, got seed={seed}, start_step={start_step}.")
    if sources.is_streaming(cfg, "train"):
        return _streamed_train_batches(
            cfg, info, global_batch_size, start_step, seed, process_index, process_count
        )
    return _in_memory_train(cfg, info, train_subset(cfg), global_batch_size, start_step, seed, rows)


def _in_memory_train(cfg, info, split, global_batch_size, start_step, seed, rows):
    n = len(split)
    steps_per_epoch(n, global_batch_size)  # Fails now if not even one batch fits.
    check_repeats(global_batch_size, cfg.repeated_augmentation)
    preprocess, num_ops = _preprocessor(split, cfg.pp_train, info.image_shape)

    def host_batches():
        for step in itertools.count(start_step):
            idx = global_batch_indices(step, n, global_batch_size, seed, cfg.repeated_augmentation)[rows]
            u = batch_uniforms(seed, step, global_batch_size, rows, num_ops)
            yield preprocess(split.images[idx], u), split.labels[idx]

    return train_dicts(host_batches(), info.num_classes, cfg, seed, start_step)


class EvalBatches:
    """Finite, re-iterable batches over a whole split; `len()` is the number of batches (same on every process).

    Each yields {'image': float32 [b, H, W, C], 'label': int32 [b], 'mask': bool [b]}; the last global batch is
    padded with mask=False rows (zero images, label 0), so every example is counted exactly once.
    `num_examples` is the split's size over all processes.
    """

    def __init__(self, make_iterator, num_batches, num_examples):
        self._make_iterator = make_iterator
        self.num_batches = num_batches
        self.num_examples = num_examples

    def __len__(self):
        return self.num_batches

    def __iter__(self):
        return self._make_iterator()


def eval_batches(cfg, split="test", *, global_batch_size, process_index=0, process_count=1):
    """EvalBatches over `split`: 'test' (cfg.test_split), 'train' (the configured train subset, in subset
    order), 'val' (the validation split: the examples val_size holds out of the train split, or the split
    val_split names) or a literal split name. Preprocessed with pp_eval, in the split's order."""
    cfg, info, rows = _checked(cfg, global_batch_size, process_index, process_count)
    if split == VAL and not config_lib.has_validation(cfg):
        raise DataError(
            f"split {VAL!r} is the validation split, but val_size is 0 and val_split is empty; set "
            f"val_size=N (e.g. a tenth of an in-memory train split) to hold one out, or val_split to name one."
        )
    # A held-out validation split is as streamed as the train split it comes from.
    if sources.is_streaming(cfg, "train" if split == VAL and cfg.val_size else split):
        return _streamed_eval_batches(cfg, info, split, global_batch_size, process_index, process_count)
    data = _eval_split(cfg, split)
    if data.num_classes != info.num_classes:
        raise DataError(f"{data.where} has {data.num_classes} classes, the train split {info.num_classes}.")
    # A literal split (say 'validation') may hold images of another size than the test split.
    if sources.pp_output_shape(cfg.pp_eval, data, "pp_eval") != info.image_shape:
        raise DataError(
            f"pp_eval {cfg.pp_eval!r} gives {data.where} images a shape other than the model input "
            f"{info.image_shape}."
        )
    n = len(data)
    num_batches = math.ceil(n / global_batch_size)

    preprocess, num_ops = _preprocessor(data, cfg.pp_eval, info.image_shape)

    def make_iterator():
        for i in range(num_batches):
            pos = i * global_batch_size + np.arange(rows.start, rows.stop)
            mask = pos < n
            idx = np.where(
                mask, pos, 0
            )  # Padding rows repeat example 0, then are zeroed; the mask hides them.
            # Random ops in pp_eval (unusual) get fixed draws: evaluation must not vary between calls.
            images = preprocess(
                data.images[idx], batch_uniforms(0, i, global_batch_size, rows, num_ops)
            )
            if not mask.all():
                images = np.where(mask[:, None, None, None], images, np.float32(0))
            yield {
                "image": images,
                "label": np.where(mask, data.labels[idx], 0).astype(np.int32),
                "mask": mask,
            }

    return EvalBatches(make_iterator, num_batches, n)


# Streaming tfds input for datasets too big for memory (imagenet2012 and the like).
#
# Each process reads its own part of the split (`tfds.split_for_jax_process`), shuffles it through a buffer
# and preprocesses on the fly. Differences from the in-memory pipeline, by necessity:
# - Resume is approximate: a restart at step k reseeds the shuffle with (seed, k), so the run continues with
#   a fresh order rather than the exact examples an uninterrupted run would have seen. Augmentations are
#   still keyed by (seed, step, position).
# - train_size takes the first N examples of train_split in tfds's stored order (`train[:N]`, or
#   `train[K:K+N]` for train_split `train[K:]`; nested; tfds shuffles once when preparing), not a permutation
#   keyed by subset_seed; class_balanced subsets and a validation split held out by val_size are not
#   available. A validation split is named instead (data.val_split, e.g. `train[99%:]` with train_split
#   `train[:99%]`) and streamed once per evaluation like the test split.
# - Batches may mix epochs (the stream repeats, no example is dropped at epoch ends).
# - repeated_augmentation > 1 is refused (sources.get_info): repeating examples within a batch needs them at
#   hand.

_SHUFFLE_TAG = 17


def _train_split(cfg):
    split = sources.split_name(cfg, "train")
    if cfg.val_size:
        raise DataError(
            f"val_size={cfg.val_size} holds out a validation split, which needs the dataset in memory; "
            f"{cfg.name!r} streams. Set in_memory=True if it fits, or name a split instead: val_size=0, "
            f"val_split='train[99%:]' with train_split='train[:99%]' (any disjoint tfds slices)."
        )
    if cfg.class_balanced:
        raise DataError(
            f"class_balanced subsets need the dataset in memory; {cfg.name!r} streams. Set "
            f"in_memory=True if it fits, or drop class_balanced."
        )
    if cfg.train_size is None:
        return split
    return tfds_source.first_examples(cfg.name, cfg.data_dir, split, cfg.train_size)


def _streamed_train_batches(cfg, info, global_batch_size, start_step, seed, process_index, process_count):
    local = global_batch_size // process_count
    first_row = process_index * local
    split = tfds.split_for_jax_process(
        _train_split(cfg), process_index=process_index, process_count=process_count, drop_remainder=True
    )
    shuffle_seed = int(np.random.default_rng([_SHUFFLE_TAG, seed, start_step, process_index]).integers(2**31))
    fn, num_ops = make_example_fn(cfg.pp_train, info.image_shape)

    def example(count, image_label):
        image, label = image_label
        step = start_step + count // local
        return fn(image, example_uniforms(seed, step, first_row + count % local, num_ops)), label

    ds = tfds_source.as_dataset(cfg.name, cfg.data_dir, split, shuffle_seed=shuffle_seed)
    ds = ds.repeat().shuffle(cfg.shuffle_buffer, seed=shuffle_seed).enumerate()
    ds = ds.map(example, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    ds = ds.batch(local, drop_remainder=True).prefetch(cfg.prefetch)
    return train_dicts(ds.as_numpy_iterator(), info.num_classes, cfg, seed, start_step)


def _streamed_eval_batches(cfg, info, split, global_batch_size, process_index, process_count):
    """Every process reads one of process_count near-equal parts and pads to the largest part's batch count."""
    local = global_batch_size // process_count
    held_out = split == "val" and not cfg.val_split  # val_size's split: _train_split refuses it
    name = _train_split(cfg) if split == "train" or held_out else sources.split_name(cfg, split)
    parts = tfds.even_splits(name, n=process_count, drop_remainder=False)
    counts = [tfds_source.describe(cfg.name, cfg.data_dir, p)[0] for p in parts]
    num_batches = math.ceil(max(counts) / local)
    fn, num_ops = make_example_fn(cfg.pp_eval, info.image_shape)
    padding = num_batches * local - counts[process_index]

    def example(count, image_label):
        image, label = image_label
        u = example_uniforms(0, count // local, process_index * local + count % local, num_ops)
        return fn(image, u), tf.cast(label, tf.int32), True

    def make_iterator():
        ds = tfds_source.as_dataset(cfg.name, cfg.data_dir, parts[process_index]).enumerate()
        ds = ds.map(example, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        pad = tf.data.Dataset.from_tensors(
            (tf.zeros(info.image_shape, tf.float32), tf.constant(0, tf.int32), False)
        ).repeat(padding)
        ds = ds.concatenate(pad).batch(local, drop_remainder=True).prefetch(cfg.prefetch)
        for images, labels, mask in ds.as_numpy_iterator():
            yield {"image": images, "label": labels, "mask": mask}

    return EvalBatches(make_iterator, num_batches, sum(counts))


# Which examples make up the global batch of a training step: a pure function of (n, batch, seed, step).
#
# Because nothing depends on how many steps came before, an iterator started at step k yields exactly what
# an uninterrupted run yields from step k on, which is what exact resume after preemption needs.
#
# Epochs: each epoch is a fresh permutation of the n training examples keyed by (seed, epoch), cut into
# floor(n / batch) global batches; the n mod batch examples left at the end of an epoch's permutation are
# skipped for that epoch (a different set each epoch, so no example is systematically dropped).

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


# The random numbers behind augmentations: per-image uniforms keyed by (run seed, step, position).
#
# `position` is the image's row in the GLOBAL batch, so an image gets the same augmentation whichever
# process handles it and however many steps ran before (exact resume). Preprocessing ops only transform
# these uniforms (see preprocess.py); they draw nothing themselves.

_AUGMENT_TAG = 19


def batch_uniforms(seed, step, global_batch_size, rows, num_ops):
    """float32 [len(rows), num_ops, UNIFORMS_PER_OP] for the rows `rows` (a slice) of one global batch."""
    rng = np.random.default_rng([_AUGMENT_TAG, seed, step])
    return rng.random((global_batch_size, num_ops, UNIFORMS_PER_OP), dtype=np.float32)[rows]


def example_uniforms(seed, step, position, num_ops):
    """float32 [num_ops, UNIFORMS_PER_OP] for one image, in TF (for streamed data, where no numpy runs).

    Keyed by the same triple as batch_uniforms, though not equal to its numbers.
    """
    base = tf.stack([tf.constant(seed, tf.int64), tf.cast(step, tf.int64)])
    key = tf.random.experimental.stateless_fold_in(base, tf.cast(position, tf.int64))
    return tf.random.stateless_uniform([num_ops, UNIFORMS_PER_OP], seed=key)


# Raw images -> model input as tf.data map functions: decoding, the pp ops, the final dtype and shape check.
#
# Images of one size go through the ops as whole batches (fast). Images whose sizes vary (encoded image
# folders of mixed sizes, streamed ImageNet) go through them one at a time, as batches of one, until the ops
# have brought them to one size and they can be batched.

def make_batch_fn(pp, image_shape):
    """fn(uint8 images [b, H, W, C], uniforms [b, num_ops, U]) -> float32 [b, *image_shape]."""
    ops = Preprocess(pp)

    def fn(images, uniforms):
        out = tf.cast(ops(images, uniforms), tf.float32)
        return tf.ensure_shape(out, [None, *image_shape])

    return fn, ops.num_ops


def make_example_fn(pp, image_shape, channels=None):
    """fn(one image, uniforms [num_ops, U]) -> float32 image_shape.

    `channels`: the image is encoded bytes, decoded to this many channels first (None: already decoded).
    """
    ops = Preprocess(pp)

    def fn(image, uniforms):
        if channels is not None:
            image = tf.io.decode_image(image, channels=channels, expand_animations=False)
            image.set_shape([None, None, channels])
        out = tf.cast(ops(image[None], uniforms[None])[0], tf.float32)
        return tf.ensure_shape(out, image_shape)

    return fn, ops.num_ops


# Training targets: integer labels -> one-hot, then batch-level Mixup or CutMix (mixing.py) per step.

def train_dicts(numpy_batches, num_classes, cfg, seed, start_step):
    """(images, int labels) batches of steps start_step, ... -> {'image', 'labels': float32 [b, K]} dicts,
    mixed as the data config `cfg` (mixup_alpha, cutmix_alpha, mixup_prob, mixup_switch_prob) says."""
    eye = np.eye(num_classes, dtype=np.float32)
    for step, (images, labels) in zip(itertools.count(start_step), numpy_batches):
        mix = mixing.draw(cfg, seed, step, images.shape[1], images.shape[2])
        images, targets = mixing.apply(images, eye[labels], mix)
        yield {"image": images, "labels": targets}

