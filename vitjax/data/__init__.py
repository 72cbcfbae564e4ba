"""vitjax input pipeline: datasets -> nested subsets -> preprocessing ops -> per-process batches -> devices.

Public API (what the trainer and the CLI call):
  default_config()                  the data config and its defaults (embedded by the trainer as config.data)
  get_info(cfg) -> DataInfo         sizes, classes and the model's image shape; checks the data first
  train_batches(cfg, ...)           infinite, deterministic per-step batches (exact resume in memory)
  eval_batches(cfg, split, ...)     finite, padded batches with a mask ('val': the validation split)
  has_validation(cfg)               whether there is one: val_size holds it out, or val_split names it
  prepare(name, data_dir, download) make a tfds dataset loadable (Fashion-MNIST offline by default)
  to_global(batch, sharding), prefetch(iterator, sharding, size)   numpy -> global jax.Arrays
  tensorflow_installed()            whether the names above that need TensorFlow can load
Errors: DataError (a ValueError) for unusable data or configs, MissingDataError (a FileNotFoundError) for
data that is not on disk.

Files, each importing only those above it: config.py (the config, the errors, DataInfo); devices.py (numpy
batches onto the devices, JAX only); pp_ops.py (the preprocessing ops and their registry); preprocess.py
(the pp string parser); tfds_source.py (tfds datasets, Fashion-MNIST offline); sources.py (in-memory
splits, subsets, get_info); mixing.py (Mixup/CutMix); pipeline.py (batches, streamed or from memory).
Only config.py loads with the package; the others load on first use of their names (devices.py's with
JAX, the rest with TensorFlow).
"""

import importlib
import importlib.util

from vitjax.data.config import DataError, DataInfo, MissingDataError, default_config, has_validation

# The rest loads on first use: devices.py needs JAX, the others TensorFlow (~3 s to import), so that
# what only moves batches or reads DataInfo (the trainer's module, `vitjax bench` on synthetic batches)
# runs without TensorFlow, and a command line checks its config before either starts.
_LAZY = {"to_global": "devices", "prefetch": "devices",
         "VAL": "pipeline", "EvalBatches": "pipeline", "eval_batches": "pipeline", "train_batches": "pipeline",
         "register_pp_op": ("pp_ops", "register"), "known_ops": "preprocess", "get_info": "sources",
         "prepare": "tfds_source"}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _LAZY[name] if isinstance(_LAZY[name], tuple) else (_LAZY[name], name)
    if module != "devices":
        _keep_tensorflow_off_accelerators()
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
    globals()[name] = value
    return value


def tensorflow_installed() -> bool:
    """Whether the TensorFlow part can load, found without importing it (torch must load first where both
    run: vitjax/bench/run.py)."""
    try:
        return importlib.util.find_spec("tensorflow") is not None
    except ValueError:  # sys.modules holds None for it: its import is blocked
        return False


def _keep_tensorflow_off_accelerators():
    """TF only runs the input pipeline: keep it off accelerators, whose memory JAX needs (a no-op with
    tensorflow-cpu; too late, and harmless, if TF already initialised its devices)."""
    import tensorflow as tf

    try:
        tf.config.set_visible_devices([], "GPU")
    except RuntimeError:
        pass


__all__ = [
    "DataError",
    "DataInfo",
    "EvalBatches",
    "MissingDataError",
    "VAL",
    "default_config",
    "eval_batches",
    "get_info",
    "has_validation",
    "known_ops",
    "prefetch",
    "prepare",
    "register_pp_op",
    "tensorflow_installed",
    "to_global",
    "train_batches",
]
