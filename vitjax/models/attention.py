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


def attention_weights(query, key, *, mask=None, bias=None, is_causal=False, heads_major=False):
    """softmax(Q K^T / sqrt(d) + bias) as [batch, heads, q_length, kv_length], computed in fp32.

    `heads_major`: query and key are [batch, heads, length, head_dim] instead.
    """
    scale = query.shape[-1] ** -0.5
    subscripts = "bhqd,bhkd->bhqk" if heads_major else "bqhd,bkhd->bhqk"
    scores = jnp.einsum(subscripts, query, key, preferred_element_type=jnp.float32)
    scores = scores * scale
    if bias is not None:
        scores = scores + bias.astype(jnp.float32)
    length = 2 if heads_major else 1
    mask = _combined_mask(mask, is_causal, query.shape[length], key.shape[length])
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
    heads_major: bool = False,
):
    """Scaled dot-product attention over [batch, length, heads, head_dim] arrays.

    `implementation`: "auto" takes `jax.nn.dot_product_attention` with its own default (XLA) unless the
    weights are wanted or attention dropout is on, which need the explicit einsum path; "cudnn" asks
    for cuDNN's fused kernel (GPU, bf16/fp16) and "xla" for XLA's, through jax.nn; "einsum" always
    takes the explicit path. Returns the output, or (output, weights) with `return_weights`.
    `heads_major`: the arrays (and the output) are [batch, heads, length, head_dim]; "auto" then takes
    the einsum path, whose batched products need no transposes in that layout.
    """
    layout = "[batch, heads, length, head_dim]" if heads_major else "[batch, length, heads, head_dim]"
    if query.ndim != 4 or key.ndim != 4 or value.ndim != 4:
        raise ValueError(
            f"query/key/value must be {layout}; got shapes {query.shape}, "
            f"{key.shape}, {value.shape}. Add a heads axis of size 1 for single-head attention.")
    length = 2 if heads_major else 1
    if key.shape[length] != value.shape[length]:
        raise ValueError(f"keys ({key.shape[length]}) and values ({value.shape[length]}) must have the same "
                         f"length")
    if mask is not None and mask.dtype != jnp.bool_:
        raise ValueError(f"mask must be boolean (True = attend), got dtype {mask.dtype}; use mask.astype(bool)")
    use_dropout = dropout_rate > 0.0 and dropout_rng is not None
    if implementation == "auto":
        implementation = "einsum" if (return_weights or use_dropout or heads_major) else "jax_default"
    if implementation == "einsum" or return_weights or use_dropout:
        weights = attention_weights(query, key, mask=mask, bias=bias, is_causal=is_causal,
                                    heads_major=heads_major)
        if use_dropout:
            keep = jax.random.bernoulli(dropout_rng, 1.0 - dropout_rate, weights.shape)
            weights = jnp.where(keep, weights / (1.0 - dropout_rate), 0.0)
        subscripts = "bhqk,bhkd->bhqd" if heads_major else "bhqk,bkhd->bqhd"
        out = jnp.einsum(subscripts, weights.astype(value.dtype), value)
        return (out, weights) if return_weights else out
    if heads_major:  # jax.nn takes [batch, length, heads, head_dim]
        to_tokens = lambda x: jnp.swapaxes(x, 1, 2)
        out = dot_product_attention(to_tokens(query), to_tokens(key), to_tokens(value), mask=mask, bias=bias,
                                    is_causal=is_causal, implementation=implementation)
        return to_tokens(out)

    chosen = None if implementation == "jax_default" else implementation
    if chosen == "cudnn":
        _check_cudnn(query)
    if is_causal and query.shape[1] != key.shape[1]:
        # jax.nn aligns its causal mask to the start (query i sees keys 0..i); ours aligns to the end.
        mask, is_causal = _combined_mask(mask, True, query.shape[1], key.shape[1]), False
    dtype = jnp.result_type(query, key, value)
    out = jax.nn.dot_product_attention(
        query.astype(dtype), key.astype(dtype), value.astype(dtype),
        bias=None if bias is None else bias.astype(dtype),
        mask=mask, is_causal=is_causal, implementation=chosen)
    return out


