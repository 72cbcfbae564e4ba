"""ViT: pooling heads, pre-logits, head init, mixed precision, variants, the hybrid, and input validation."""
import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax.models.transformer import Encoder
from vitjax.models.vit import SIZES, Size, ViT
from tests.models.compile_guard import no_compilation

TINY = dict(num_classes=5, patch_size=4, width=16, depth=1, mlp_dim=32, num_heads=2)
IMAGES = jax.ShapeDtypeStruct((2, 8, 8, 3), jnp.float32)


def _images(seed=0, shape=IMAGES.shape):
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape), jnp.float32)


def _random_params(model, seed, images=IMAGES):
    """Parameters shaped like `model`'s, all random (zero-initialised head and CLS too); nothing compiled."""
    shapes = nn.unbox(jax.eval_shape(model.init, jax.random.key(0), images))
    rng = np.random.default_rng(seed)
    return jax.tree.map(lambda s: jnp.asarray(0.3 * rng.normal(size=s.shape), s.dtype), shapes)


def _shapes(model, images):
    return jax.tree.map(lambda s: s.shape, nn.unbox(jax.eval_shape(model.init, jax.random.key(0), images)))["params"]


def _is_encoder(module, method_name):
    return isinstance(module, Encoder) and method_name == "__call__"


@functools.cache
def _run(model):
    """Jitted apply that also returns the sown intermediates and the encoder output (shared by tests)."""
    return jax.jit(lambda p, x: model.apply(p, x, capture_intermediates=_is_encoder, mutable=["intermediates"]))


@pytest.mark.parametrize("pool", ["tok", "gap", "map"])
def test_pools_give_logits_and_read_the_right_tokens(pool):
    model = ViT(pool=pool, **TINY)
    params = _random_params(model, 1)
    names = set(params["params"])
    assert ("cls" in names) == (pool == "tok")
    assert ("MAPHead_0" in names) == (pool == "map")
    logits, state = _run(model)(params, _images())
    assert logits.shape == (2, TINY["num_classes"]) and logits.dtype == jnp.float32
    assert np.isfinite(np.asarray(logits)).all()
    (tokens,) = state["intermediates"]["Transformer"]["__call__"]
    (pre_logits,) = state["intermediates"]["pre_logits"]
    assert tokens.shape == (2, 4 + (pool == "tok"), 16)
    assert pre_logits.shape == (2, 16)
    if pool == "tok":
        np.testing.assert_allclose(pre_logits, tokens[:, 0], atol=1e-6)
    elif pool == "gap":
        np.testing.assert_allclose(pre_logits, tokens.mean(axis=1), atol=1e-6)
    else:
        assert np.abs(np.asarray(pre_logits - tokens.mean(axis=1))).max() > 1e-3
    # The head reads the sown pre-logits.
    head = params["params"]["head"]
    np.testing.assert_allclose(logits, pre_logits @ head["kernel"] + head["bias"], atol=1e-5)


def test_token_pooling_computes_one_row_of_the_last_block_with_the_same_logits_and_gradients():
    model = ViT(pool="tok", **{**TINY, "depth": 2})
    params = _random_params(model, 1)
    images = _images()
    plain = lambda p: model.apply(p, images)
    # Recording intermediates keeps every row (attention maps show every query): the full model.
    recorded = lambda p: model.apply(p, images, mutable=["intermediates"])[0]
    np.testing.assert_allclose(jax.jit(plain)(params), jax.jit(recorded)(params), atol=1e-5)
    loss = lambda apply: lambda p: jnp.sum(jnp.sin(apply(p)))
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-5),
                 jax.jit(jax.grad(loss(plain)))(params), jax.jit(jax.grad(loss(recorded)))(params))

    def flops(apply):
        cost = jax.jit(apply).lower(params).compile().cost_analysis()
        return (cost[0] if isinstance(cost, (list, tuple)) else cost)["flops"]
    # 4 patches + CLS, two blocks: skipping 4 rows' queries, output projection and MLP in the last
    # block removes about a third of the products.
    assert flops(plain) < 0.8 * flops(recorded)


