"""The random numbers behind augmentations: per-image uniforms keyed by (run seed, step, position).

`position` is the image's row in the GLOBAL batch, so an image gets the same augmentation whichever process
handles it and however many steps ran before (exact resume). Preprocessing ops only transform these
uniforms (see preprocess.py); they draw nothing themselves.
"""

import numpy as np
import tensorflow as tf

from vitjax.data.preprocess import UNIFORMS_PER_OP

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
