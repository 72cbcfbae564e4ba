"""Properties of scaled dot-product attention and the multi-head attention layer.

Every test states one property of Attn(Q, K, V) = softmax(Q K^T / sqrt(d) + bias) V that a wrong
implementation would break; numpy references are computed in float64.
"""
import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax.models import attention
from vitjax.models.attention import MultiHeadAttention, causal_mask, dot_product_attention, padding_mask

IMPLS = ("einsum", "xla")


def _qkv(seed, batch=2, q_len=5, kv_len=5, heads=2, head_dim=8, scale=1.0):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(batch, q_len, heads, head_dim)) * scale
    k = rng.normal(size=(batch, kv_len, heads, head_dim)) * scale
    v = rng.normal(size=(batch, kv_len, heads, head_dim))
    return q, k, v


def _softmax(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def _reference(q, k, v, scale, mask=None, bias=None):
    """softmax(Q K^T * scale + bias) V per head in float64; q, k, v are [batch, len, heads, dim]."""
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) * scale
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return np.einsum("bhqk,bkhd->bqhd", _softmax(scores), v)


def _f32(*arrays):
    return [jnp.asarray(a, jnp.float32) for a in arrays]


def _init(module, seed, *inputs):
    """Variables shaped like `module`'s, every leaf (zero biases too) random so that no term can hide.

    Shapes come from `jax.eval_shape` and values from numpy: nothing is compiled.
    """
    shapes = nn.unbox(jax.eval_shape(module.init, jax.random.key(0), *inputs))
    rng = np.random.default_rng(seed)
    return jax.tree.map(lambda s: jnp.asarray(0.5 * rng.normal(size=s.shape), s.dtype), shapes)


def _normal(seed, *shape):
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape), jnp.float32)


# --- the attention core ---------------------------------------------------------------------------

def test_attention_rows_are_probability_distributions():
    q, k, _ = _qkv(0, q_len=4, kv_len=6)
    bias = np.random.default_rng(1).normal(size=(2, 2, 4, 6))
    mask = padding_mask(jnp.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], bool))
    w = np.asarray(attention.attention_weights(*_f32(q, k), mask=mask, bias=jnp.asarray(bias, jnp.float32)))
    assert w.shape == (2, 2, 4, 6)
    assert (w >= 0).all()
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6)


@pytest.mark.parametrize("impl", IMPLS)
def test_matches_explicit_softmax_reference_and_needs_the_sqrt_d_scale(impl):
    head_dim = 16
    q, k, v = _qkv(2, head_dim=head_dim)
    out = np.asarray(dot_product_attention(*_f32(q, k, v), implementation=impl))
    np.testing.assert_allclose(out, _reference(q, k, v, head_dim ** -0.5), atol=2e-5)
    # The scale matters: unscaled scores (or scaling by 1/d) give a clearly different result.
    assert np.abs(out - _reference(q, k, v, 1.0)).max() > 0.1
    assert np.abs(out - _reference(q, k, v, 1.0 / head_dim)).max() > 0.1


@pytest.mark.parametrize("impl", IMPLS)
def test_causal_output_ignores_later_tokens(impl):
    q, k, v = _qkv(3, q_len=6, kv_len=6)
    out = np.asarray(dot_product_attention(*_f32(q, k, v), is_causal=True, implementation=impl))
    np.testing.assert_allclose(out, _reference(q, k, v, 8 ** -0.5, mask=np.tril(np.ones((6, 6), bool))), atol=2e-5)
    # Perturb tokens 3.. in queries, keys and values: outputs 0..2 must not move, later ones must.
    q2, k2, v2 = (a.copy() for a in (q, k, v))
    for a in (q2, k2, v2):
        a[:, 3:] += 5.0
    out2 = np.asarray(dot_product_attention(*_f32(q2, k2, v2), is_causal=True, implementation=impl))
    np.testing.assert_array_equal(out2[:, :3], out[:, :3])
    assert np.abs(out2[:, 3:] - out[:, 3:]).min() > 1e-3


@pytest.mark.parametrize("impl", IMPLS)
def test_causal_multihead_jacobian_is_lower_triangular(impl):
    n, width = 5, 8
    mha = MultiHeadAttention(num_heads=2, implementation=impl)
    x = _normal(0, 1, n, width)
    params = _init(mha, 1, x)
    jac = jax.jit(jax.jacobian(lambda t: mha.apply(params, t[None], is_causal=True)[0]))(x[0])  # [n, D, n, D]
    dependence = np.asarray(jnp.abs(jac).sum(axis=(1, 3)))  # [output position, input position]
    upper = np.triu_indices(n, k=1)
    lower = np.tril_indices(n)
    assert np.all(dependence[upper] == 0.0), dependence
    assert np.all(dependence[lower] > 1e-4), dependence


