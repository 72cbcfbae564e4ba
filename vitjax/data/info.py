"""`get_info`: what the model and trainer need to know about the data, checked before anything trains."""

import dataclasses

from vitjax.data import config as config_lib
from vitjax.data import preprocess, sources, subset
from vitjax.data.errors import DataError


@dataclasses.dataclass(frozen=True)
class DataInfo:
    num_train: int  # Examples trained on: the train subset's size, never counting the validation split.
    num_test: int
    num_classes: int
    image_shape: tuple  # (H, W, C) after preprocessing: what the model sees.
    num_val: int = 0  # Examples of the validation split (data.val_size, or the size of data.val_split).


def get_info(cfg):
    """DataInfo of the data config `cfg`; raises DataError/MissingDataError for unusable data or configs."""
    cfg = config_lib.resolve(cfg)
    train, test = sources.describe(cfg, "train"), sources.describe(cfg, "test")
    num_train = subset.remaining_size(train.num_examples, train.num_classes, cfg.val_size, train.where)
    subset.check_train_size(cfg.train_size, num_train, subset.training_where(train.where, cfg.val_size))
    if cfg.train_size is not None:
        num_train = cfg.train_size
    if test.num_classes != train.num_classes:
        raise DataError(
            f"{train.where} has {train.num_classes} classes but {test.where} has {test.num_classes}."
        )
    image_shape = model_image_shape(cfg, train, test)
    if cfg.repeated_augmentation > 1 and sources.is_streaming(cfg, "train"):
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
    val = sources.describe(cfg, "val")
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
