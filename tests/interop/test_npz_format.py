"""Official .npz format: key names, scanned <-> unrolled, resolution/head adaptation, and errors."""
import logging

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax import models
from vitjax.interop import npz
from vitjax.models.posemb import resize_grid

SMALL = dict(patch_size=4, width=32, depth=2, mlp_dim=64, num_heads=2)


def shapes(model, image_size=16, channels=3, boxed=False):
    images = jax.ShapeDtypeStruct((1, image_size, image_size, channels), jnp.float32)
    variables = jax.eval_shape(lambda x: model.init(jax.random.key(0), x), images)
    return variables if boxed else nn.meta.unbox(variables)["params"]


def random_like(tree, seed=0):
    """Random float32 arrays for every leaf of a (possibly boxed) tree of ShapeDtypeStructs."""
    rng = np.random.RandomState(seed)
    return jax.tree.map(lambda s: (0.1 * rng.standard_normal(s.shape)).astype(np.float32), tree)


def flat(tree):
    return {"/".join(str(getattr(k, "key", k)) for k in path): v
            for path, v in jax.tree_util.tree_leaves_with_path(tree)}


def _unflatten(flat_dict):
    tree = {}
    for key, value in flat_dict.items():
        node = tree
        *parents, leaf = key.split("/")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return tree


def assert_same_tree(a, b):
    fa, fb = flat(a), flat(b)
    assert sorted(fa) == sorted(fb)
    for k in fa:
        np.testing.assert_array_equal(fa[k], fb[k], err_msg=k)


# ---------------------------------------------------------------------------------------------
# Key names and round trips.

def test_vit_official_key_names(tmp_path):
    model = models.ViT(num_classes=3, representation_size=8, **dict(SMALL, depth=1))
    path = npz.save(tmp_path / "vit", random_like(shapes(model)))
    assert path.endswith(".npz")
    keys = set(np.load(path).files)
    block = "Transformer/encoderblock_0/"
    expected = {"embedding/kernel", "embedding/bias", "cls", "Transformer/posembed_input/pos_embedding",
                "Transformer/encoder_norm/scale", "Transformer/encoder_norm/bias",
                "pre_logits/kernel", "pre_logits/bias", "head/kernel", "head/bias"}
    expected |= {f"{block}LayerNorm_{i}/{p}" for i in (0, 2) for p in ("scale", "bias")}
    expected |= {f"{block}MultiHeadDotProductAttention_1/{n}/{p}" for n in ("query", "key", "value", "out")
                 for p in ("kernel", "bias")}
    expected |= {f"{block}MlpBlock_3/Dense_{i}/{p}" for i in (0, 1) for p in ("kernel", "bias")}
    assert keys == expected
    data = np.load(path)
    assert data[f"{block}MultiHeadDotProductAttention_1/query/kernel"].shape == (32, 2, 16)
    assert data[f"{block}MultiHeadDotProductAttention_1/out/kernel"].shape == (2, 16, 32)


@pytest.mark.parametrize("save_scanned,load_scanned", [(False, True), (True, False), (True, True)])
def test_scanned_and_unrolled_round_trip(tmp_path, save_scanned, load_scanned):
    source = models.ViT(num_classes=3, scan=save_scanned, **SMALL)
    target = models.ViT(num_classes=3, scan=load_scanned, **SMALL)
    params = random_like(shapes(source))
    path = npz.save(tmp_path / "ckpt.npz", params)
    keys = np.load(path).files
    assert not any(k.startswith("Transformer/encoderblock/") for k in keys)  # always unstacked on disk
    assert "Transformer/encoderblock_1/MlpBlock_3/Dense_1/kernel" in keys
    loaded = npz.load(path, target)
    assert jax.tree.map(lambda x: (x.shape, x.dtype), loaded) == \
        jax.tree.map(lambda s: (s.shape, s.dtype), shapes(target))
    if save_scanned == load_scanned:
        assert_same_tree(loaded, params)
    else:
        back = npz.load(npz.save(tmp_path / "again.npz", loaded), source)
        assert_same_tree(back, params)