def _check_cudnn(query):
    # cuDNN's fused kernel takes fp16/bf16 only and head dims that are multiples of 8, up to 256.
    head_dim = query.shape[-1]
    if query.dtype not in (jnp.bfloat16, jnp.float16) or head_dim % 8 or head_dim > 256:
        raise ValueError(f"attention implementation 'cudnn' needs bfloat16 or float16 inputs and a head "
                         f"dimension that is a multiple of 8 up to 256; got {query.dtype} with head dimension "
                         f"{head_dim}. Set dtype='bfloat16' and a fitting width/num_heads, or use 'auto'")


class HeadsProjection(nn.Module):
    """x [..., width_in] -> [..., heads, head_dim] with kernel [width_in, heads, head_dim]."""
    heads: int
    head_dim: int
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32
    kernel_init: Callable = nn.initializers.xavier_uniform(in_axis=0, out_axis=(1, 2))
    bias_init: Callable = nn.initializers.zeros

    @nn.compact
    def weights(self, features_in: int):
        """(kernel [features_in, heads, head_dim], bias [heads, head_dim]), created on first use."""
        kernel = self.param(
            "kernel", nn.with_logical_partitioning(self.kernel_init, ("embed", "heads", "kv")),
            (features_in, self.heads, self.head_dim), self.param_dtype)
        bias = self.param(
            "bias", nn.with_logical_partitioning(self.bias_init, ("heads", "kv")),
            (self.heads, self.head_dim), self.param_dtype)
        return kernel, bias

    def __call__(self, x):
        kernel, bias = self.weights(x.shape[-1])
        x, kernel, bias = nn.dtypes.promote_dtype(x, kernel, bias, dtype=self.dtype)
        return jnp.einsum("...d,dhk->...hk", x, kernel) + bias


