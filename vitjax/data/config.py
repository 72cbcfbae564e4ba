"""The data config: its defaults, the check that turns a user's (possibly partial) config into a full one,
the error types of the data package, and `DataInfo`, what a checked config describes.

The trainer embeds `default_config()` (vitjax/config.py's `data_defaults`) as `config.data`; tests and
tools may pass a plain dict with only the fields they care about. Either way `resolve` fills in the
defaults and rejects unknown keys (a typo such as `trian_size` must fail before anything is loaded, not
silently train on the whole split).

Both error types subclass built-in errors so callers may catch `ValueError` / `FileNotFoundError` without
importing vitjax; the subclasses exist so the CLI can tell "your data is wrong" apart from a bug in the code.
"""

import dataclasses
import difflib

import ml_collections

# The defaults live with the rest of the config schema, which loads without TensorFlow or JAX.
from vitjax.config import data_defaults as default_config


class DataError(ValueError):
    """The data or the data config is unusable; the message names the bad value and the fix."""


class MissingDataError(FileNotFoundError):
    """Data that must be on disk (we never download at run time) is not there; the message says how to get it."""


@dataclasses.dataclass(frozen=True)
class DataInfo:
    """What the model and trainer know of the data before any of it loads (sources.get_info makes it)."""

    num_train: int  # Examples trained on: the train subset's size, never counting the validation split.
    num_test: int
    num_classes: int
    image_shape: tuple  # (H, W, C) after preprocessing: what the model sees.
    num_val: int = 0  # Examples of the validation split (data.val_size, or the size of data.val_split).


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


def has_validation(cfg):
    """Whether the data config `cfg` (partial or full) has a 'val' split: val_size > 0 holds one out of the
    train split, or val_split names one. The one rule the pipeline, the trainer and results go by."""
    cfg = resolve(cfg)
    return bool(cfg.val_size or cfg.val_split)


def _check(c):
    if c.val_size and c.val_split:
        raise DataError(
            f"val_size={c.val_size} and val_split={c.val_split!r} both define the validation split; set one: "
            f"val_size holds examples out of an in-memory train split, val_split names a split (streamed "
            f"datasets, e.g. train_split='train[:99%]', val_split='train[99%:]')."
        )
    if c.train_size is not None and c.train_size <= 0:
        raise DataError(f"train_size must be positive or None (the whole split), got {c.train_size}.")
    for key in ("subset_seed", "val_seed"):
        if c[key] < 0:
            raise DataError(f"{key} must be >= 0, got {c[key]}.")
    if c.val_size < 0:
        raise DataError(f"val_size must be >= 0 (0: no validation split), got {c.val_size}.")
    _check_mixing(c)
    classes = tuple(c.classes)
    if any(not isinstance(k, int) or isinstance(k, bool) or k < 0 for k in classes):
        raise DataError(f"classes must be class ids (integers >= 0), got {classes}.")
    if len(set(classes)) != len(classes):
        repeated = sorted({k for k in classes if classes.count(k) > 1})
        raise DataError(f"classes {classes} names class(es) {repeated} more than once; each class once.")
    if c.class_balanced and c.train_size is None:
        raise DataError("class_balanced=True needs train_size (it balances the subset it takes).")


def _check_mixing(c):
    """Mixup/CutMix and repeated augmentation keys: each bad value named with its fix."""
    for key in ("mixup_alpha", "cutmix_alpha"):
        if c[key] < 0:
            raise DataError(f"{key} must be >= 0 (0 turns it off; DeiT: mixup 0.8, cutmix 1.0), got {c[key]}.")
    for key in ("mixup_prob", "mixup_switch_prob"):
        if not 0 <= c[key] <= 1:
            raise DataError(f"{key} is a probability: use a value in [0, 1], got {c[key]}.")
    r = c.repeated_augmentation
    if not isinstance(r, int) or isinstance(r, bool) or r < 1:
        raise DataError(f"repeated_augmentation must be an int >= 1 (1: off; DeiT: 3), got {r!r}.")
