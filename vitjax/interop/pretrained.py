"""Parameters for a model from an official .npz, or from a vitjax run or checkpoint.

Both routes end in `npz.load`, which owns the rules for what may differ (the head, the position
grid, a dropped pre-logits layer) and raises for anything else; a vitjax checkpoint's parameters
(read by vitjax/checkpoints/reader.py, read-only and checked against their checksums) are first written in the
official layout in memory. Fine-tuning (`init_from`) and distillation teachers load through here.

An MAE run (its parameters hold the decoder's `decoder_pred`) gives its encoder alone, as a ViT's
parameters (`vitjax.models.mae.encoder_params` with the target ViT's pool and posemb): a ViT with a
learned position embedding starts from MAE's fixed sin-cos table on its own grid, as the official
fine-tuning does, and one with `posemb='sincos2d_mae'` keeps that table; the ViT's head is new.
A DINO run gives its teacher's backbone (its projection head has no place in a classifier). The .npz
that `vitjax export` writes of either run loads as the run does: run directories do not outlive a
session on every machine, and a committed .npz of a pre-trained encoder does.
"""
from flax import traverse_util

from vitjax import storage
from vitjax.checkpoints import locations, reader
from vitjax.interop import npz

# Top-level parameters that only a label-free pre-training has: the MAE's pixel decoder, DINO's head.
_PRETRAINING_ONLY = ("decoder_pred", "dino_head")


def is_pretraining(params_or_keys) -> bool:
    """Whether a parameter tree (or its flat '/'-joined keys) is an MAE's or a DINO's: a network that
    fine-tunes through init_from rather than classifying."""
    return any(str(key).split("/")[0] in _PRETRAINING_ONLY for key in params_or_keys)


def check(path: str, *, what: str = "init_from") -> None:
    """What `load` would refuse that can be told without reading parameters: a path that does not exist,
    an .npz that is no archive, a directory that is no vitjax run or checkpoint. For the trainer's plan,
    before the workdir records a config naming `path`."""
    if not storage.exists(path):
        raise FileNotFoundError(f"{what}={path!r} does not exist")
    if path.endswith(".npz"):
        npz.check_readable(path)
    else:
        locations.locate(path)


def load(path: str, model, image_shape, *, what: str = "init_from") -> dict:
    """Parameters for `model` at `image_shape` (H, W, C) from `path` (.npz, workdir or checkpoint).

    `what` names the config key that gave `path`, in errors."""
    height, width, channels = image_shape
    return npz.load(encoder_arrays(path, model, (height, width), what=what), model, image_size=(height, width),
                    channels=channels, source=f"{what}={path!r}")


def encoder_arrays(path: str, model, image_size, *, what: str = "init_from") -> dict:
    """The network at `path` (.npz, workdir or checkpoint) in the official layout, {key: array}, for
    `npz.load` into the ViT `model` at `image_size` (H, W): an MAE's encoder (for the model's pool and
    position embedding), a DINO run's backbone without its head, anything else as it is."""
    if not storage.exists(path):
        raise FileNotFoundError(f"{what}={path!r} does not exist")
    if path.endswith(".npz"):
        arrays = npz.read(path)
        if not is_pretraining(arrays):
            return arrays
        params = traverse_util.unflatten_dict(npz.from_official(arrays)[1], sep="/")
    else:
        try:
            params = reader.read_params(path)
        except FileNotFoundError as error:
            raise FileNotFoundError(f"{what}: {error}, or an official .npz file") from None
    if "decoder_pred" in params:
        params = _mae_encoder(params, model, tuple(image_size), f"{what}={path!r}")
    # A DINO run's backbone is the ViT's own tree; its projection head has no place in a classifier,
    # whose head then starts afresh (vitjax/models/dino.py).
    params = {k: v for k, v in params.items() if k != "dino_head"}
    return npz.to_official(params)


def _mae_encoder(params, model, image_size, source: str) -> dict:
    """An MAE run's encoder as the parameters of the ViT `model` (without its head)."""
    pool, posemb = getattr(model, "pool", None), getattr(model, "posemb", None)
    if pool is None or posemb is None:
        raise ValueError(f"{source} is an MAE run, whose encoder loads into a ViT, not a {type(model).__name__}; "
                         f"set model_name='vit' with the MAE's encoder dimensions")
    from vitjax.models import mae  # here: only an MAE run's encoder needs it

    return mae.encoder_params(params, image_size, pool=pool, posemb=posemb)
