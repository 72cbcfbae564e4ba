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
"""

import tensorflow as tf

from vitjax.data.config import default_config, has_validation
from vitjax.data.device import prefetch, to_global
from vitjax.data.errors import DataError, MissingDataError
from vitjax.data.info import DataInfo, get_info
from vitjax.data.pipeline import VAL, EvalBatches, eval_batches, train_batches
from vitjax.data.pp_registry import register as register_pp_op
from vitjax.data.preprocess import known_ops
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
