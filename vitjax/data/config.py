"""The data config: its defaults, and the check that turns a user's (possibly partial) config into a full one.

The trainer embeds `default_config()` as `config.data`; tests and tools may pass a plain dict with only the
fields they care about. Either way `resolve` fills in the defaults and rejects unknown keys (a typo such as
`trian_size` must fail before anything is loaded, not silently train on the whole split).
"""

import difflib

import ml_collections
from ml_collections import config_dict

from vitjax.data.errors import DataError


def default_config():
    """Defaults: Fashion-MNIST, prepared offline on first use, light augmentation, no mixup."""
    c = ml_collections.ConfigDict()
    # A tfds name ('fashion_mnist', 'cifar10', 'imagenet2012', ...), 'folder:/root' (root/<split>/<class>/*.png),
    # 'npz:/file.npz' (keys <split>_images, <split>_labels, optional num_classes) or 'synthetic'.
    c.name = "fashion_mnist"
    c.data_dir = config_dict.placeholder(str)  # None: $TFDS_DATA_DIR or ~/tensorflow_datasets.
    c.train_split = "train"
    c.test_split = "test"
    # None: the whole train split. N: the first N of one fixed permutation keyed by subset_seed, so subsets
    # of different sizes are nested (the 1k subset lies inside the 10k subset).
    c.train_size = config_dict.placeholder(int)
    c.subset_seed = 0
    c.class_balanced = False  # Nested subsets with floor(N/K) (+1 for N mod K classes) examples per class.
    # Preprocessing op strings (see vitjax/data/pp_ops.py for the ops). Both must give the same image shape.
    c.pp_train = "random_crop(28, pad=2)|flip_lr|value_range(-1, 1)"
    c.pp_eval = "value_range(-1, 1)"
    c.mixup_alpha = 0.0  # 0: off. Otherwise lambda ~ Beta(alpha, alpha), one per batch.
    # None: hold the split in memory when its decoded images are known to take at most `in_memory_max_gb`;
    # otherwise stream it from tfds (only tfds datasets can stream).
    c.in_memory = config_dict.placeholder(bool)
    c.in_memory_max_gb = 4.0
    c.shuffle_buffer = 50_000  # Streaming only; in-memory training permutes the whole split every epoch.
    c.prefetch = 2  # Streaming only: batches tf.data keeps ready (in memory, use data.prefetch on devices).
    c.synthetic = ml_collections.ConfigDict(
        dict(num_train=1024, num_test=256, image_shape=(16, 16, 3), num_classes=10, seed=0)
    )
    return c


def _suggest(key, known):
    close = difflib.get_close_matches(key, known, n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


def _merge(target, overrides, where):
    for key, value in overrides.items():
        if key not in target:
            raise DataError(
                f"Unknown data config field {where}{key!r}.{_suggest(key, list(target.keys()))} "
                f"Known: {sorted(target.keys())}."
            )
        if isinstance(target[key], ml_collections.ConfigDict):
            _merge(target[key], value, f"{where}{key}.")
            continue
        if isinstance(target[key], tuple) and isinstance(value, list):
            value = tuple(value)  # JSON and YAML round trips turn tuples into lists.
        try:
            target[key] = value
        except (TypeError, ValueError) as e:
            raise DataError(f"Bad value {value!r} for data config field {where}{key}: {e}") from None


def resolve(cfg):
    """Returns a full, checked data ConfigDict: defaults overridden by `cfg` (a ConfigDict or a dict)."""
    full = default_config()
    if cfg is not None:
        overrides = cfg.to_dict() if isinstance(cfg, ml_collections.ConfigDict) else dict(cfg)
        _merge(full, overrides, "")
    _check(full)
    return full


def _check(c):
    if c.train_size is not None and c.train_size <= 0:
        raise DataError(f"train_size must be positive or None (the whole split), got {c.train_size}.")
    if c.subset_seed < 0:
        raise DataError(f"subset_seed must be >= 0, got {c.subset_seed}.")
    if c.mixup_alpha < 0:
        raise DataError(f"mixup_alpha must be >= 0 (0 turns mixup off), got {c.mixup_alpha}.")
    if c.class_balanced and c.train_size is None:
        raise DataError("class_balanced=True needs train_size (it balances the subset it takes).")
