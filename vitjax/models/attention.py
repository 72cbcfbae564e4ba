"""Scaled dot-product attention and the multi-head attention layer.

Attention(Q, K, V) = softmax(Q K^T / sqrt(d) + bias) V, row by row: query i takes a convex
combination of the values, weighted by how well its projection matches each key. Dividing by
sqrt(d) keeps the score variance at one whatever the head width, so the softmax does not saturate.

Arrays use the layout of `jax.nn.dot_product_attention`: [batch, length, heads, head_dim].
Masks are boolean and broadcast to [batch, heads, q_length, kv_length]; True means "may attend".
"""
from typing import Any, Callable, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

Implementation = Literal["auto", "xla", "cudnn", "einsum"]


def padding_mask(valid: jax.Array) -> jax.Array:
    """[batch, kv_length] booleans (True = real token) -> a mask that hides padded keys."""
    return valid[:, None, None, :].astype(bool)


def causal_mask(q_length: int, kv_length: int | None = None) -> jax.Array:
    """Lower-triangular mask: query i sees keys 0..i (keys aligned to the end when longer)."""
    kv_length = q_length if kv_length is None else kv_length
    offset = kv_length - q_length
    q = jnp.arange(q_length)[:, None]
    k = jnp.arange(kv_length)[None, :]
    return (k <= q + offset)[None, None]


def _combined_mask(mask, is_causal, q_length, kv_length):
    if is_causal:
        causal = causal_mask(q_length, kv_length)
        mask = causal if mask is None else jnp.logical_and(mask, causal)
    return mask


def attention_weights(query, key, *, mask=None, bias=None, is_causal=False):
    """softmax(Q K^T / sqrt(d) + bias) as [batch, heads, q_length, kv_length], computed in fp32."""
    scale = query.shape[-1] ** -0.5
    scores = jnp.einsum("bqhd,bkhd->bhqk", query, key, preferred_element_type=jnp.float32)
    scores = scores * scale
    if bias is not None:
        scores = scores + bias.astype(jnp.float32)
    mask = _combined_mask(mask, is_causal, query.shape[1], key.shape[1])
    if mask is not None:
        scores = jnp.where(mask, scores, jnp.finfo(jnp.float32).min)
    return jax.nn.softmax(scores, axis=-1)


def dot_product_attention(
    query: jax.Array,
    key: jax.Array,
    value: jax.Array,
    *,
    mask: jax.Array | None = None,
    bias: jax.Array | None = None,
    is_causal: bool = False,
    dropout_rate: float = 0.0,
    dropout_rng: jax.Array | None = None,
    implementation: Implementation = "auto",
    return_weights: bool = False,
):
    """Scaled dot-product attention over [batch, length, heads, head_dim] arrays.

    `implementation`: "auto" takes `jax.nn.dot_product_attention` (XLA, or cuDNN's fused kernel on
    GPU when the shapes allow) unless the weights are wanted or attention dropout is on, which need
    the explicit einsum path. Returns the output, or (output, weights) with `return_weights`.
    """
    if query.ndim != 4 or key.ndim != 4 or value.ndim != 4:
        raise ValueError(
            f"query/key/value must be [batch, length, heads, head_dim]; got shapes {query.shape}, "
            f"{key.shape}, {value.shape}. Add a heads axis of size 1 for single-head attention.")
    if key.shape[1] != value.shape[1]:
        raise ValueError(f"keys ({key.shape[1]}) and values ({value.shape[1]}) must have the same length")
    if mask is not None and mask.dtype != jnp.bool_:
        raise ValueError(f"mask must be boolean (True = attend), got dtype {mask.dtype}; use mask.astype(bool)")
    use_dropout = dropout_rate > 0.0 and dropout_rng is not None
    if implementation == "auto":
        implementation = "einsum" if (return_weights or use_dropout) else "xla_or_cudnn"
    if implementation == "einsum" or return_weights or use_dropout:
        weights = attention_weights(query, key, mask=mask, bias=bias, is_causal=is_causal)
        if use_dropout:
            keep = jax.random.bernoulli(dropout_rng, 1.0 - dropout_rate, weights.shape)
            weights = jnp.where(keep, weights / (1.0 - dropout_rate), 0.0)
        out = jnp.einsum("bhqk,bkhd->bqhd", weights.astype(value.dtype), value)
        return (out, weights) if return_weights else out

    chosen = None if implementation == "xla_or_cudnn" else implementation
    if chosen is None and jax.default_backend() == "gpu":
        chosen = _cudnn_if_supported(query)
    if is_causal and query.shape[1] != key.shape[1]:
        # jax.nn aligns its causal mask to the start (query i sees keys 0..i); ours aligns to the end.
        mask, is_causal = _combined_mask(mask, True, query.shape[1], key.shape[1]), False
    dtype = jnp.result_type(query, key, value)
    out = jax.nn.dot_product_attention(
        query.astype(dtype), key.astype(dtype), value.astype(dtype),
        bias=None if bias is None else bias.astype(dtype),
        mask=mask, is_causal=is_causal, implementation=chosen)
    return out


