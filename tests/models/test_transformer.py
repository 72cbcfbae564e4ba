"""Properties of the transformer blocks and stacks: norms, stochastic depth, scan/remat, encoder and decoder.

Parameters are random (shapes from `jax.eval_shape`, values from numpy), so no zero bias or unit scale
can hide a term, and nothing is compiled just to initialise.
"""
import functools

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax.models import transformer
from vitjax.models.transformer import Decoder, DecoderBlock, DropPath, Encoder, EncoderBlock

WIDTH, HEADS, MLP = 16, 2, 32
SMALL = dict(mlp_dim=MLP, num_heads=HEADS)


def _normal(seed, *shape):
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape), jnp.float32)


def _init(module, seed, *inputs, **kwargs):
    shapes = nn.unbox(jax.eval_shape(lambda *a: module.init(jax.random.key(0), *a, **kwargs), *inputs))
    rng = np.random.default_rng(seed)
    return jax.tree.map(lambda s: jnp.asarray(0.3 * rng.normal(size=s.shape), s.dtype), shapes)


@functools.cache
def _apply(module):
    """One jitted `module.apply` per module configuration, shared by the tests (fewer compilations)."""
    return jax.jit(module.apply)


def _stack_layers(params, depth, name):
    """Unrolled `{name}_{i}` subtrees -> the scanned `{name}` tree, leaves stacked on a new axis 0."""
    params = dict(params)
    blocks = [params.pop(f"{name}_{i}") for i in range(depth)]
    params[name] = jax.tree.map(lambda *leaves: jnp.stack(leaves), *blocks)
    return params


def _close(a, b, atol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=atol, rtol=0)


# --- the encoder ----------------------------------------------------------------------------------

@pytest.mark.parametrize("posemb", ["none", "learned", "sincos1d"])
def test_encoder_is_permutation_equivariant_only_without_position_embeddings(posemb):
    x = _normal(0, 2, 5, WIDTH)
    encoder = Encoder(depth=2, posemb=posemb, **SMALL)
    params = _init(encoder, 1, x)
    perm = np.array([3, 0, 4, 1, 2])
    y, y_perm = _apply(encoder)(params, x), _apply(encoder)(params, x[:, perm])
    gap = np.abs(np.asarray(y_perm - y[:, perm])).max()
    if posemb == "none":
        assert gap < 1e-5, "permuting the tokens must permute the outputs the same way"
    else:
        assert gap > 1e-2, f"{posemb} position embeddings must break permutation equivariance"


@pytest.mark.parametrize("norm_position,scan", [("pre", False), ("post", False), ("pre", True)])
def test_output_tokens_are_the_first_rows_of_the_full_output_and_prune_the_last_block(norm_position, scan):
    x = _normal(0, 2, 5, WIDTH)
    rng = np.random.default_rng(3)
    # A per-query mask (every query sees itself), so the pruned block must keep the right mask rows.
    mask = jnp.asarray(rng.random((2, 1, 5, 5)) < 0.6) | jnp.eye(5, dtype=bool)
    full = Encoder(depth=2, norm_position=norm_position, scan=scan, **SMALL)
    first_two = Encoder(depth=2, norm_position=norm_position, scan=scan, output_tokens=2, **SMALL)
    params = _init(full, 1, x)
    assert jax.tree.map(jnp.shape, _init(first_two, 1, x)) == jax.tree.map(jnp.shape, params)

    def loss(module, p):
        return jnp.sum(jnp.sin(module.apply(p, x, mask=mask)[:, :2]))

    y_full = jax.jit(lambda p: full.apply(p, x, mask=mask))(params)
    y_part = jax.jit(lambda p: first_two.apply(p, x, mask=mask))(params)
    assert y_part.shape == (2, 2, WIDTH)
    _close(y_part, y_full[:, :2])
    if not scan:  # a scanned stack computes every row anyway
        grads = [jax.jit(jax.grad(functools.partial(loss, m)))(params) for m in (full, first_two)]
        jax.tree.map(_close, grads[1], grads[0])

    # An unrolled stack runs its last MLP on the kept rows only; a scanned one cannot.
    is_mlp = lambda module, method: isinstance(module, transformer.MlpBlock)
    _, state = first_two.apply(params, x, mask=mask, capture_intermediates=is_mlp, mutable=["intermediates"])
    blocks = state["intermediates"]["encoderblock" if scan else "encoderblock_1"]
    (mlp_out,) = blocks["MlpBlock_0"]["__call__"]
    assert mlp_out.shape == ((2, 2, 5, WIDTH) if scan else (2, 2, WIDTH))


