"""`train_batches` and `eval_batches`: per-process numpy batches, from an in-memory split or streamed.

In memory (Fashion-MNIST, CIFAR, folders, npz, synthetic): each step's examples (order.py) and their
augmentation uniforms (draws.py) are picked in numpy, then one traced TF function runs the pp ops on the
batch. Everything is a function of (cfg, seed, step, global batch size), so resume is exact.
Large tfds datasets stream instead (streaming.py); their resume is approximate.
"""

import dataclasses
import functools
import itertools
import math

import numpy as np
import tensorflow as tf

from vitjax.data import config as config_lib
from vitjax.data import draws, examples, info as info_lib, order, sources, streaming, subset, targets
from vitjax.data.errors import DataError

VAL = "val"  # eval_batches' name for the validation split: held out by data.val_size, or data.val_split.


def _checked(cfg, global_batch_size, process_index, process_count):
    """Resolved cfg, DataInfo and this process's rows of a global batch, or an error before any data flows."""
    cfg = config_lib.resolve(cfg)
    rows = order.process_slice(global_batch_size, process_index, process_count)
    return cfg, info_lib.get_info(cfg), rows


def train_subset(cfg):
    """The in-memory train split restricted to the configured nested subset (never the validation split)."""
    split = sources.load(cfg, "train")
    idx = subset.training_indices(
        split.labels, cfg.train_size, cfg.subset_seed, cfg.class_balanced, split.num_classes, split.where,
        cfg.val_size, cfg.val_seed,
    )
    return split.take(idx)


def val_subset(cfg):
    """The validation split: the `val_size` examples held out of the in-memory train split."""
    split = sources.load(cfg, "train")
    idx = subset.holdout_indices(split.labels, cfg.val_size, cfg.val_seed, split.num_classes, split.where)
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
        one, num_ops = examples.make_example_fn(pp, image_shape, channels)
        image_spec = tf.TensorSpec([None], tf.string)
        batch = lambda x, u: tf.map_fn(
            lambda xu: one(*xu), (x, u), fn_output_signature=tf.TensorSpec(image_shape, tf.float32)
        )
    else:
        batch, num_ops = examples.make_batch_fn(pp, image_shape)
        image_spec = tf.TensorSpec([None, *raw_shape], tf.uint8)
    traced = tf.function(
        batch,
        autograph=False,
        input_signature=[image_spec, tf.TensorSpec([None, num_ops, draws.UNIFORMS_PER_OP], tf.float32)],
    )
    return (lambda images, uniforms: traced(images, uniforms).numpy()), num_ops


def train_batches(cfg, *, global_batch_size, start_step=0, seed=0, process_index=0, process_count=1):
    """Infinite iterator of {'image': float32 [b, H, W, C], 'labels': float32 [b, K]} with b = this process's
    share of the global batch; the batch of step t depends only on (cfg, seed, t, global_batch_size)."""
    cfg, info, rows = _checked(cfg, global_batch_size, process_index, process_count)
    if seed < 0 or start_step < 0:
        raise DataError(f"seed and start_step must be >= 0, got seed={seed}, start_step={start_step}.")
    if sources.is_streaming(cfg, "train"):
        return streaming.train_batches(
            cfg, info, global_batch_size, start_step, seed, process_index, process_count
        )
    return _in_memory_train(cfg, info, train_subset(cfg), global_batch_size, start_step, seed, rows)


def _in_memory_train(cfg, info, split, global_batch_size, start_step, seed, rows):
    n = len(split)
    order.steps_per_epoch(n, global_batch_size)  # Fails now if not even one batch fits.
    order.check_repeats(global_batch_size, cfg.repeated_augmentation)
    preprocess, num_ops = _preprocessor(split, cfg.pp_train, info.image_shape)

    def host_batches():
        for step in itertools.count(start_step):
            idx = order.global_batch_indices(step, n, global_batch_size, seed, cfg.repeated_augmentation)[rows]
            u = draws.batch_uniforms(seed, step, global_batch_size, rows, num_ops)
            yield preprocess(split.images[idx], u), split.labels[idx]

    return targets.train_dicts(host_batches(), info.num_classes, cfg, seed, start_step)


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
        return streaming.eval_batches(
            cfg, info, split, global_batch_size, process_index, process_count, EvalBatches
        )
    data = _eval_split(cfg, split)
    if data.num_classes != info.num_classes:
        raise DataError(f"{data.where} has {data.num_classes} classes, the train split {info.num_classes}.")
    # A literal split (say 'validation') may hold images of another size than the test split.
    if info_lib.pp_output_shape(cfg.pp_eval, data, "pp_eval") != info.image_shape:
        raise DataError(
            f"pp_eval {cfg.pp_eval!r} gives {data.where} images a shape other than the model input "
            f"{info.image_shape}."
        )
    n, local = len(data), rows.stop - rows.start
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
                data.images[idx], draws.batch_uniforms(0, i, global_batch_size, rows, num_ops)
            )
            if not mask.all():
                images = np.where(mask[:, None, None, None], images, np.float32(0))
            yield {
                "image": images,
                "label": np.where(mask, data.labels[idx], 0).astype(np.int32),
                "mask": mask,
            }

    return EvalBatches(make_iterator, num_batches, n)
