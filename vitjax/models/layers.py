"""Dense and LayerNorm, with optional hand-written backward passes (same parameters and values as flax's).

Both compute exactly what `nn.Dense` / `nn.LayerNorm(epsilon=1e-6)` compute and create the same
parameters (`kernel` [in, out] and `bias`; `scale` and `bias`), so checkpoints and the official
`.npz` files load unchanged. With `hand_vjp=True` the backward pass is written out instead of
derived by autodiff (the `dense_vjp` and `layernorm_vjp` kernels of vitjax/models/kernels.py):

* Dense: the weight gradient x^T g is a product over all tokens; when the input is wider than the
  output it is computed as (g^T x)^T, the orientation XLA:CPU ran faster.
* LayerNorm: the closed form needs two row reductions and one elementwise pass.
"""
from functools import partial
from typing import Any, Callable

import flax.linen as nn
import jax
import jax.numpy as jnp


def _weight_gradient(x2, g2):
    """x2^T g2 ([in, out]) for x2 [tokens, in], g2 [tokens, out]; the longer dimension last."""
    if x2.shape[1] > g2.shape[1]:
        # The barrier keeps XLA from folding the transpose back into the product.
        return jax.lax.optimization_barrier(g2.T @ x2).T
    return x2.T @ g2


@jax.custom_vjp
def dense(x, kernel, bias):
    """x [..., in] @ kernel [in, out] + bias [out]."""
    return jnp.dot(x, kernel) + bias


def _dense_forward(x, kernel, bias):
    return dense(x, kernel, bias), (x, kernel)


def _dense_backward(residuals, grad):
    x, kernel = residuals
    x2 = x.reshape(-1, kernel.shape[0])
    g2 = grad.reshape(-1, kernel.shape[1])
    return jnp.dot(grad, kernel.T), _weight_gradient(x2, g2), jnp.sum(g2, axis=0)


dense.defvjp(_dense_forward, _dense_backward)


class Dense(nn.Module):
    """`nn.Dense` over the last axis (kernel [in, out], bias [out]); `hand_vjp`: the backward pass above."""
    features: int
    hand_vjp: bool = False
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32
    kernel_init: Callable = nn.initializers.lecun_normal()
    bias_init: Callable = nn.initializers.zeros

    @nn.compact
    def __call__(self, x):
        kernel = self.param("kernel", self.kernel_init, (x.shape[-1], self.features), self.param_dtype)
        bias = self.param("bias", self.bias_init, (self.features,), self.param_dtype)
        x, kernel, bias = nn.dtypes.promote_dtype(x, kernel, bias, dtype=self.dtype)
        return dense(x, kernel, bias) if self.hand_vjp else jnp.dot(x, kernel) + bias


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
