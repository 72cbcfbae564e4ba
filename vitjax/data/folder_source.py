"""Image folders ('folder:/root'): root/<split>/<class name>/<image>.png|jpg|jpeg|bmp|gif.

Class indices are the sorted class-directory names found under ALL split directories of root, so every
split numbers the classes the same way even when one split lacks a class.

Every image is decoded once at load time: that is what catches undecodable files, 16-bit images and mixed
sizes before training. Images of one size are kept decoded (fast training); a folder of mixed sizes keeps
the encoded bytes and the pipeline decodes them, which then needs a resizing op in the pp string
(checked before training). The root may be a URL (gs://...; read through vitjax/storage.py).
Mixed channel counts are unified: any colour image makes the split RGB
(grayscale repeated, alpha dropped). 16-bit images are scaled to 8 bits by the decoder.
"""

import numpy as np
import tensorflow as tf

from vitjax import storage
from vitjax.data.errors import DataError, MissingDataError

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif")


def class_names(root):
    names = set()
    for split in storage.listdir(root):
        split_dir = storage.join(root, split)
        if storage.isdir(split_dir):
            names.update(d for d in storage.listdir(split_dir) if storage.isdir(storage.join(split_dir, d)))
    return sorted(names)


def _files(root, split):
    split_dir = storage.join(root, split)
    if not storage.isdir(split_dir):
        raise MissingDataError(f"Image folder {root} has no split directory {split!r} ({split_dir}).")
    classes = class_names(root)
    files, labels = [], []
    for label, name in enumerate(classes):
        class_dir = storage.join(split_dir, name)
        if not storage.isdir(class_dir):
            continue
        for fname in sorted(storage.listdir(class_dir)):
            if fname.lower().endswith(IMAGE_EXTENSIONS):
                files.append(storage.join(class_dir, fname))
                labels.append(label)
    return files, np.asarray(labels, np.int64), len(classes)


def _unify_channels(image, channels):
    if image.shape[2] == channels:
        return image
    if channels == 1:  # Only reached when all images have 1 or 2 (gray + alpha) channels.
        return image[..., :1]
    return np.repeat(image[..., :1], 3, axis=2) if image.shape[2] < 3 else image[..., :3]


def load(root, split):
    """(images, labels, num_classes, channels): images uint8 [N, H, W, C], or encoded bytes [N] if sizes vary."""
    if not storage.isdir(root):
        raise MissingDataError(f"Image folder root {root} does not exist.")
    files, labels, num_classes = _files(root, split)
    if not files:
        raise DataError(
            f"Image folder {root} split {split!r} is empty: no {'/'.join(IMAGE_EXTENSIONS)} files "
            f"in {root}/{split}/<class>/."
        )
    encoded, decoded = [], []
    for path in files:
        data = storage.read_bytes(path)
        try:
            image = tf.io.decode_image(data, channels=0, expand_animations=False)
        except tf.errors.InvalidArgumentError as e:
            raise DataError(f"Cannot decode image {path}: {e.message}") from None
        encoded.append(data)
        decoded.append(image.numpy())
    channels = 3 if max(im.shape[2] for im in decoded) >= 3 else 1
    decoded = [_unify_channels(im, channels) for im in decoded]
    if len({im.shape for im in decoded}) == 1:
        return np.stack(decoded), labels, num_classes, channels
    return np.array(encoded, dtype=object), labels, num_classes, channels