def test_the_last_block_computes_the_cls_row_alone_only_unrolled_under_token_pooling_and_unrecorded():
    assert ViT(**TINY).last_block_rows() == 1
    assert ViT(**TINY).last_block_rows(recording_intermediates=True) is None
    for other in ({"pool": "gap"}, {"pool": "map"}, {"scan": True}, {"cls_only_last_block": False}):
        assert ViT(**TINY, **other).last_block_rows() is None, other


def test_representation_size_adds_a_tanh_pre_logits_layer():
    model = ViT(representation_size=7, **TINY)
    shapes = _shapes(model, IMAGES)
    assert shapes["pre_logits"] == {"kernel": (16, 7), "bias": (7,)}
    assert shapes["head"]["kernel"] == (7, TINY["num_classes"])
    assert "pre_logits" not in _shapes(ViT(**TINY), IMAGES)
    params = _random_params(model, 2)
    logits, state = _run(model)(params, 10 * _images())
    (pre_logits,) = state["intermediates"]["pre_logits"]
    (tokens,) = state["intermediates"]["Transformer"]["__call__"]
    p = params["params"]
    expected = np.tanh(tokens[:, 0] @ p["pre_logits"]["kernel"] + p["pre_logits"]["bias"])
    np.testing.assert_allclose(pre_logits, expected, atol=1e-5)
    np.testing.assert_allclose(logits, pre_logits @ p["head"]["kernel"] + p["head"]["bias"], atol=1e-5)
    assert logits.shape == (2, TINY["num_classes"])


def test_head_zero_init_gives_zero_logits_at_init():
    model = ViT(**TINY)  # head_zero_init=True is the default
    # A real initialisation (not random stand-ins); the 'rbg' key compiles faster than threefry.
    init_and_apply = jax.jit(lambda key, x: model.apply(model.init(key, x), x, mutable=["intermediates"]))
    logits, state = init_and_apply(jax.random.key(0, impl="rbg"), _images())
    np.testing.assert_array_equal(np.asarray(logits), 0.0)
    # The zeros come from the head alone: the features it reads differ between the two images.
    (pre_logits,) = state["intermediates"]["pre_logits"]
    assert np.abs(np.asarray(pre_logits[0] - pre_logits[1])).max() > 1e-2


def test_bfloat16_compute_keeps_float32_params():
    model = ViT(dtype=jnp.bfloat16, **TINY)
    shapes = nn.unbox(jax.eval_shape(model.init, jax.random.key(0), IMAGES))
    assert {leaf.dtype for leaf in jax.tree.leaves(shapes)} == {jnp.dtype(jnp.float32)}
    params = _random_params(ViT(**TINY), 3)  # float32 parameters, shared with the float32 model
    logits, state = _run(model)(params, _images())
    reference, _ = _run(ViT(**TINY))(params, _images())
    assert logits.dtype == jnp.float32
    (tokens,) = state["intermediates"]["Transformer"]["__call__"]
    assert tokens.dtype == jnp.bfloat16, "the encoder must compute in bfloat16"
    scale = np.abs(np.asarray(reference)).max()
    np.testing.assert_allclose(np.asarray(logits), np.asarray(reference), atol=0.05 * scale)
    assert not np.array_equal(np.asarray(logits), np.asarray(reference))


def test_variant_with_overrides():
    model = ViT(num_classes=10, variant="Ti/16", depth=2, patch_size=8)
    assert model.dims() == (Size(width=192, depth=2, mlp_dim=768, num_heads=3), 8)
    shapes = _shapes(model, jax.ShapeDtypeStruct((1, 32, 32, 3), jnp.float32))
    assert shapes["embedding"]["kernel"] == (8, 8, 3, 192)
    transformer = shapes["Transformer"]
    assert sorted(k for k in transformer if k.startswith("encoderblock")) == ["encoderblock_0", "encoderblock_1"]
    block = transformer["encoderblock_1"]
    assert block["MultiHeadDotProductAttention_0"]["query"]["kernel"] == (192, 3, 64)
    assert block["MultiHeadDotProductAttention_0"]["out"]["kernel"] == (3, 64, 192)
    assert block["MlpBlock_0"]["Dense_0"]["kernel"] == (192, 768)
    assert transformer["posembed_input"]["pos_embedding"] == (1, 1 + 16, 192)
    assert shapes["head"]["kernel"] == (192, 10)
    # Without a variant every dimension must be given.
    with pytest.raises(ValueError, match=r"needs \['depth'\]"):
        ViT(num_classes=10, patch_size=4, width=16, mlp_dim=32, num_heads=2).dims()
    assert SIZES["B"] == Size(768, 12, 3072, 12)


