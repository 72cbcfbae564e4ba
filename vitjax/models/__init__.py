"""Model families: ViT (and the R50+ViT hybrid), BiT ResNet-v2 and Swin, as flax.linen modules."""
import jax.numpy as jnp

from vitjax.models.bit import BiT
from vitjax.models.swin import Swin
from vitjax.models.vit import ViT

FAMILIES = {"vit": ViT, "bit": BiT, "swin": Swin}

__all__ = ["BiT", "Swin", "ViT", "FAMILIES", "build"]


def build(name: str, num_classes: int, *, dtype: str = "float32", param_dtype: str = "float32", **kwargs):
    """A model from a config: `build("vit", 10, variant="Ti/4", depth=6)`.

    Lists become tuples: a config read back from a run's config.json holds lists where the config had
    tuples (e.g. `kernels`), and a flax module's fields must be hashable.
    """
    if name not in FAMILIES:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(FAMILIES)}")
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
    return FAMILIES[name](num_classes=num_classes, dtype=jnp.dtype(dtype), param_dtype=jnp.dtype(param_dtype),
                          **fields)
