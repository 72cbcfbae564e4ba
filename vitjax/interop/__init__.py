"""Checkpoint interoperability: official ViT/BiT `.npz` files (`npz`), timm state dicts (`timm_weights`),
and parameters for a model from either or from a vitjax run (`pretrained`). Each module loads when
imported by name: a run that converts nothing imports none of them."""