def test_r50_hybrid_takes_patches_from_resnet_features():
    model = ViT(num_classes=10, variant="Ti/16", depth=1, resnet="R50")
    images = jax.ShapeDtypeStruct((2, 64, 64, 3), jnp.float32)
    shapes = _shapes(model, images)
    assert shapes["conv_root"]["kernel"] == (7, 7, 3, 64)
    units = {stage: sorted(k for k in shapes[stage]) for stage in ("block1", "block2", "block3")}
    assert [len(u) for u in units.values()] == [3, 4, 9] and "block4" not in shapes
    # Stride-16 features with 1024 channels, cut into 1x1 patches: a 4x4 grid for 64x64 images.
    assert shapes["embedding"]["kernel"] == (1, 1, 1024, 192)
    assert shapes["Transformer"]["posembed_input"]["pos_embedding"] == (1, 1 + 16, 192)
    variables = jax.eval_shape(model.init, jax.random.key(0), images)
    assert jax.eval_shape(model.apply, variables, images).shape == (2, 10)


@pytest.mark.parametrize("overrides,shape,message", [
    ({}, (2, 30, 30, 3), r"image size 30x30 is not divisible by patch_size=4; resize the images to a multiple "
                         r"of 4 \(e\.g\. 32\)"),
    ({"width": 18, "num_heads": 4}, (2, 8, 8, 3), r"width 18 is not divisible by num_heads=4; choose a head count"),
    ({"pool": "cls"}, (2, 8, 8, 3), r"unknown pool 'cls'; choose 'tok' \(CLS token\), 'gap' or 'map'"),
    ({"posemb": "rope"}, (2, 8, 8, 3), r"unknown posemb 'rope'; choose one of"),
    ({"norm": "batchnorm"}, (2, 8, 8, 3), r"unknown norm 'batchnorm'; choose 'layernorm' or 'rmsnorm'"),
    ({"norm_position": "middle"}, (2, 8, 8, 3), r"unknown norm_position 'middle'; choose 'pre' or 'post'"),
    ({"remat_policy": "all"}, (2, 8, 8, 3), r"unknown remat_policy 'all'; choose one of"),
    ({}, (8, 8, 3), r"images must be \[batch, height, width, channels\]"),
    ({"variant": "X/16"}, (2, 32, 32, 3), r"unknown ViT variant 'X/16'; use '<size>/<patch>'.*'B/16'"),
    ({"variant": "B/16", "patch_size": 8, "resnet": "R50"}, (2, 32, 32, 3),
     r"R50 hybrid has output stride 16; patch_size=8 must be a multiple of it"),
    ({"variant": "B/16", "resnet": "R18"}, (2, 32, 32, 3), r"unknown ResNet variant 'R18'; choose one of R26x1"),
])
def test_bad_configurations_raise_before_compiling(overrides, shape, message):
    kwargs = dict(TINY, **overrides)
    if "variant" in overrides:
        for field in ("patch_size", "width", "depth", "mlp_dim", "num_heads"):
            if field not in overrides:
                kwargs.pop(field)
    model = ViT(**kwargs)
    key, images = jax.random.key(0), np.zeros(shape, np.float32)
    with no_compilation(), pytest.raises(ValueError, match=message):
        jax.jit(model.init)(key, images)


def test_a_model_built_from_a_json_config_is_hashable_and_runs():
    """config.json turns the kernels tuple into a list; the model built from it must still apply."""
    import json

    from vitjax import models
    fields = json.loads(json.dumps({"patch_size": 4, "width": 16, "depth": 1, "num_heads": 2, "mlp_dim": 32,
                                    "kernels": ("layernorm_vjp", "heads_major")}))
    assert isinstance(fields["kernels"], list)
    model = models.build("vit", 3, **fields)
    hash(model)
    x = jnp.zeros((1, 8, 8, 1))
    assert model.apply(model.init(jax.random.key(0), x), x).shape == (1, 3)
