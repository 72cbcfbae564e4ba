"""vitjax input pipeline: datasets -> nested subsets -> preprocessing ops -> per-process batches -> devices.

Public API (what the trainer and the CLI call):
  default_config()                  the data config and its defaults (embedded by the trainer as config.data)
  get_info(cfg) -> DataInfo         sizes, classes and the model's image shape; checks the data first
  train_batches(cfg, ...)           infinite, deterministic per-step batches (exact resume in memory)
  eval_batches(cfg, split, ...)     finite, padded batches with a mask ('val': the validation split)
  has_validation(cfg)               whether there is one: val_size holds it out, or val_split names it
  prepare(name, data_dir, download) make a tfds dataset loadable (Fashion-MNIST offline by default)
  to_global(batch, sharding), prefetch(iterator, sharding, size)   numpy -> global jax.Arrays
Errors: DataError (a ValueError) for unusable data or configs, MissingDataError (a FileNotFoundError) for
data that is not on disk.

Files, each importing only those above it: config.py (the config, the errors); pp_ops.py (the preprocessing
ops and their registry); preprocess.py (the pp string parser); tfds_source.py (tfds datasets, Fashion-MNIST
offline); sources.py (in-memory splits, subsets, get_info); mixing.py (Mixup/CutMix); pipeline.py (batches,
streamed or from memory, and onto the devices).
"""

import tensorflow as tf

from vitjax.data.config import DataError, MissingDataError, default_config, has_validation
from vitjax.data.pipeline import VAL, EvalBatches, eval_batches, prefetch, to_global, train_batches
from vitjax.data.pp_ops import register as register_pp_op
from vitjax.data.preprocess import known_ops
from vitjax.data.sources import DataInfo, get_info
from vitjax.data.tfds_source import prepare

# TF only runs the input pipeline: keep it off accelerators, whose memory JAX needs (a no-op with
# tensorflow-cpu; too late, and harmless, if TF already initialised its devices).
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
    "to_global",
    "train_batches",
]
