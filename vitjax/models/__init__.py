"""Model families: ViT (and the R50+ViT hybrid), BiT ResNet-v2, Swin, and the MAE and DINO pre-training
models, as flax.linen modules."""
import dataclasses
import difflib

import jax.numpy as jnp

from vitjax.models.bit import BiT
from vitjax.models.dino import DINO
from vitjax.models.mae import MAE
from vitjax.models.swin import Swin
from vitjax.models.vit import ViT

FAMILIES = {"vit": ViT, "bit": BiT, "swin": Swin, "mae": MAE, "dino": DINO}

__all__ = ["BiT", "DINO", "MAE", "Swin", "ViT", "FAMILIES", "build"]


def build(name: str, num_classes: int, *, dtype: str = "float32", param_dtype: str = "float32", **kwargs):
    """A model from a config: `build("vit", 10, variant="Ti/4", depth=6)`.

    `num_classes` sizes the classifier head; a family without one (MAE, which predicts pixels) takes
    no such field and ignores it, so that every family is built by the same call.
    Lists become tuples: a config read back from a run's config.json holds lists where the config had
    tuples (e.g. `kernels`), and a flax module's fields must be hashable.
    """
    if name not in FAMILIES:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(FAMILIES)}")
    family = FAMILIES[name]
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
    known = {f.name for f in dataclasses.fields(family)} - {"parent", "name"}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ValueError(f"model.{unknown[0]} is no argument of {family.__name__}"
                         + "".join(f"; did you mean model.{close[0]}?" for close in
                                   [difflib.get_close_matches(unknown[0], sorted(known), n=1)] if close)
                         + f" (its arguments: {', '.join(sorted(known - {'dtype', 'param_dtype', 'num_classes'}))})")
    if "num_classes" in {f.name for f in dataclasses.fields(family)}:
        fields["num_classes"] = num_classes
    return family(dtype=jnp.dtype(dtype), param_dtype=jnp.dtype(param_dtype), **fields)