def test_save_accepts_boxed_variables_and_bf16(tmp_path):
    model = models.ViT(num_classes=3, **SMALL)
    boxed = random_like(shapes(model, boxed=True))  # {'params': {... Partitioned boxes ...}}
    is_box = lambda x: isinstance(x, nn.Partitioned)  # noqa: E731
    assert any(is_box(x) for x in jax.tree.leaves(boxed, is_leaf=is_box))
    path = npz.save(tmp_path / "boxed.npz", boxed)
    assert_same_tree(npz.load(path, model), nn.meta.unbox(boxed)["params"])
    bf16 = jax.tree.map(lambda x: jnp.asarray(x, jnp.bfloat16), nn.meta.unbox(boxed)["params"])
    data = np.load(npz.save(tmp_path / "bf16.npz", bf16))
    assert data["head/kernel"].dtype == np.float32


def test_bit_official_key_names_and_round_trip(tmp_path):
    model = models.BiT(num_classes=5, variant="R50x1")
    params = random_like(shapes(model, 32))
    path = npz.save(tmp_path / "bit.npz", params)
    data = np.load(path)
    assert data["resnet/root_block/standardized_conv2d/kernel"].shape == (7, 7, 3, 64)
    assert data["resnet/block1/unit01/a/proj/standardized_conv2d/kernel"].shape == (1, 1, 64, 256)
    assert data["resnet/block4/unit03/a/group_norm/gamma"].shape == (2048,)  # pre-activation: input width
    assert data["resnet/block4/unit03/c/group_norm/gamma"].shape == (512,)
    assert data["resnet/group_norm/beta"].shape == (2048,)
    assert data["resnet/head/conv2d/kernel"].shape == (1, 1, 2048, 5)
    assert all(k.startswith("resnet/") for k in data.files)
    assert_same_tree(npz.load(path, model), params)


def test_hybrid_round_trip_keeps_backbone_names(tmp_path):
    model = models.ViT(num_classes=4, variant="Ti/16", resnet="R50", depth=1)
    params = random_like(shapes(model, 32))
    path = npz.save(tmp_path / "hybrid.npz", params)
    keys = np.load(path).files
    for key in ("conv_root/kernel", "gn_root/scale", "block1/unit1/conv_proj/kernel", "block3/unit9/gn3/bias",
                "embedding/kernel"):
        assert key in keys
    assert_same_tree(npz.load(path, model, image_size=32), params)


def test_big_vision_layout_is_read():
    """big_vision files: Linen names, stacked blocks, top-level pos_embedding, 'params/' prefix."""
    model = models.ViT(num_classes=3, scan=True, **SMALL)
    params = random_like(shapes(model))
    arrays = {f"params/{k}": v for k, v in flat(params).items()}
    arrays["params/pos_embedding"] = arrays.pop("params/Transformer/posembed_input/pos_embedding")
    assert_same_tree(npz.load(arrays, model), params)


# ---------------------------------------------------------------------------------------------
# Fine-tuning adaptations.

