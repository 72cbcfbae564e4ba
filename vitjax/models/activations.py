"""Exact (erf) GELU, optionally with a hand-written derivative (the `gelu_vjp` kernel).

GELU(x) = x * Phi(x), with Phi the standard normal CDF: Phi(x) = (1 + erf(x / sqrt 2)) / 2.
Its derivative is Phi(x) + x * phi(x), with phi the normal density exp(-x^2 / 2) / sqrt(2 pi).

`gelu_exact` is the same function as `jax.nn.gelu(x, approximate=False)` up to float rounding. Only
the backward pass differs: the closed form reads x once and evaluates one erf and one exp, where
autodiff through `erf` left XLA:CPU several passes over the [tokens, mlp] activations. Only the input
is saved for the backward pass, as with plain autodiff.
"""
import math

import jax
import jax.numpy as jnp

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _cdf(x):
    return 0.5 + 0.5 * jax.lax.erf(x * jnp.asarray(_INV_SQRT2, x.dtype))


@jax.custom_vjp
def gelu_exact(x):
    """x * Phi(x), the exact GELU of the ViT paper and timm (not the tanh approximation)."""
    return x * _cdf(x)


def _forward(x):
    return gelu_exact(x), x


def _backward(x, grad):
    pdf = jnp.exp(-0.5 * x * x) * jnp.asarray(_INV_SQRT_2PI, x.dtype)
    return (grad * (_cdf(x) + x * pdf),)


gelu_exact.defvjp(_forward, _backward)


def gelu(x, hand_vjp: bool = False):
    """The exact GELU of the ViT paper and timm; `hand_vjp` takes the closed-form derivative above."""
    return gelu_exact(x) if hand_vjp else jax.nn.gelu(x, approximate=False)