@pytest.mark.parametrize("impl", IMPLS)
def test_padded_keys_get_zero_weight_and_do_not_matter(impl):
    q, k, v = _qkv(4, q_len=4, kv_len=6)
    valid = jnp.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 0, 0, 0]], bool)
    mask = padding_mask(valid)
    w = np.asarray(attention.attention_weights(*_f32(q, k), mask=mask))
    np.testing.assert_array_equal(w[0, :, :, 4:], 0.0)
    np.testing.assert_array_equal(w[1, :, :, 3:], 0.0)
    assert (w[0, :, :, :4] > 0).all() and (w[1, :, :, :3] > 0).all()

    out = np.asarray(dot_product_attention(*_f32(q, k, v), mask=mask, implementation=impl))
    k2, v2 = k.copy(), v.copy()
    pad = ~np.asarray(valid)
    k2[pad] = 100.0 * np.random.default_rng(5).normal(size=k2[pad].shape)
    v2[pad] = -50.0
    out2 = np.asarray(dot_product_attention(*_f32(q, k2, v2), mask=mask, implementation=impl))
    np.testing.assert_allclose(out2, out, atol=1e-6)
    # ... whereas the same change without the mask changes the output.
    unmasked = np.asarray(dot_product_attention(*_f32(q, k2, v2), implementation=impl))
    assert np.abs(unmasked - out).max() > 1.0


def test_causal_mask_with_longer_keys_is_aligned_to_the_end():
    m = np.asarray(causal_mask(2, 4))[0, 0]
    np.testing.assert_array_equal(m, [[1, 1, 1, 0], [1, 1, 1, 1]])


@pytest.mark.parametrize("q_len,kv_len", [(5, 5), (3, 5)])
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("use_mask,use_bias", [(False, False), (True, True)])
def test_einsum_and_jax_nn_paths_agree(q_len, kv_len, is_causal, use_mask, use_bias):
    q, k, v = _f32(*_qkv(6, q_len=q_len, kv_len=kv_len))
    kwargs = dict(is_causal=is_causal)
    if use_mask:
        kwargs["mask"] = padding_mask(jnp.array([[1] * (kv_len - 1) + [0], [1] * kv_len], bool))
    if use_bias:
        kwargs["bias"] = _normal(7, 2, 2, q_len, kv_len)
    einsum = dot_product_attention(q, k, v, implementation="einsum", **kwargs)
    fused = dot_product_attention(q, k, v, implementation="xla", **kwargs)
    auto = dot_product_attention(q, k, v, **kwargs)
    np.testing.assert_allclose(np.asarray(fused), np.asarray(einsum), atol=1e-5)
    np.testing.assert_allclose(np.asarray(auto), np.asarray(einsum), atol=1e-5)


def test_bad_attention_inputs_raise_with_the_fix():
    q, k, v = _f32(*_qkv(8))
    with pytest.raises(ValueError, match=r"\[batch, length, heads, head_dim\].*heads axis"):
        dot_product_attention(q[:, :, 0], k[:, :, 0], v[:, :, 0])
    with pytest.raises(ValueError, match=r"mask must be boolean.*astype\(bool\)"):
        dot_product_attention(q, k, v, mask=jnp.ones((1, 1, 5, 5), jnp.int32))
    with pytest.raises(ValueError, match=r"keys \(5\) and values \(4\)"):
        dot_product_attention(q, k, v[:, :4])


# --- the multi-head layer -------------------------------------------------------------------------