def _cudnn_if_supported(query):
    # cuDNN's fused kernel takes fp16/bf16 only and head dims that are multiples of 8, up to 256.
    head_dim = query.shape[-1]
    ok = query.dtype in (jnp.bfloat16, jnp.float16) and head_dim % 8 == 0 and head_dim <= 256
    return "cudnn" if ok else None


class HeadsProjection(nn.Module):
    """x [..., width_in] -> [..., heads, head_dim] with kernel [width_in, heads, head_dim]."""
    heads: int
    head_dim: int
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32
    kernel_init: Callable = nn.initializers.xavier_uniform(in_axis=0, out_axis=(1, 2))
    bias_init: Callable = nn.initializers.zeros

    @nn.compact
    def __call__(self, x):
        kernel = self.param(
            "kernel", nn.with_logical_partitioning(self.kernel_init, ("embed", "heads", "kv")),
            (x.shape[-1], self.heads, self.head_dim), self.param_dtype)
        bias = self.param(
            "bias", nn.with_logical_partitioning(self.bias_init, ("heads", "kv")),
            (self.heads, self.head_dim), self.param_dtype)
        x, kernel, bias = nn.dtypes.promote_dtype(x, kernel, bias, dtype=self.dtype)
        return jnp.einsum("...d,dhk->...hk", x, kernel) + bias


class HeadsMerge(nn.Module):
    """[..., heads, head_dim] -> [..., width] with kernel [heads, head_dim, width]."""
    features: int
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32
    kernel_init: Callable = nn.initializers.xavier_uniform(in_axis=(0, 1), out_axis=2)
    bias_init: Callable = nn.initializers.zeros

    @nn.compact
    def __call__(self, x):
        kernel = self.param(
            "kernel", nn.with_logical_partitioning(self.kernel_init, ("heads", "kv", "embed")),
            (x.shape[-2], x.shape[-1], self.features), self.param_dtype)
        bias = self.param(
            "bias", nn.with_logical_partitioning(self.bias_init, ("embed",)),
            (self.features,), self.param_dtype)
        x, kernel, bias = nn.dtypes.promote_dtype(x, kernel, bias, dtype=self.dtype)
        return jnp.einsum("...hk,hkd->...d", x, kernel) + bias


class MultiHeadAttention(nn.Module):
    """Multi-head attention with the official ViT parameter names and shapes.

    `query`, `key`, `value` kernels are [width, heads, head_dim]; the `out` kernel is
    [heads, head_dim, width]. They are created at those shapes, so logical sharding names apply
    directly. Self-attention: `mha(x)`. Cross-attention: `mha(x, z)`, queries from x and keys and
    values from z; the output has the queries' length. The attention weights are recorded with
    `sow` into 'intermediates' whenever that collection is mutable, for example
    `model.apply(variables, x, mutable=["intermediates"])`.
    """
    num_heads: int
    dropout_rate: float = 0.0
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32
    implementation: Implementation = "auto"

    @nn.compact
    def __call__(self, inputs_q, inputs_kv=None, *, mask=None, bias=None, is_causal=False,
                 deterministic=True):
        inputs_kv = inputs_q if inputs_kv is None else inputs_kv
        width = inputs_q.shape[-1]
        check_heads(width, self.num_heads)
        head_dim = width // self.num_heads
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        query = HeadsProjection(self.num_heads, head_dim, name="query", **dtypes)(inputs_q)
        key = HeadsProjection(self.num_heads, head_dim, name="key", **dtypes)(inputs_kv)
        value = HeadsProjection(self.num_heads, head_dim, name="value", **dtypes)(inputs_kv)
        query = nn.with_logical_constraint(query, ("batch", "length", "heads", "kv"))

        record = self.is_mutable_collection("intermediates")
        dropout_rng = None
        if self.dropout_rate > 0.0 and not deterministic:
            dropout_rng = self.make_rng("dropout")
        result = dot_product_attention(
            query, key, value, mask=mask, bias=bias, is_causal=is_causal,
            dropout_rate=self.dropout_rate, dropout_rng=dropout_rng,
            implementation=self.implementation, return_weights=record)
        if record:
            result, weights = result
            self.sow("intermediates", "attention_weights", weights)
        return HeadsMerge(width, name="out", **dtypes)(result)


def check_heads(width: int, num_heads: int) -> None:
    if num_heads <= 0 or width % num_heads:
        divisors = [h for h in range(1, min(width, 32) + 1) if width % h == 0]
        raise ValueError(
            f"width {width} is not divisible by num_heads={num_heads}; choose a head count that "
            f"divides the width (one of {divisors}) or change the width")
