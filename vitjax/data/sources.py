"""Where examples come from, which of them a config trains on, and what the model needs to know about them.

Every in-memory source (synthetic, npz file, image folder, small tfds dataset) becomes an `ArraySplit`, and
every ArraySplit is validated here, once, so bad data (wrong dtype/rank, labels out of range, an empty split)
fails when loaded, before any model is built. Large tfds datasets do not fit in memory and stream instead
(pipeline.py's streamed batches); for them only `describe` (metadata) is answered here. The tfds datasets
themselves, and Fashion-MNIST prepared offline, are read in tfds_source.py.

Then: the validation split held out of the train split and the nested training subsets (`training_indices`),
and `get_info`, the sizes, classes and model image shape, checked before anything trains.
"""

import dataclasses
import functools

import numpy as np
import tensorflow as tf

from vitjax import storage
from vitjax.data import config as config_lib
from vitjax.data import preprocess, tfds_source
from vitjax.data.config import DataError, DataInfo, MissingDataError


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
    """'synthetic', 'captions', 'folder', 'npz' or 'tfds'."""
    for prefix in ("folder", "npz"):
        if cfg.name.startswith(prefix + ":"):
            return prefix
    return cfg.name if cfg.name in ("synthetic", "captions", "canvases") else "tfds"


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
    if k == "captions":
        c, syn = cfg.captions, cfg.synthetic
        base = (c.base, cfg.data_dir) if c.base != "synthetic" else (
            c.base, syn.num_train, syn.num_test, tuple(syn.image_shape), syn.num_classes, syn.seed)
        return _load_captions(name, base, c.seed, c.canvas, c.num_train if name == "train" else c.num_test)
    if k == "canvases":
        c, syn = cfg.canvases, cfg.synthetic
        base = (c.base, cfg.data_dir) if c.base != "synthetic" else (
            c.base, syn.num_train, syn.num_test, tuple(syn.image_shape), syn.num_classes, syn.seed)
        settings = (c.seed, c.canvas, c.num_items, tuple(c.scale), tuple(c.seen_classes))
        return _load_canvases(name, base, settings, c.num_train if name == "train" else c.num_test)
    return _load_path(k, cfg.name.split(":", 1)[1], name)


@functools.lru_cache(maxsize=4)
def _load_synthetic(split, num_train, num_test, image_shape, num_classes, seed):
    images, labels = make_synthetic(split, num_train, num_test, image_shape, num_classes, seed)
    return validate(images, labels, num_classes, f"synthetic split {split!r}")


@functools.lru_cache(maxsize=2)  # Train and test.
def _load_captions(split, base, seed, canvas, size):
    """Image-caption pairs (vitjax/data/captions.py) of `split`; `base`: ('synthetic', its settings) or
    (a tfds name, data_dir), whose items are drawn."""
    from vitjax.data import captions  # here: runs of other data never load it

    if base[0] == "synthetic":
        images, labels = make_synthetic(split, *base[1:])
    elif base[0] == "fashion_mnist":
        images, labels, _ = tfds_source.load(*base, split)
    else:
        raise DataError(f"data.captions.base={base[0]!r}: the captions name Fashion-MNIST's items; use "
                        f"'fashion_mnist' or 'synthetic' (10 classes)")
    try:
        images, labels = captions.make_split(images, labels, split, seed=seed, canvas=canvas, size=size)
    except ValueError as error:
        raise DataError(f"data.captions (base {base[0]!r}): {error}") from None
    return validate(images, labels, captions.NUM_COMPOSITIONS, f"captions of {base[0]} split {split!r}")


@functools.lru_cache(maxsize=2)  # Train and test.
def _load_canvases(split, base, settings, size):
    """Segmentation canvases (vitjax/data/canvases.py) of `split`, their items drawn from `base`:
    ('synthetic', its settings) or ('fashion_mnist', data_dir); `settings` (seed, canvas, num_items, scale,
    seen classes)."""
    from vitjax.data import canvases  # here: runs of other data never load it

    if base[0] == "synthetic":
        images, labels = make_synthetic(split, *base[1:])
    elif base[0] == "fashion_mnist":
        images, labels, _ = tfds_source.load(*base, split)
    else:
        raise DataError(f"data.canvases.base={base[0]!r}: use 'fashion_mnist' or 'synthetic' (10 classes)")
    seed, canvas, num_items, scale, seen = settings
    try:
        images, groups = canvases.make_split(images, labels, split, seed=seed, canvas=canvas, size=size,
                                             num_items=num_items, scale=scale, seen=seen)
    except ValueError as error:
        raise DataError(f"data.canvases (base {base[0]!r}): {error}") from None
    return validate(images, groups, 2, f"canvases of {base[0]} split {split!r}")