def test_scanned_and_unrolled_stacks_agree_with_the_same_weights():
    depth = 3
    x = _normal(0, 2, 5, WIDTH)
    unrolled = Encoder(depth=depth, scan=False, **SMALL)
    scanned = Encoder(depth=depth, scan=True, **SMALL)
    params = _init(unrolled, 1, x)
    stacked = {"params": _stack_layers(params["params"], depth, "encoderblock")}
    # The conversion gives exactly the tree the scanned module builds.
    expected = nn.unbox(jax.eval_shape(scanned.init, jax.random.key(0), x))
    assert jax.tree.map(lambda a: (a.shape, a.dtype), stacked) == jax.tree.map(lambda a: (a.shape, a.dtype), expected)

    record = lambda m: jax.jit(lambda p, t: m.apply(p, t, mutable=["intermediates"]))
    y_unrolled, state_unrolled = record(unrolled)(params, x)
    y_scanned, state_scanned = record(scanned)(stacked, x)
    _close(y_scanned, y_unrolled)

    # Attention weights are sown per layer: [batch, heads, N, N]; the scanned stack stacks them.
    per_layer = [state_unrolled["intermediates"][f"encoderblock_{i}"]["MultiHeadDotProductAttention_0"]
                 ["attention_weights"][0] for i in range(depth)]
    assert all(w.shape == (2, HEADS, 5, 5) for w in per_layer)
    (scanned_weights,) = state_scanned["intermediates"]["encoderblock"]["MultiHeadDotProductAttention_0"][
        "attention_weights"]
    assert scanned_weights.shape == (depth, 2, HEADS, 5, 5)
    _close(scanned_weights, jnp.stack(per_layer))


def test_pre_and_post_norm_place_the_norm_differently():
    x = _normal(0, 2, 5, WIDTH) + 2.0
    pre, post = Encoder(depth=1, norm_position="pre", **SMALL), Encoder(depth=1, norm_position="post", **SMALL)
    pre_params = jax.eval_shape(pre.init, jax.random.key(0), x)["params"]
    post_params = jax.eval_shape(post.init, jax.random.key(0), x)["params"]
    assert "encoder_norm" in pre_params
    assert "encoder_norm" not in post_params, "a post-norm stack already ends on a norm"
    assert set(post_params) == set(pre_params) - {"encoder_norm"}

    # A post-norm block ends on its second norm: undoing that norm's affine map leaves zero-mean,
    # unit-variance tokens. A pre-norm block ends on a residual sum, which does not.
    block_pre, block_post = EncoderBlock(norm_position="pre", **SMALL), EncoderBlock(norm_position="post", **SMALL)
    params = _init(block_pre, 1, x)
    ln = params["params"]["LayerNorm_1"]
    outputs = {}
    for block, normalised in ((block_post, True), (block_pre, False)):
        outputs[block.norm_position] = y = _apply(block)(params, x)
        z = np.asarray((y - ln["bias"]) / ln["scale"])
        is_normalised = np.allclose(z.mean(-1), 0, atol=1e-4) and np.allclose(z.var(-1), 1, atol=1e-3)
        assert is_normalised == normalised, block.norm_position
    assert np.abs(np.asarray(outputs["pre"] - outputs["post"])).max() > 1e-2


def test_rmsnorm_option_rescales_without_centring():
    x = _normal(0, 2, 5, WIDTH) + 3.0  # a large common offset: RMSNorm keeps it, LayerNorm removes it
    encoder = Encoder(depth=1, norm="rmsnorm", **SMALL)
    params = _init(encoder, 1, x)
    p = params["params"]
    assert {"RMSNorm_0", "RMSNorm_1"} <= set(p["encoderblock_0"])
    assert not any(k.startswith("LayerNorm") for k in p["encoderblock_0"])
    assert set(p["encoder_norm"]) == {"scale"}, "RMSNorm has a scale and no bias"
    y = np.asarray(jax.jit(encoder.apply)(params, x))
    z = y / np.asarray(p["encoder_norm"]["scale"])
    np.testing.assert_allclose(np.sqrt((z ** 2).mean(-1)), 1.0, atol=1e-3)
    assert np.abs(z.mean(-1)).min() > 0.3, "RMSNorm must not subtract the mean"


