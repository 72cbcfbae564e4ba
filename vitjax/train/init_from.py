"""Fine-tuning starts: parameters from an official .npz or from a vitjax run or checkpoint
(`config.init_from`), loaded by vitjax/interop/pretrained.py."""
from vitjax.interop import pretrained


def load_pretrained(path: str, model, image_shape) -> dict:
    """Parameters for `model` at `image_shape` (H, W, C) from `path` (.npz, workdir or checkpoint)."""
    return pretrained.load(path, model, image_shape, what="init_from")
