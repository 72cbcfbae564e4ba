"""Parameters for a model from an official .npz, or from a vitjax run or checkpoint.

Both routes end in `npz.load`, which owns the rules for what may differ (the head, the position
grid, a dropped pre-logits layer) and raises for anything else; a vitjax checkpoint's parameters
(read by vitjax/rundir.py, read-only and checked against their checksums) are first written in the
official layout in memory. Fine-tuning (`init_from`) and distillation teachers load through here.
"""
from vitjax import rundir, storage
from vitjax.interop import npz


def load(path: str, model, image_shape, *, what: str = "init_from") -> dict:
    """Parameters for `model` at `image_shape` (H, W, C) from `path` (.npz, workdir or checkpoint).

    `what` names the config key that gave `path`, in errors."""
    if not storage.exists(path):
        raise FileNotFoundError(f"{what}={path!r} does not exist")
    if path.endswith(".npz"):
        source = path
    else:
        try:
            source = npz.to_official(rundir.read_checkpoint_params(path))
        except FileNotFoundError as error:
            raise FileNotFoundError(f"{what}: {error}, or an official .npz file") from None
    height, width, channels = image_shape
    return npz.load(source, model, image_size=(height, width), channels=channels)