def test_multihead_equals_per_head_attention_concatenated_and_projected():
    width, heads, n, m = 12, 3, 4, 6
    head_dim = width // heads
    x = np.random.default_rng(9).normal(size=(2, n, width))
    z = np.random.default_rng(10).normal(size=(2, m, width))
    mha = MultiHeadAttention(num_heads=heads)
    params = _init(mha, 0, *_f32(x, z))
    p = jax.tree.map(lambda a: np.asarray(a, np.float64), params["params"])
    assert p["query"]["kernel"].shape == (width, heads, head_dim)
    assert p["out"]["kernel"].shape == (heads, head_dim, width)

    per_head = []
    for h in range(heads):
        q = x @ p["query"]["kernel"][:, h] + p["query"]["bias"][h]
        k = z @ p["key"]["kernel"][:, h] + p["key"]["bias"][h]
        v = z @ p["value"]["kernel"][:, h] + p["value"]["bias"][h]
        a = _softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(head_dim))
        per_head.append(a @ v)
    concatenated = np.concatenate(per_head, axis=-1)  # [batch, n, heads * head_dim]
    expected = concatenated @ p["out"]["kernel"].reshape(heads * head_dim, width) + p["out"]["bias"]

    for impl in IMPLS:
        out = jax.jit(MultiHeadAttention(num_heads=heads, implementation=impl).apply)(params, *_f32(x, z))
        np.testing.assert_allclose(np.asarray(out), expected, atol=2e-5, err_msg=impl)


def test_cross_attention_output_has_the_query_length():
    x = _normal(0, 2, 7, 16)
    z = _normal(1, 2, 3, 16)
    mha = MultiHeadAttention(num_heads=4)
    params = _init(mha, 2, x, z)
    apply = jax.jit(mha.apply)
    y = apply(params, x, z)
    assert y.shape == (2, 7, 16)
    # Keys and values come from z: changing z changes every query's output.
    y2 = apply(params, x, z + 1.0)
    assert np.abs(np.asarray(y2 - y)).max(axis=-1).min() > 1e-3


def test_width_not_divisible_by_heads_raises():
    x = jnp.zeros((1, 4, 10))
    with pytest.raises(ValueError, match=r"width 10 .*num_heads=3.*\[1, 2, 5, 10\]"):
        jax.eval_shape(MultiHeadAttention(num_heads=3).init, jax.random.key(0), x)


def test_attention_dropout_only_in_training_and_needs_a_dropout_rng():
    x = _normal(0, 2, 6, 16)
    mha = MultiHeadAttention(num_heads=2, dropout_rate=0.5)
    params = _init(mha, 1, x)
    reference = jax.jit(MultiHeadAttention(num_heads=2, dropout_rate=0.0).apply)(params, x)
    # Inference: no rng needed, identical to the dropout-free layer.
    inference = jax.jit(lambda p, t: mha.apply(p, t, deterministic=True))(params, x)
    np.testing.assert_allclose(np.asarray(inference), np.asarray(reference), atol=1e-6)
    # Training without a 'dropout' rng is an error, not a silent no-op.
    with pytest.raises(flax.errors.InvalidRngError, match="dropout"):
        jax.eval_shape(lambda p, t: mha.apply(p, t, deterministic=False), params, x)
    train_fn = jax.jit(lambda p, t, rng: mha.apply(p, t, deterministic=False, rngs={"dropout": rng}))
    train = lambda seed: np.asarray(train_fn(params, x, jax.random.key(seed, impl="rbg")))
    a, b = train(3), train(4)
    assert np.abs(a - np.asarray(reference)).max() > 1e-2
    assert np.abs(a - b).max() > 1e-2
    np.testing.assert_array_equal(train(3), a)


def test_attention_weights_are_sown_when_intermediates_are_mutable():
    x = _normal(0, 2, 5, 16)
    z = _normal(1, 2, 3, 16)
    mha = MultiHeadAttention(num_heads=4)
    params = _init(mha, 2, x, z)
    plain = jax.jit(mha.apply)(params, x, z)
    out, state = jax.jit(lambda p, a, b: mha.apply(p, a, b, mutable=["intermediates"]))(params, x, z)
    (weights,) = state["intermediates"]["attention_weights"]
    assert weights.shape == (2, 4, 5, 3)  # [batch, heads, N, M]
    np.testing.assert_allclose(np.asarray(weights).sum(-1), 1.0, atol=1e-6)
    # Recording the weights (einsum path) does not change the output of the fused path.
    np.testing.assert_allclose(np.asarray(out), np.asarray(plain), atol=1e-5)
    # The recorded weights are the ones used: recompute the output from them by hand.
    p = params["params"]
    v = jnp.einsum("bmd,dhk->bmhk", z, p["value"]["kernel"]) + p["value"]["bias"]
    mixed = jnp.einsum("bhnm,bmhk->bnhk", weights, v)
    by_hand = jnp.einsum("bnhk,hkd->bnd", mixed, p["out"]["kernel"]) + p["out"]["bias"]
    np.testing.assert_allclose(np.asarray(by_hand), np.asarray(out), atol=1e-5)
