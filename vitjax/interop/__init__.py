"""Checkpoint interoperability: official ViT/BiT `.npz` files (`npz`) and timm state dicts (`timm_weights`)."""
from vitjax.interop import npz, timm_weights

__all__ = ["npz", "timm_weights"]
