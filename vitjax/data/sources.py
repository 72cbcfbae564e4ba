"""Where examples come from: the in-memory split type, its validation, and the dispatch on `cfg.name`.

Every in-memory source (synthetic, npz file, image folder, small tfds dataset) becomes an `ArraySplit`, and
every ArraySplit is validated here, once, so bad data (wrong dtype/rank, labels out of range, an empty split)
fails when loaded, before any model is built. Large tfds datasets do not fit in memory and stream instead
(see streaming.py); for them only `describe` (metadata) is answered here.
"""

import dataclasses
import functools

import numpy as np

from vitjax.data import folder_source, npz_source, synthetic_source, tfds_source
from vitjax.data.errors import DataError


@dataclasses.dataclass(frozen=True)
class ArraySplit:
    """One split held in memory.

    images: uint8 [N, H, W, C] when all images share one size; otherwise an object array [N] of encoded image
      bytes (an image folder of mixed sizes), decoded to `channels` channels by the pipeline.
    labels: int64 [N], each in [0, num_classes).
    """

    images: np.ndarray
    labels: np.ndarray
    num_classes: int
    channels: int
    where: str  # Names the data in error messages, e.g. "folder:/data/flowers split 'test'".

    @property
    def encoded(self):
        return self.images.dtype == object

    @property
    def image_shape(self):
        """The raw [H, W, C] shape; None for sizes that vary between images."""
        return (None, None, self.channels) if self.encoded else tuple(self.images.shape[1:])

    def __len__(self):
        return len(self.labels)

    def take(self, indices):
        return dataclasses.replace(self, images=self.images[indices], labels=self.labels[indices])


@dataclasses.dataclass(frozen=True)
class SplitSpec:
    """What is known about a split without loading it: enough for DataInfo and for checks before training."""

    num_examples: int
    num_classes: int
    image_shape: tuple  # Raw [H, W, C] before preprocessing; None where sizes vary.
    where: str


def validate(images, labels, num_classes, where, channels=None):
    """Raises DataError naming the split and the fix if the arrays cannot be trained on; returns ArraySplit."""
    images, labels = np.asarray(images), np.asarray(labels)
    if len(labels) == 0:
        raise DataError(f"{where} is empty (0 examples).")
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise DataError(f"{where}: labels must be a 1-D integer array, got {labels.dtype} {labels.shape}.")
    if len(images) != len(labels):
        raise DataError(f"{where}: {len(images)} images but {len(labels)} labels.")
    if images.dtype == object:
        if channels is None:
            raise DataError(f"{where}: encoded images need a known channel count.")
    else:
        if images.dtype != np.uint8:
            raise DataError(
                f"{where}: images must be uint8 (0..255), got {images.dtype}. Convert them, e.g. "
                f"np.clip(x * 255, 0, 255).astype(np.uint8) for floats in 0..1."
            )
        if images.ndim != 4:
            fix = " Add a channel axis (images[..., None])." if images.ndim == 3 else ""
            raise DataError(f"{where}: images must be [N, H, W, C], got shape {images.shape}.{fix}")
        channels = images.shape[3]
    if num_classes is None or num_classes <= 0:
        raise DataError(f"{where}: num_classes must be positive, got {num_classes}.")
    lo, hi = int(labels.min()), int(labels.max())
    if lo < 0 or hi >= num_classes:
        bad = labels[(labels < 0) | (labels >= num_classes)]
        raise DataError(f"{where}: {len(bad)} labels outside [0, {num_classes}) (e.g. {int(bad[0])}).")
    labels = labels.astype(np.int64)
    # The split is cached and shared between iterators: make accidental in-place edits fail loudly.
    images.flags.writeable = False
    labels.flags.writeable = False
    return ArraySplit(images, labels, int(num_classes), int(channels), where)


def select_classes(split, classes):
    """`split` restricted to the examples of `classes`, relabelled 0..k-1 in their order; () keeps it whole.

    Used by `load`, so every split a config reads (train, the validation split held out of it, test)
    goes through the same filter, before val_size and train_size take anything: what follows is
    class-agnostic, so the validation split stays disjoint from training and subsets stay nested.
    """
    classes = tuple(int(k) for k in classes)
    if not classes:
        return split
    out_of_range = [k for k in classes if k >= split.num_classes]
    if out_of_range:
        raise DataError(
            f"classes {classes}: class id(s) {out_of_range} out of range; {split.where} has classes "
            f"0..{split.num_classes - 1}."
        )
    relabel = np.full(split.num_classes, -1, np.int64)
    relabel[list(classes)] = np.arange(len(classes))
    kept = np.flatnonzero(relabel[split.labels] >= 0)
    where = f"{split.where} (classes {', '.join(map(str, classes))} as 0..{len(classes) - 1})"
    if len(kept) == 0:
        raise DataError(f"{where} is empty (0 examples of those classes).")
    labels = relabel[split.labels[kept]]
    labels.flags.writeable = False
    images = split.images[kept]
    images.flags.writeable = False
    return ArraySplit(images, labels, len(classes), split.channels, where)