def qkv_projections(width: int, num_heads: int, dtype=jnp.float32, param_dtype=jnp.float32) -> list[HeadsProjection]:
    """The `query`, `key` and `value` HeadsProjections of self-attention over `width` channels in `num_heads`
    heads (ValueError unless the heads divide the width); made inside a compact method, whose children they
    become. `fused_projections` computes them together."""
    check_heads(width, num_heads)
    return [HeadsProjection(num_heads, width // num_heads, name=name, dtype=dtype, param_dtype=param_dtype)
            for name in ("query", "key", "value")]


def fused_projections(x, projections, dtype, heads_major=False):
    """The outputs of several HeadsProjections of the same input, computed as one matrix product.

    The kernels are concatenated at run time (the parameters stay separate, with the official names
    and shapes), so one [tokens, width] x [width, n * width] product replaces n narrower ones: fewer,
    larger matmuls run closer to peak, above all on CPUs, and the backward pass likewise needs one
    product for the input gradient instead of n, summed. Each output is [..., length, heads, head_dim],
    or with `heads_major` (x must be [batch, length, width]) [batch, heads, length, head_dim].
    """
    kernels, biases = zip(*(p.weights(x.shape[-1]) for p in projections))
    kernel, bias = jnp.stack(kernels, axis=1), jnp.stack(biases)  # [d, n, heads, head_dim], [n, heads, head_dim]
    x, kernel, bias = nn.dtypes.promote_dtype(x, kernel, bias, dtype=dtype)
    if heads_major:
        # One layout change for all n outputs, made by the product itself rather than per array later.
        out = jnp.einsum("bld,dnhk->nbhlk", x, kernel) + bias[:, None, :, None, :]
        return [out[i] for i in range(len(projections))]
    out = jnp.einsum("...d,dnhk->...nhk", x, kernel) + bias
    return [out[..., i, :, :] for i in range(len(projections))]


class HeadsMerge(nn.Module):
    """[..., heads, head_dim] -> [..., width] with kernel [heads, head_dim, width]."""
    features: int
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32
    kernel_init: Callable = nn.initializers.xavier_uniform(in_axis=(0, 1), out_axis=2)
    bias_init: Callable = nn.initializers.zeros

    @nn.compact
    def __call__(self, x, heads_major=False):
        """x [..., heads, head_dim], or with `heads_major` [batch, heads, length, head_dim]."""
        heads = x.shape[1] if heads_major else x.shape[-2]
        kernel = self.param(
            "kernel", nn.with_logical_partitioning(self.kernel_init, ("heads", "kv", "embed")),
            (heads, x.shape[-1], self.features), self.param_dtype)
        bias = self.param(
            "bias", nn.with_logical_partitioning(self.bias_init, ("embed",)),
            (self.features,), self.param_dtype)
        x, kernel, bias = nn.dtypes.promote_dtype(x, kernel, bias, dtype=self.dtype)
        subscripts = "bhlk,hkd->bld" if heads_major else "...hk,hkd->...d"
        return jnp.einsum(subscripts, x, kernel) + bias


class MultiHeadAttention(nn.Module):
    """Multi-head attention with the official ViT parameter names and shapes.

    `query`, `key`, `value` kernels are [width, heads, head_dim]; the `out` kernel is
    [heads, head_dim, width]. They are created at those shapes, so logical sharding names apply
    directly. Self-attention: `mha(x)`. Cross-attention: `mha(x, z)`, queries from x and keys and
    values from z; the output has the queries' length. The attention weights are recorded with
    `sow` into 'intermediates' whenever that collection is mutable, for example
    `model.apply(variables, x, mutable=["intermediates"])`.

    `heads_major`: with the einsum path ("auto" or "einsum") and [batch, length, width] inputs, compute
    in [batch, heads, length, head_dim] layout (the `heads_major` kernel of vitjax/models/kernels.py).
    """
    num_heads: int
    dropout_rate: float = 0.0
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32
    implementation: Implementation = "auto"
    heads_major: bool = False

    @nn.compact
    def __call__(self, inputs_q, inputs_kv=None, *, mask=None, bias=None, is_causal=False,
                 deterministic=True):
        inputs_kv = inputs_q if inputs_kv is None else inputs_kv
        width = inputs_q.shape[-1]
        check_heads(width, self.num_heads)
        head_dim = width // self.num_heads
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        projections = [HeadsProjection(self.num_heads, head_dim, name=name, **dtypes)
                       for name in ("query", "key", "value")]
        heads_major = (self.heads_major and self.implementation in ("auto", "einsum")
                       and inputs_q.ndim == 3 and inputs_kv.ndim == 3)
        if inputs_kv is inputs_q:  # self-attention: one product for all three
            query, key, value = fused_projections(inputs_q, projections, self.dtype, heads_major)
        else:
            query = fused_projections(inputs_q, projections[:1], self.dtype, heads_major)[0]
            key, value = fused_projections(inputs_kv, projections[1:], self.dtype, heads_major)
        names = ("batch", "heads", "length", "kv") if heads_major else ("batch", "length", "heads", "kv")
        query = nn.with_logical_constraint(query, names)

        record = self.is_mutable_collection("intermediates")
        dropout_rng = None
        if self.dropout_rate > 0.0 and not deterministic:
            dropout_rng = self.make_rng("dropout")
        result = dot_product_attention(
            query, key, value, mask=mask, bias=bias, is_causal=is_causal,
            dropout_rate=self.dropout_rate, dropout_rng=dropout_rng,
            implementation=self.implementation, return_weights=record, heads_major=heads_major)
        if record:
            result, weights = result
            self.sow("intermediates", "attention_weights", weights)
        return HeadsMerge(width, name="out", **dtypes)(result, heads_major=heads_major)


def check_heads(width: int, num_heads: int) -> None:
    if num_heads <= 0 or width % num_heads:
        divisors = [h for h in range(1, min(width, 32) + 1) if width % h == 0]
        raise ValueError(
            f"width {width} is not divisible by num_heads={num_heads}; choose a head count that "
            f"divides the width (one of {divisors}) or change the width")
