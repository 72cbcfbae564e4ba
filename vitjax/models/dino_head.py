"""DINO's projection head (Caron et al. 2021): an MLP, an L2-normalised bottleneck, K weight-normalised prototypes.

    head = DINOHead(out_dim=65536)               # the official defaults: hidden 2048, bottleneck 256, 3 layers
    scores = head.apply(variables, features)     # [batch, K] float32, fed to DINO's softmax at a temperature

    Dense(hidden) -> GELU -> Dense(hidden) -> GELU -> Dense(bottleneck)     (`num_layers` Dense layers)
    z = y / max(||y||, 1e-12)                                                (L2-normalised bottleneck)
    scores = z @ (g * v / ||v||)   per prototype column: the weight-normalised last layer, no bias

As the official `DINOHead` (facebookresearch/dino, vision_transformer.py) with its defaults (no batch
norm in the head): its MLP layers start from normal(0.02) weights (the official trunc_normal_ with
bounds +-2, far beyond 0.02's tails) and zero biases; its last layer is torch's
`weight_norm(Linear(bottleneck, K, bias=False))`, whose direction `v` starts from torch's default Linear
initialisation, uniform(+-1/sqrt(bottleneck)), and whose norm `g` starts at 1. With `norm_last_layer`
(the official default) g stays 1 and is no parameter here (the official code keeps it as a frozen
parameter, so its parameter count is K higher: `official_num_params`); each prototype is then a unit
vector and each score a cosine similarity, bounded by 1. Parameters carry logical axis names.
Tests: `python -m pytest tests/models/test_dino_head.py`.
"""
from typing import Any

import flax.linen as nn
import jax.numpy as jnp

from vitjax.models.transformer import gelu

_MLP_INIT = nn.initializers.normal(stddev=0.02)


def num_params(in_dim: int, out_dim: int = 65536, hidden_dim: int = 2048, bottleneck_dim: int = 256,
               num_layers: int = 3, norm_last_layer: bool = True) -> int:
    """Parameters of `DINOHead` from its definition: the Dense layers' kernels and biases, the last
    layer's direction v, and its norm g unless `norm_last_layer` fixes it to 1."""
    widths = [in_dim] + [hidden_dim] * (num_layers - 1) + [bottleneck_dim]
    mlp = sum(a * b + b for a, b in zip(widths[:-1], widths[1:]))
    return mlp + bottleneck_dim * out_dim + (0 if norm_last_layer else out_dim)


def official_num_params(in_dim: int, **kwargs) -> int:
    """The official module's count (`sum(p.numel() for p in head.parameters())`), which includes g
    (K values) whether or not it is frozen."""
    return num_params(in_dim, **{**kwargs, "norm_last_layer": False})


def l2_normalize(x, eps: float = 1e-12):
    """x / max(||x||, eps) along the last axis, as torch's F.normalize."""
    norm = jnp.sqrt(jnp.sum(jnp.square(x.astype(jnp.float32)), axis=-1, keepdims=True))
    return (x / jnp.maximum(norm, eps).astype(x.dtype))


class WeightNormDense(nn.Module):
    """y = x @ (g * v / ||v||), the norm per output column (torch's weight_norm over a Linear's rows);
    no bias. `fixed_scale`: g = 1, no parameter."""
    features: int
    fixed_scale: bool = True
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        fan_in = x.shape[-1]
        # torch's default Linear initialisation, kaiming_uniform(a=sqrt(5)): uniform(+-1/sqrt(fan_in)).
        direction = self.param("kernel", nn.with_logical_partitioning(
            nn.initializers.variance_scaling(1 / 3, "fan_in", "uniform"), (None, "classes")),
            (fan_in, self.features), self.param_dtype)
        kernel = direction / jnp.sqrt(jnp.sum(jnp.square(direction), axis=0, keepdims=True))
        if not self.fixed_scale:
            scale = self.param("scale", nn.with_logical_partitioning(nn.initializers.ones, ("classes",)),
                               (self.features,), self.param_dtype)
            kernel = kernel * scale
        x, kernel = nn.dtypes.promote_dtype(x, kernel, dtype=self.dtype)
        return x @ kernel


class DINOHead(nn.Module):
    """The projection head of the module docstring: [batch, in_dim] -> [batch, out_dim] float32.

    `num_layers` >= 1 Dense layers (1: straight to the bottleneck), GELU between them; parameters
    `Dense_{i}/{kernel,bias}` and `last_layer/kernel` (v), plus `last_layer/scale` (g) when
    `norm_last_layer` is False.
    """
    out_dim: int = 65536
    hidden_dim: int = 2048
    bottleneck_dim: int = 256
    num_layers: int = 3
    norm_last_layer: bool = True
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        if self.num_layers < 1:
            raise ValueError(f"DINOHead needs num_layers >= 1, got {self.num_layers}")
        widths = [self.hidden_dim] * (self.num_layers - 1) + [self.bottleneck_dim]
        axes = [("embed", "mlp")] + [("mlp", None)] * (self.num_layers - 1)  # a mesh axis once per array
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        for i, (features, names) in enumerate(zip(widths, axes)):
            x = nn.Dense(features, kernel_init=nn.with_logical_partitioning(_MLP_INIT, names),
                         bias_init=nn.with_logical_partitioning(nn.initializers.zeros, names[1:]),
                         name=f"Dense_{i}", **dtypes)(x)
            if i < self.num_layers - 1:
                x = gelu(x)
        x = l2_normalize(x)
        x = WeightNormDense(self.out_dim, fixed_scale=self.norm_last_layer, name="last_layer", **dtypes)(x)
        return x.astype(jnp.float32)
