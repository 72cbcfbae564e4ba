"""BiT ResNet-v2: stems and strides, batch independence (GroupNorm), weight standardisation, variants."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax.models.bit import BiT, ResNetStage, StdConv, standardize
from tests.models.compile_guard import no_compilation


def _random_params(model, images, seed):
    """Random values in the model's parameter shapes (from `jax.eval_shape`, so nothing compiles)."""
    shapes = nn.unbox(jax.eval_shape(model.init, jax.random.key(0), images))
    rng = np.random.default_rng(seed)
    return jax.tree.map(lambda s: jnp.asarray(rng.standard_normal(s.shape, np.float32) * 0.1 + (
        1.0 if s.ndim == 1 else 0.0)), shapes)


def _feature_shapes(model, images):
    """Output shapes of the root conv and of each stage, traced abstractly."""
    keep = lambda module, method: method == "__call__" and (
        isinstance(module, ResNetStage) or module.name == "root_conv")
    variables = jax.eval_shape(model.init, jax.random.key(0), images)
    _, state = jax.eval_shape(
        lambda v, x: model.apply(v, x, capture_intermediates=keep, mutable=["intermediates"]), variables, images)
    inter = state["intermediates"]
    names = ["root_conv"] + [f"block{i}" for i in range(1, 5)]
    return {name: inter[name]["__call__"][0].shape for name in names if name in inter}


@pytest.fixture(scope="module")
def small_r26():
    """BiT-R26x1 with the small stem and random weights, its jitted apply, on 28x28 inputs."""
    model = BiT(num_classes=7, variant="R26x1", stem="small")
    images = jax.ShapeDtypeStruct((2, 28, 28, 3), jnp.float32)
    return model, _random_params(model, images, 0), jax.jit(model.apply)


def _batch(seed, n, size):
    return jnp.asarray(np.random.default_rng(seed).normal(size=(n, size, size, 3)), jnp.float32)


def test_small_stem_gives_logits_on_28x28(small_r26):
    _, params, apply = small_r26
    logits = np.asarray(apply(params, _batch(1, 2, 28)))
    assert logits.shape == (2, 7)
    assert np.isfinite(logits).all() and np.abs(logits[0] - logits[1]).max() > 1e-4


def test_small_stem_gives_logits_on_32x32():
    model = BiT(num_classes=10, variant="R26x1", stem="small")
    images = jax.ShapeDtypeStruct((2, 32, 32, 3), jnp.float32)
    assert jax.eval_shape(model.apply, jax.eval_shape(model.init, jax.random.key(0), images), images).shape == (2, 10)
    # Stride 1 stem, then stride 2 in stages 2-4: 32 -> 32, 16, 8, 4.
    shapes = _feature_shapes(model, images)
    assert shapes == {"root_conv": (2, 32, 32, 64), "block1": (2, 32, 32, 256), "block2": (2, 16, 16, 512),
                      "block3": (2, 8, 8, 1024), "block4": (2, 4, 4, 2048)}


def test_imagenet_stem_has_output_stride_four():
    model = BiT(num_classes=10, variant="R50x1")
    shapes = _feature_shapes(model, jax.ShapeDtypeStruct((1, 64, 64, 3), jnp.float32))
    # 7x7/2 conv (stride 2), then the 3x3/2 max-pool: the first stage sees 64 / 4 = 16; the net ends at 32.
    assert shapes == {"root_conv": (1, 32, 32, 64), "block1": (1, 16, 16, 256), "block2": (1, 8, 8, 512),
                      "block3": (1, 4, 4, 1024), "block4": (1, 2, 2, 2048)}


def test_width_factor_and_depth_follow_the_variant():
    model = BiT(num_classes=10, variant="R50x2")
    params = nn.unbox(jax.eval_shape(model.init, jax.random.key(0), jax.ShapeDtypeStruct((1, 32, 32, 3), jnp.float32)))
    params = params["params"]
    assert params["root_conv"]["kernel"].shape == (7, 7, 3, 128)
    assert [len(params[f"block{i}"]) for i in range(1, 5)] == [3, 4, 6, 3]
    assert sorted(params["block1"]) == ["unit01", "unit02", "unit03"]
    assert params["block4"]["unit01"]["conv_c"]["kernel"].shape == (1, 1, 1024, 4096)
    assert params["head"]["kernel"].shape == (4096, 10)


