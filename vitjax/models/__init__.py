"""Model families: ViT (and the R50+ViT hybrid), BiT ResNet-v2, Swin, the MAE and DINO pre-training
models, dual encoders (CLIP, SigLIP) and Segment Anything (SAM, promptable segmentation), as flax.linen
modules.

    model = models.build("vit", 10, variant="Ti/4")   # by a config's model_name
    models.ViT, models.family("swin"), models.SAM      # the classes

A family's module loads when it is first named: a ViT run imports no Swin, MAE, DINO or SAM code.
"""
import dataclasses
import difflib
import importlib

# model_name -> (module under vitjax/models/, class)
FAMILIES = {"vit": ("vit", "ViT"), "bit": ("bit", "BiT"), "swin": ("swin", "Swin"), "mae": ("mae", "MAE"),
            "dino": ("dino", "DINO"), "dual_encoder": ("dual_encoder", "ConfiguredDualEncoder"),
            "sam": ("sam", "SAM")}
_MODULE_OF_CLASS = {name: module for module, name in FAMILIES.values()}

__all__ = ["BiT", "ConfiguredDualEncoder", "DINO", "MAE", "SAM", "Swin", "ViT", "FAMILIES", "build", "family"]


def family(model_name: str) -> type:
    """The flax module class of `model_name` (a key of FAMILIES); its module is imported now."""
    module, name = FAMILIES[model_name]
    return getattr(importlib.import_module(f"vitjax.models.{module}"), name)


def __getattr__(name: str):
    """models.ViT, models.Swin, ...: each class from its own module, imported on first use."""
    if name in _MODULE_OF_CLASS:
        return getattr(importlib.import_module(f"vitjax.models.{_MODULE_OF_CLASS[name]}"), name)
    raise AttributeError(f"module 'vitjax.models' has no attribute {name!r}")


def build(name: str, num_classes: int, *, dtype: str = "float32", param_dtype: str = "float32", **kwargs):
    """A model from a config: `build("vit", 10, variant="Ti/4", depth=6)`.

    `num_classes` sizes the classifier head; a family without one (MAE, which predicts pixels) takes
    no such field and ignores it, so that every family is built by the same call.
    Lists become tuples: a config read back from a run's config.json holds lists where the config had
    tuples (e.g. `kernels`), and a flax module's fields must be hashable.
    """
    import jax.numpy as jnp  # here: naming the families needs no JAX

    if name not in FAMILIES:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(FAMILIES)}")
    cls = family(name)
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
    known = {f.name for f in dataclasses.fields(cls)} - {"parent", "name"}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ValueError(f"model.{unknown[0]} is no argument of {cls.__name__}"
                         + "".join(f"; did you mean model.{close[0]}?" for close in
                                   [difflib.get_close_matches(unknown[0], sorted(known), n=1)] if close)
                         + f" (its arguments: {', '.join(sorted(known - {'dtype', 'param_dtype', 'num_classes'}))})")
    if "num_classes" in {f.name for f in dataclasses.fields(cls)}:
        fields["num_classes"] = num_classes
    return cls(dtype=jnp.dtype(dtype), param_dtype=jnp.dtype(param_dtype), **fields)