@functools.lru_cache(maxsize=2)  # Train and test; in-memory splits can be GBs.
def _load_tfds(name, data_dir, split):
    images, labels, num_classes = tfds_source.load(name, data_dir, split)
    return validate(images, labels, num_classes, f"tfds {name!r} split {split!r}")


@functools.lru_cache(maxsize=2)  # Train and test; in-memory splits can be GBs.
def _load_path(k, path, split):
    where = f"{k}:{path} split {split!r}"
    if k == "npz":
        images, labels, num_classes = load_npz(path, split)
        return validate(images, labels, num_classes, where)
    images, labels, num_classes, channels = load_folder(path, split)
    return validate(images, labels, num_classes, where, channels=channels)


# Synthetic, learnable data for tests and benchmarks: each class is a fixed random pattern plus noise.
# The pattern carries most of the signal, so even a tiny model's loss falls within a few steps, which
# lets end-to-end tests check that training works without any dataset on disk.

_SPLIT_TAGS = {"train": 1, "test": 2}  # Train and test draw different examples around the same patterns.


def make_synthetic(split, num_train, num_test, image_shape, num_classes, seed):
    """(uint8 images [N, H, W, C], int64 labels [N]) for split 'train' or 'test'."""
    if split not in _SPLIT_TAGS:
        raise ValueError(f"synthetic data has splits 'train' and 'test', not {split!r}.")
    num = num_train if split == "train" else num_test
    patterns = np.random.default_rng([seed, 0]).uniform(0, 255, (num_classes, *image_shape))
    rng = np.random.default_rng([seed, _SPLIT_TAGS[split]])
    # Balanced classes in random order.
    labels = rng.permutation(np.arange(num) % num_classes)
    noise = rng.uniform(0, 255, (num, *image_shape))
    images = 0.6 * patterns[labels] + 0.4 * noise
    return images.round().astype(np.uint8), labels.astype(np.int64)


# A dataset in one .npz file ('npz:/path/data.npz'): arrays you already have, with no tfds builder.
# A path may be a URL (gs://...; read through vitjax/storage.py).
#
# Keys: '<split>_images' (uint8 [N, H, W, C]), '<split>_labels' (int [N]) for each split, and optionally
# 'num_classes' (otherwise 1 + the largest label over all splits in the file).

def load_npz(path, split):
    """(images, labels, num_classes) of `split`; checking them is left to validate."""
    if not storage.exists(path):
        raise MissingDataError(f"npz data file {path} does not exist.")
    with np.load(storage.readable(path), allow_pickle=False) as f:
        keys = set(f.files)
        want = (f"{split}_images", f"{split}_labels")
        if not set(want) <= keys:
            raise DataError(f"{path} has no split {split!r}: it needs keys {want}, has {sorted(keys)}.")
        images, labels = f[want[0]], f[want[1]]
        if "num_classes" in keys:
            num_classes = int(f["num_classes"])
        else:
            all_labels = [f[k] for k in keys if k.endswith("_labels") and f[k].size]
            num_classes = 1 + max(int(np.max(l)) for l in all_labels) if all_labels else 0
    return images, labels, num_classes


# Image folders ('folder:/root'): root/<split>/<class name>/<image>.png|jpg|jpeg|bmp|gif.
#
# Class indices are the sorted class-directory names found under ALL split directories of root, so every
# split numbers the classes the same way even when one split lacks a class.
#
# Every image is decoded once at load time: that is what catches undecodable files, 16-bit images and mixed
# sizes before training. Images of one size are kept decoded (fast training); a folder of mixed sizes keeps
# the encoded bytes and the pipeline decodes them, which then needs a resizing op in the pp string
# (checked before training). The root may be a URL (gs://...; read through vitjax/storage.py).
# Mixed channel counts are unified: any colour image makes the split RGB
# (grayscale repeated, alpha dropped). 16-bit images are scaled to 8 bits by the decoder.

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


def load_folder(root, split):
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