def kind(cfg):
    """'synthetic', 'folder', 'npz' or 'tfds'."""
    for prefix in ("folder", "npz"):
        if cfg.name.startswith(prefix + ":"):
            return prefix
    return "synthetic" if cfg.name == "synthetic" else "tfds"


def split_name(cfg, split):
    """'train'/'test' mean the config's train_split/test_split, 'val' its val_split when one is named;
    anything else is taken literally."""
    named = {"train": cfg.train_split, "test": cfg.test_split, "val": cfg.val_split or "val"}
    return named.get(split, split)


def is_streaming(cfg, split):
    """Whether `split` is streamed from tfds instead of held in memory (only large tfds datasets stream)."""
    if kind(cfg) != "tfds":
        if cfg.in_memory is False:
            raise DataError(
                f"in_memory=False (streaming) is only possible for tfds datasets, not {cfg.name!r}."
            )
        return False
    streams = (not cfg.in_memory) if cfg.in_memory is not None else not tfds_source.fits_in_memory(
        cfg.name, cfg.data_dir, split_name(cfg, split), cfg.in_memory_max_gb
    )
    if streams and tuple(cfg.classes):
        raise DataError(
            f"classes={tuple(cfg.classes)} keeps some classes only, which needs the dataset in memory; "
            f"{cfg.name!r} split {split_name(cfg, split)!r} streams. Set in_memory=True if it fits."
        )
    return streams


def describe(cfg, split):
    """SplitSpec of the whole split `split` ('train', 'test' or a literal split name)."""
    name = split_name(cfg, split)
    # With `classes` the kept examples are known once loaded (is_streaming refuses a streamed split).
    if kind(cfg) == "tfds" and (not tuple(cfg.classes) or is_streaming(cfg, split)):
        num, num_classes, shape = tfds_source.describe(cfg.name, cfg.data_dir, name)
        where = f"tfds {cfg.name!r} split {name!r}"
        if num == 0:
            raise DataError(f"{where} is empty (0 examples).")
        return SplitSpec(num, num_classes, shape, where)
    s = load(cfg, split)
    return SplitSpec(len(s), s.num_classes, s.image_shape, s.where)


def load(cfg, split):
    """The whole split `split` in memory, validated (cached: one read per process), restricted to
    `cfg.classes` (select_classes)."""
    return select_classes(_load_whole(cfg, split), cfg.classes)


def _load_whole(cfg, split):
    name = split_name(cfg, split)
    k = kind(cfg)
    if k == "synthetic":
        syn = cfg.synthetic
        return _load_synthetic(
            name, syn.num_train, syn.num_test, tuple(syn.image_shape), syn.num_classes, syn.seed
        )
    if k == "tfds":
        return _load_tfds(cfg.name, cfg.data_dir, name)
    return _load_path(k, cfg.name.split(":", 1)[1], name)


@functools.lru_cache(maxsize=4)
def _load_synthetic(split, num_train, num_test, image_shape, num_classes, seed):
    images, labels = synthetic_source.make(split, num_train, num_test, image_shape, num_classes, seed)
    return validate(images, labels, num_classes, f"synthetic split {split!r}")


@functools.lru_cache(maxsize=2)  # Train and test; in-memory splits can be GBs.
def _load_tfds(name, data_dir, split):
    images, labels, num_classes = tfds_source.load(name, data_dir, split)
    return validate(images, labels, num_classes, f"tfds {name!r} split {split!r}")


@functools.lru_cache(maxsize=2)  # Train and test; in-memory splits can be GBs.
def _load_path(k, path, split):
    where = f"{k}:{path} split {split!r}"
    if k == "npz":
        images, labels, num_classes = npz_source.load(path, split)
        return validate(images, labels, num_classes, where)
    images, labels, num_classes, channels = folder_source.load(path, split)
    return validate(images, labels, num_classes, where, channels=channels)