@pytest.mark.parametrize("field,value,expected", [
    ("norm", "batchnorm", r"unknown norm 'batchnorm'; choose 'layernorm' or 'rmsnorm'"),
    ("norm_position", "sandwich", r"unknown norm_position 'sandwich'; choose 'pre' or 'post'"),
    ("remat_policy", "save_everything", r"unknown remat_policy 'save_everything'.*nothing_saveable"),
])
def test_unknown_options_raise_while_tracing(field, value, expected):
    encoder = Encoder(depth=1, **SMALL, **{field: value})
    with pytest.raises(ValueError, match=expected):
        jax.eval_shape(encoder.init, jax.random.key(0), jax.ShapeDtypeStruct((1, 4, WIDTH), jnp.float32))


def test_encoder_dropouts_are_off_at_inference():
    x = _normal(0, 2, 5, WIDTH)
    noisy = Encoder(depth=2, dropout_rate=0.3, attention_dropout_rate=0.3, droppath_rate=0.3, **SMALL)
    params = _init(noisy, 1, x)
    clean = _apply(Encoder(depth=2, **SMALL))(params, x)
    _close(_apply(noisy)(params, x), clean)  # train=False: no rng needed, nothing dropped
    train = jax.jit(lambda p, t, rng: noisy.apply(p, t, train=True, rngs={"dropout": rng}))
    assert np.abs(np.asarray(train(params, x, jax.random.key(2, impl="rbg")) - clean)).max() > 1e-2


# --- stochastic depth -----------------------------------------------------------------------------

def test_droppath_is_the_identity_when_deterministic():
    x = _normal(0, 8, 3, 4)
    _close(DropPath(deterministic=True).apply({}, x, 0.9), x, atol=0)


def test_droppath_drops_whole_samples_and_preserves_the_mean():
    x = jnp.ones((4000, 3, 4))
    rate = 0.25
    y = np.asarray(jax.jit(lambda t, rng: DropPath(deterministic=False).apply({}, t, rate, rngs={"dropout": rng}))(
        x, jax.random.key(0, impl="rbg")))
    per_sample = y.reshape(len(y), -1)
    kept = per_sample[:, 0] != 0
    # Each sample is either dropped whole or kept whole and scaled by 1 / (1 - rate).
    np.testing.assert_array_equal(per_sample[~kept], 0.0)
    np.testing.assert_allclose(per_sample[kept], 1.0 / (1.0 - rate), rtol=1e-6)
    assert abs((~kept).mean() - rate) < 0.03
    assert abs(y.mean() - 1.0) < 0.05
    with pytest.raises(flax.errors.InvalidRngError, match="dropout"):
        DropPath(deterministic=False).apply({}, x, rate)


def test_droppath_rates_grow_linearly_from_zero():
    depth, final_rate = 4, 0.3
    x = _normal(0, 2, 5, WIDTH)
    encoder = Encoder(depth=depth, droppath_rate=final_rate, **SMALL)
    params = _init(encoder, 1, x)
    seen = []

    def record(next_fn, args, kwargs, context):
        if isinstance(context.module, DropPath) and context.method_name == "__call__":
            seen.append((context.module.scope.path[-2], float(args[1])))
        return next_fn(*args, **kwargs)

    with nn.intercept_methods(record):
        jax.eval_shape(lambda p: encoder.apply(p, x, train=True, rngs={"dropout": jax.random.key(0)}), params)
    expected = np.linspace(0.0, final_rate, depth)
    # One DropPath after attention and one after the MLP in each block.
    assert [name for name, _ in seen] == [f"encoderblock_{i}" for i in range(depth) for _ in range(2)]
    np.testing.assert_allclose([rate for _, rate in seen], np.repeat(expected, 2), atol=1e-7)
    assert seen[0][1] == 0.0


# --- rematerialisation ----------------------------------------------------------------------------

def test_remat_gives_the_same_outputs_and_gradients():
    # Scanned + rematerialised against the plain unrolled stack (scan alone is checked above).
    x = _normal(0, 2, 5, WIDTH)
    plain = Encoder(depth=2, **SMALL)
    remat = Encoder(depth=2, scan=True, remat_policy="nothing_saveable", **SMALL)
    params = _init(plain, 1, x)
    stacked = {"params": _stack_layers(params["params"], 2, "encoderblock")}

    def value_and_grad(model, p):
        return jax.jit(jax.value_and_grad(lambda p: jnp.sum(jnp.sin(model.apply(p, x)))))(p)

    (v0, g0), (v1, g1) = value_and_grad(plain, params), value_and_grad(remat, stacked)
    _close(v1, v0)
    g0 = {"params": _stack_layers(g0["params"], 2, "encoderblock")}
    jax.tree.map(lambda a, b: _close(a, b, atol=1e-5), g1, g0)
    assert np.abs(np.asarray(g0["params"]["encoderblock"]["MlpBlock_0"]["Dense_0"]["kernel"])).max() > 1e-3