def test_b16_224_checkpoint_loads_at_384_with_new_head(tmp_path, caplog):
    """The issue's case: ViT-B/16 saved at 224 (14x14 grid) -> 384 (24x24) with a 10-class head."""
    source = models.ViT(num_classes=1000, variant="B/16")
    tree = shapes(source, 224)
    rng = np.random.RandomState(0)
    # Distinct constants make every leaf traceable without drawing 86M random numbers.
    params = {k: np.full(s.shape, 0.001 * i, np.float32) for i, (k, s) in enumerate(sorted(flat(tree).items()))}
    params["Transformer/posembed_input/pos_embedding"] = rng.standard_normal((1, 197, 768)).astype(np.float32)
    params["head/kernel"] = rng.standard_normal((768, 1000)).astype(np.float32)
    path = npz.save(tmp_path / "b16.npz", _unflatten(params))

    target = models.ViT(num_classes=10, variant="B/16")
    with caplog.at_level(logging.WARNING, logger="vitjax.interop.npz"):
        loaded = npz.load(path, target, image_size=384)
    assert "14x14 to a 24x24 grid" in caplog.text and "re-initialised the head for 10 classes" in caplog.text
    want = shapes(target, 384)
    assert jax.tree.map(lambda x: (x.shape, x.dtype), loaded) == \
        jax.tree.map(lambda s: (s.shape, s.dtype), want)
    out = flat(loaded)
    posemb = out["Transformer/posembed_input/pos_embedding"]
    assert posemb.shape == (1, 577, 768)
    source_posemb = params["Transformer/posembed_input/pos_embedding"]
    np.testing.assert_array_equal(posemb[:, 0], source_posemb[:, 0])  # CLS entry kept
    np.testing.assert_allclose(posemb, resize_grid(source_posemb, (24, 24), 1), rtol=0, atol=0)
    np.testing.assert_array_equal(out["head/kernel"], np.zeros((768, 10)))
    np.testing.assert_array_equal(out["head/bias"], np.zeros((10,)))
    for key, value in out.items():
        if not key.startswith(("head/", "Transformer/posembed_input/")):
            np.testing.assert_array_equal(value, params[key], err_msg=key)


def test_posemb_resize_agrees_with_timms():
    """timm (a test extra) resamples position embeddings for fine-tuning the same way: bilinear, no antialias."""
    torch = pytest.importorskip("torch")
    resample_abs_pos_embed = pytest.importorskip("timm.layers").resample_abs_pos_embed
    source = np.random.default_rng(0).standard_normal((1, 1 + 14 * 14, 64)).astype(np.float32)
    for grid in ((24, 24), (10, 10), (16, 20)):
        theirs = resample_abs_pos_embed(torch.from_numpy(source), new_size=grid, num_prefix_tokens=1,
                                        interpolation="bilinear", antialias=False).numpy()
        np.testing.assert_allclose(resize_grid(source, grid, 1), theirs, atol=1e-5, err_msg=str(grid))


def test_default_image_size_is_the_checkpoints(tmp_path):
    model = models.ViT(num_classes=3, **SMALL)
    path = npz.save(tmp_path / "c.npz", random_like(shapes(model, 24)))  # 6x6 grid
    loaded = npz.load(path, model)
    assert loaded["Transformer"]["posembed_input"]["pos_embedding"].shape == (1, 37, 32)


def test_head_reinit_follows_model_init_and_pre_logits_dropped(tmp_path, caplog):
    source = models.ViT(num_classes=3, representation_size=8, **SMALL)
    path = npz.save(tmp_path / "c.npz", random_like(shapes(source)))
    target = models.ViT(num_classes=50, head_zero_init=False, **SMALL)
    with caplog.at_level(logging.WARNING, logger="vitjax.interop.npz"):
        loaded = npz.load(path, target)
    assert "pre_logits" in caplog.text and "pre_logits" not in loaded
    kernel = np.asarray(loaded["head"]["kernel"])
    # As this model initialises its head: LeCun normal, a normal truncated at 2 sd whose variance is
    # 1 / fan_in (fan_in = width = 32), so a std of 0.177 (+-2% over these 1600 draws), and no value
    # beyond 2 / sqrt(32) / 0.8796 = 0.402; the bias zero.
    assert kernel.shape == (32, 50)
    assert np.std(kernel) == pytest.approx(1 / np.sqrt(32), rel=0.1)
    assert abs(np.mean(kernel)) < 0.02 and np.abs(kernel).max() <= 2 / np.sqrt(32) / 0.8796 + 1e-6
    np.testing.assert_array_equal(loaded["head"]["bias"], np.zeros(50, np.float32))
    # A model that does want pre_logits keeps them.
    kept = npz.load(path, models.ViT(num_classes=3, representation_size=8, **SMALL))
    assert kept["pre_logits"]["kernel"].shape == (32, 8)


# ---------------------------------------------------------------------------------------------
# Errors.