def test_output_for_one_example_does_not_depend_on_the_rest_of_the_batch(small_r26):
    model, params, apply = small_r26
    a, b, c = (_batch(seed, 1, 28) for seed in (2, 3, 4))
    first = np.asarray(apply(params, jnp.concatenate([a, b])))
    second = np.asarray(apply(params, jnp.concatenate([a, 10.0 * c + 3.0])))
    np.testing.assert_allclose(second[0], first[0], atol=1e-5)
    assert np.abs(second[1] - first[1]).max() > 1e-4


def test_standardize_gives_zero_mean_unit_variance_per_output_channel():
    rng = np.random.default_rng(5)
    offsets, scales = rng.normal(size=6) * 3, rng.uniform(0.1, 5.0, size=6)
    kernel = jnp.asarray(rng.normal(size=(3, 3, 4, 6)) * scales + offsets, jnp.float32)
    w = np.asarray(standardize(kernel, 1e-8))
    np.testing.assert_allclose(w.mean(axis=(0, 1, 2)), 0.0, atol=1e-5)
    np.testing.assert_allclose(w.var(axis=(0, 1, 2)), 1.0, atol=1e-4)


def test_std_conv_ignores_an_affine_change_of_each_output_channel():
    rng = np.random.default_rng(6)
    x = jnp.asarray(rng.normal(size=(2, 6, 6, 4)), jnp.float32)
    conv = StdConv(features=5, kernel_size=3, padding=1)
    kernel = jnp.asarray(rng.normal(size=(3, 3, 4, 5)), jnp.float32)
    out = np.asarray(conv.apply({"params": {"kernel": kernel}}, x))
    rescaled = kernel * jnp.asarray(rng.uniform(0.5, 4.0, size=5), jnp.float32) + jnp.asarray(rng.normal(size=5),
                                                                                              jnp.float32)
    np.testing.assert_allclose(np.asarray(conv.apply({"params": {"kernel": rescaled}}, x)), out, atol=1e-4)
    # A plain convolution with the raw kernel differs: the standardisation is really applied.
    plain = jax.lax.conv_general_dilated(x, kernel, (1, 1), ((1, 1), (1, 1)),
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
    assert np.abs(np.asarray(plain) - out).max() > 1e-2


@pytest.mark.parametrize("kwargs,message", [
    (dict(variant="R18"), r"unknown ResNet variant 'R18'; choose one of R26x1, .*R152x4"),
    (dict(variant="R50x5"), r"unknown ResNet variant 'R50x5'"),
    (dict(variant="R50x1", stem="tiny"), r"unknown BiT stem 'tiny'; choose 'imagenet' or 'small'"),
])
def test_bad_configurations_raise_before_compiling(kwargs, message):
    model = BiT(num_classes=10, **kwargs)
    key, images = jax.random.key(0), np.zeros((1, 32, 32, 3), np.float32)
    with no_compilation(), pytest.raises(ValueError, match=message):
        jax.jit(model.init)(key, images)


def _param_count(**kw):
    model = BiT(num_classes=10, variant="R26x1", stem="small", **kw)
    shapes = jax.eval_shape(lambda x: model.init(jax.random.key(0), x), jnp.zeros((1, 28, 28, 1)))
    return sum(leaf.size for leaf in jax.tree.leaves(shapes))


def test_width_and_group_overrides_make_a_narrow_resnet():
    assert _param_count(width=8, norm_groups=8) < _param_count(width=16, norm_groups=8) < _param_count()


def test_width_not_divisible_by_groups_is_rejected():
    with pytest.raises(ValueError, match="not divisible by norm_groups=8"):
        _param_count(width=12, norm_groups=8)
