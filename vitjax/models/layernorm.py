"""LayerNorm with an optional hand-written backward pass (same parameters and values as flax's).

`LayerNorm` computes exactly what `nn.LayerNorm(epsilon=1e-6)` computes and creates the same
parameters (`scale`, `bias`), so checkpoints and the official `.npz` files load unchanged. With
`hand_vjp=True` (the `layernorm_vjp` kernel of vitjax/models/kernels.py) the backward pass is the
closed form, two row reductions and one elementwise pass, where autodiff left XLA:CPU a dozen passes
over the activations, one of them materialising the scale broadcast to their shape.
"""
from functools import partial
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp


def _stats_dtype(dtype):
    return jnp.promote_types(dtype, jnp.float32)  # statistics in at least float32, as flax does


@partial(jax.custom_vjp, nondiff_argnums=(3,))
def layer_norm(x, scale, bias, epsilon):
    """(x - mean) / sqrt(var + epsilon) * scale + bias over the last axis; the result has x's dtype."""
    return _layer_norm_forward(x, scale, bias, epsilon)[0]


def _layer_norm_forward(x, scale, bias, epsilon):
    x32 = x.astype(_stats_dtype(x.dtype))
    centred = x32 - jnp.mean(x32, axis=-1, keepdims=True)
    inv_std = jax.lax.rsqrt(jnp.mean(centred * centred, axis=-1, keepdims=True) + epsilon)
    normed = centred * inv_std
    out = (normed * scale.astype(x32.dtype) + bias.astype(x32.dtype)).astype(x.dtype)
    return out, (normed, inv_std, scale)


def _layer_norm_backward(epsilon, residuals, grad):
    normed, inv_std, scale = residuals
    g = grad.astype(normed.dtype)
    g_normed = g * scale.astype(normed.dtype)
    # d/dx of (x - mean) * inv_std: remove the gradient's mean and its component along `normed`.
    dx = inv_std * (g_normed - jnp.mean(g_normed, axis=-1, keepdims=True)
                    - normed * jnp.mean(g_normed * normed, axis=-1, keepdims=True))
    leading = tuple(range(g.ndim - 1))
    return (dx.astype(grad.dtype), jnp.sum(g * normed, axis=leading).astype(scale.dtype),
            jnp.sum(g, axis=leading).astype(scale.dtype))


layer_norm.defvjp(lambda x, scale, bias, epsilon: _layer_norm_forward(x, scale, bias, epsilon),
                  _layer_norm_backward)


class LayerNorm(nn.Module):
    """`nn.LayerNorm` over the last axis (parameters `scale` and `bias`); `hand_vjp`: the backward pass above."""
    epsilon: float = 1e-6
    hand_vjp: bool = False
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        features = x.shape[-1]
        scale = self.param("scale", nn.initializers.ones, (features,), self.param_dtype)
        bias = self.param("bias", nn.initializers.zeros, (features,), self.param_dtype)
        x = x.astype(self.dtype)
        if self.hand_vjp:
            return layer_norm(x, scale, bias, self.epsilon)
        return _layer_norm_forward(x, scale, bias, self.epsilon)[0]