def test_wrong_family_raises():
    bit_arrays = npz.to_official(jax.tree.map(lambda s: np.zeros(s.shape, np.float32),
                                              shapes(models.BiT(num_classes=10), 32)))
    with pytest.raises(ValueError, match=r"BiT ResNet-v2 checkpoint but the model is a ViT.*variant='R50x1'"):
        npz.load(bit_arrays, models.ViT(num_classes=10, variant="B/16"))
    vit_arrays = npz.to_official(random_like(shapes(models.ViT(num_classes=3, **SMALL))))
    with pytest.raises(ValueError, match="ViT checkpoint but the model is a BiT ResNet-v2"):
        npz.load(vit_arrays, models.BiT(num_classes=3))
    with pytest.raises(ValueError, match=r"R50\+ViT hybrid.*resnet=None"):
        npz.load(vit_arrays, models.ViT(num_classes=3, resnet="R50", **dict(SMALL, patch_size=16)))
    with pytest.raises(ValueError, match="cannot tell the model family"):
        npz.load({"foo/kernel": np.zeros(3)}, models.ViT(num_classes=3, **SMALL))


def test_not_an_npz_file(tmp_path):
    bad = tmp_path / "weights.pth"
    bad.write_bytes(b"not a zip archive")
    with pytest.raises(ValueError, match="not a readable .npz"):
        npz.load(bad, models.ViT(num_classes=3, **SMALL))
    with pytest.raises(FileNotFoundError):
        npz.load(tmp_path / "missing.npz", models.ViT(num_classes=3, **SMALL))


def test_channel_mismatch_raises_and_can_be_adapted(tmp_path):
    model = models.ViT(num_classes=3, **SMALL)
    params = random_like(shapes(model))
    path = npz.save(tmp_path / "rgb.npz", params)
    with pytest.raises(ValueError, match=r"channel-count mismatch.*embedding/kernel.*3-channel.*channels=1"
                                         r".*jnp.repeat.*adapt_channels=True"):
        npz.load(path, model, channels=1)
    grey = npz.load(path, model, channels=1, adapt_channels=True, verbose=False)
    assert grey["embedding"]["kernel"].shape == (4, 4, 1, 32)
    x = np.random.RandomState(1).randn(2, 16, 16, 1).astype(np.float32)
    apply = jax.jit(model.apply)
    np.testing.assert_allclose(apply({"params": grey}, x), apply({"params": params}, np.repeat(x, 3, -1)),
                               rtol=1e-5, atol=1e-5)


def test_other_mismatches_list_keys_and_shapes(tmp_path):
    path = npz.save(tmp_path / "c.npz", random_like(shapes(models.ViT(num_classes=3, **SMALL))))
    with pytest.raises(ValueError, match=r"(?s)only the resolution and the number of classes may differ"
                                         r"\):\n.*  shape mismatch embedding/kernel: checkpoint 4x4x3x32, "
                                         r"model 4x4x3x16"):
        npz.load(path, models.ViT(num_classes=3, **dict(SMALL, width=16)))
    with pytest.raises(ValueError, match=r"missing from the checkpoint "
                                         r"Transformer/encoderblock_2/LayerNorm_0/bias"):
        npz.load(path, models.ViT(num_classes=3, **dict(SMALL, depth=3)))
    with pytest.raises(ValueError, match=r"unexpected in the checkpoint Transformer/encoderblock_1/"):
        npz.load(path, models.ViT(num_classes=3, **dict(SMALL, depth=1), scan=True))
    with pytest.raises(ValueError, match=r"MlpBlock_0/Dense_0/kernel: checkpoint 32x64, model 32x128"):
        npz.load(path, models.ViT(num_classes=3, **dict(SMALL, mlp_dim=128)))
    with pytest.raises(ValueError, match=r"unexpected in the checkpoint cls"):
        npz.load(path, models.ViT(num_classes=3, pool="gap", **SMALL))
    with pytest.raises(ValueError, match=r"patch_size=4"):
        npz.load(path, models.ViT(num_classes=3, **SMALL), image_size=18)
