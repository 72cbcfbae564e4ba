"""Raw images -> model input as tf.data map functions: decoding, the pp ops, the final dtype and shape check.

Images of one size go through the ops as whole batches (fast). Images whose sizes vary (encoded image
folders of mixed sizes, streamed ImageNet) go through them one at a time, as batches of one, until the ops
have brought them to one size and they can be batched.
"""

import tensorflow as tf

from vitjax.data.preprocess import Preprocess


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
