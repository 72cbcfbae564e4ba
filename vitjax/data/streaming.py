"""Streaming tfds input for datasets too big for memory (imagenet2012 and the like).

Each process reads its own part of the split (`tfds.split_for_jax_process`), shuffles it through a buffer
and preprocesses on the fly. Differences from the in-memory pipeline, by necessity:
- Resume is approximate: a restart at step k reseeds the shuffle with (seed, k), so the run continues with
  a fresh order rather than the exact examples an uninterrupted run would have seen. Augmentations are still
  keyed by (seed, step, position).
- train_size takes the first N examples of train_split in tfds's stored order (`train[:N]`, or
  `train[K:K+N]` for train_split `train[K:]`; nested; tfds shuffles once when preparing), not a permutation
  keyed by subset_seed; class_balanced subsets and a validation split held out by val_size are not
  available. A validation split is named instead (data.val_split, e.g. `train[99%:]` with train_split
  `train[:99%]`) and streamed once per evaluation like the test split.
- Batches may mix epochs (the stream repeats, no example is dropped at epoch ends).
- repeated_augmentation > 1 is refused (info.get_info): repeating examples within a batch needs them at hand.
"""

import math

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from vitjax.data import draws, examples, sources, targets, tfds_source
from vitjax.data.errors import DataError

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


def train_batches(cfg, info, global_batch_size, start_step, seed, process_index, process_count):
    local = global_batch_size // process_count
    first_row = process_index * local
    split = tfds.split_for_jax_process(
        _train_split(cfg), process_index=process_index, process_count=process_count, drop_remainder=True
    )
    shuffle_seed = int(np.random.default_rng([_SHUFFLE_TAG, seed, start_step, process_index]).integers(2**31))
    fn, num_ops = examples.make_example_fn(cfg.pp_train, info.image_shape)

    def example(count, image_label):
        image, label = image_label
        step = start_step + count // local
        return fn(image, draws.example_uniforms(seed, step, first_row + count % local, num_ops)), label

    ds = tfds_source.as_dataset(cfg.name, cfg.data_dir, split, shuffle_seed=shuffle_seed)
    ds = ds.repeat().shuffle(cfg.shuffle_buffer, seed=shuffle_seed).enumerate()
    ds = ds.map(example, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    ds = ds.batch(local, drop_remainder=True).prefetch(cfg.prefetch)
    return targets.train_dicts(ds.as_numpy_iterator(), info.num_classes, cfg, seed, start_step)


def eval_batches(cfg, info, split, global_batch_size, process_index, process_count, eval_batches_cls):
    """Every process reads one of process_count near-equal parts and pads to the largest part's batch count."""
    local = global_batch_size // process_count
    held_out = split == "val" and not cfg.val_split  # val_size's split: _train_split refuses it
    name = _train_split(cfg) if split == "train" or held_out else sources.split_name(cfg, split)
    parts = tfds.even_splits(name, n=process_count, drop_remainder=False)
    counts = [tfds_source.describe(cfg.name, cfg.data_dir, p)[0] for p in parts]
    num_batches = math.ceil(max(counts) / local)
    fn, num_ops = examples.make_example_fn(cfg.pp_eval, info.image_shape)
    padding = num_batches * local - counts[process_index]

    def example(count, image_label):
        image, label = image_label
        u = draws.example_uniforms(0, count // local, process_index * local + count % local, num_ops)
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

    return eval_batches_cls(make_iterator, num_batches, sum(counts))