# Deterministic, nested training subsets (for data-scaling experiments: train on 1k, 10k, ... examples),
# and the validation split held out of the train split before any subset is taken.
#
# All subsets of a split come from ONE permutation keyed by `subset_seed`, so the first N examples of it are
# also the first examples of any bigger subset: the 1k subset lies inside the 10k subset, and a curve over
# subset sizes measures size, not luck of the draw.
#
# Class-balanced subsets keep that property: class quotas grow monotonically with N (the N mod K leftover
# examples go to the first classes of a seeded class order), and each class contributes its earliest
# examples in the permutation.
#
# The validation split (`val_size` examples, `holdout_indices`) is class-balanced the same way, from a
# permutation of its own keyed by `val_seed` alone: it stays the same set whatever the subset size, subset
# seed or training seed, so validation accuracies of a data-scaling sweep are comparable. The training
# subsets are then drawn from the examples it leaves (`training_indices`); with val_size=0 nothing is held
# out and they are exactly `subset_indices`.

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
    class_quotas(size) per class, each class's earliest in a permutation keyed by `seed`. Empty for 0.

    Balanced over the classes the split has: a class with no example in it (the unseen classes of the
    segmentation canvases' training split, vitjax/data/canvases.py) has none to hold out. Where every class
    is present (every other dataset) that is all of them, and the indices are those of before."""
    labels = np.asarray(labels)
    num_classes = num_classes or int(labels.max()) + 1
    present = np.flatnonzero(np.bincount(labels, minlength=num_classes))
    remaining_size(len(labels), len(present), size, where)
    if size == 0:
        return np.empty(0, np.int64)
    perm = np.random.default_rng([_HOLDOUT_TAG, seed]).permutation(len(labels))
    ranks = np.searchsorted(present, labels[perm])  # the classes present, numbered 0..k-1 in their order
    return perm[_balanced_positions(ranks, size, seed, len(present), f"val_size={size}", where)]


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


# `get_info`: what the model and trainer need to know about the data, checked before anything trains.

def get_info(cfg):
    """DataInfo of the data config `cfg`; raises DataError/MissingDataError for unusable data or configs."""
    cfg = config_lib.resolve(cfg)
    train, test = describe(cfg, "train"), describe(cfg, "test")
    num_train = remaining_size(train.num_examples, train.num_classes, cfg.val_size, train.where)
    check_train_size(cfg.train_size, num_train, training_where(train.where, cfg.val_size))
    if cfg.train_size is not None:
        num_train = cfg.train_size
    if test.num_classes != train.num_classes:
        raise DataError(
            f"{train.where} has {train.num_classes} classes but {test.where} has {test.num_classes}."
        )
    image_shape = model_image_shape(cfg, train, test)
    if cfg.repeated_augmentation > 1 and is_streaming(cfg, "train"):
        raise DataError(
            f"repeated_augmentation={cfg.repeated_augmentation} repeats examples within a batch, which needs "
            f"the dataset in memory; {cfg.name!r} streams. Set in_memory=True if it fits, or "
            f"repeated_augmentation=1."
        )
    return DataInfo(num_train, test.num_examples, train.num_classes, image_shape, _num_val(cfg, train))


def _num_val(cfg, train):
    """Examples of the validation split: val_size, or those of the split val_split names (its classes and
    pp_eval's shape checked against the train split's, as the test split's are)."""
    if not cfg.val_split:
        return cfg.val_size
    val = describe(cfg, "val")
    if val.num_classes != train.num_classes:
        raise DataError(f"{train.where} has {train.num_classes} classes but {val.where} has {val.num_classes}.")
    model_image_shape(cfg, train, val)
    return val.num_examples


def pp_output_shape(pp, spec, what):
    """The fixed image shape pp string `pp` gives images of `spec`; DataError if the ops leave it varying."""
    shape, _ = preprocess.Preprocess(pp).output_spec(spec.image_shape)
    if None in shape:
        raise DataError(
            f"{what} {pp!r} turns {spec.where} images of shape {spec.image_shape} (None: varies "
            f"between images) into shape {shape}, not one fixed size; add e.g. resize(...) or "
            f"central_crop(...)."
        )
    return shape


def model_image_shape(cfg, train_spec, test_spec):
    """The image shape both pp strings produce; they must agree or evaluation would feed another shape."""
    train_shape = pp_output_shape(cfg.pp_train, train_spec, "pp_train")
    eval_shape = pp_output_shape(cfg.pp_eval, test_spec, "pp_eval")
    if train_shape != eval_shape:
        raise DataError(
            f"pp_train {cfg.pp_train!r} gives images of shape {train_shape} but pp_eval "
            f"{cfg.pp_eval!r} gives {eval_shape}; the model needs one shape."
        )
    return train_shape