@pytest.mark.parametrize("policy", transformer.REMAT_POLICIES)
def test_every_offered_remat_policy_can_be_used(policy):
    # The error message offers REMAT_POLICIES as the valid choices: each one must trace under a gradient.
    x = jax.ShapeDtypeStruct((1, 4, WIDTH), jnp.float32)
    encoder = Encoder(depth=1, remat_policy=policy, **SMALL)
    params = jax.eval_shape(encoder.init, jax.random.key(0), x)
    jax.eval_shape(jax.grad(lambda p, t: jnp.sum(encoder.apply(p, t))), params, x)


# --- the decoder ----------------------------------------------------------------------------------

def test_decoder_block_has_six_sub_operations():
    x, z = _normal(0, 1, 4, WIDTH), _normal(1, 1, 3, WIDTH)
    names = set(jax.eval_shape(DecoderBlock(**SMALL).init, jax.random.key(0), x, z)["params"])
    assert names == {"MultiHeadDotProductAttention_0", "LayerNorm_0", "MultiHeadDotProductAttention_1",
                     "LayerNorm_1", "MlpBlock_0", "LayerNorm_2"}


def test_decoder_is_causal_and_attends_to_the_encoder_output():
    target, encoded = _normal(0, 2, 5, WIDTH), _normal(1, 2, 3, WIDTH)
    decoder = Decoder(depth=2, **SMALL)
    params = _init(decoder, 2, target, encoded)
    masked = jax.jit(lambda p, t, e, m: decoder.apply(p, t, e, cross_mask=m))
    see_all = jnp.ones((1, 1, 1, 3), bool)
    apply = lambda p, t, e: masked(p, t, e, see_all)
    y = np.asarray(apply(params, target, encoded))
    assert y.shape == (2, 5, WIDTH), "cross-attention output has the target's length, not the encoder's"
    # The scanned stack computes the same function from the same (stacked) weights.
    stacked = {"params": _stack_layers(params["params"], 2, "decoderblock")}
    _close(jax.jit(Decoder(depth=2, scan=True, **SMALL).apply)(stacked, target, encoded), y)

    # Future target tokens do not affect earlier outputs... (a random change: a constant shift of a
    # token would be removed by the pre-norms and the final norm, and prove nothing)
    later_changed = np.asarray(apply(params, target.at[:, 3:].add(_normal(3, 2, 2, WIDTH)), encoded))
    _close(later_changed[:, :3], y[:, :3], atol=1e-6)
    assert np.abs(later_changed[:, 3:] - y[:, 3:]).max(-1).min() > 1e-3
    # ... but the encoder output affects every position.
    encoder_changed = np.asarray(apply(params, target, encoded.at[:, 1].add(_normal(4, 2, WIDTH))))
    assert np.abs(encoder_changed - y).max(-1).min() > 1e-3

    # A cross-attention padding mask hides encoder tokens: changing hidden ones changes nothing.
    cross_mask = jnp.array([True, True, False])[None, None, None, :]
    hidden_changed = encoded.at[:, 2].add(3.0 * _normal(5, 2, WIDTH))
    _close(masked(params, target, hidden_changed, cross_mask), masked(params, target, encoded, cross_mask),
           atol=1e-6)
    assert np.abs(np.asarray(apply(params, target, hidden_changed)) - y).max() > 1e-2  # unmasked, it matters


def test_gelu_is_the_exact_one_with_its_gradient():
    x = jnp.linspace(-6.0, 6.0, 241)
    np.testing.assert_allclose(transformer.gelu(x), jax.nn.gelu(x, approximate=False), atol=1e-6)
    grad = jax.grad(lambda v: jnp.sum(jnp.sin(transformer.gelu(v))))(x)
    reference = jax.grad(lambda v: jnp.sum(jnp.sin(jax.nn.gelu(v, approximate=False))))(x)
    np.testing.assert_allclose(grad, reference, atol=1e-5)
    # The tanh approximation differs by ~1e-3: the test can tell the two apart.
    assert np.max(np.abs(transformer.gelu(x) - jax.nn.gelu(x, approximate=True))) > 1e-4
