"""Checkpoint interoperability: official ViT/BiT `.npz` files (`npz`), timm state dicts (`timm_weights`),
and parameters for a model from either or from a vitjax run (`pretrained`)."""
from vitjax.interop import npz, pretrained, timm_weights

__all__ = ["npz", "pretrained", "timm_weights"]
