"""LiT's image tower from a vitjax encoder (vitjax/interop/lit_init.py): a ViT's, an MAE's or a DINO's network
loads as the whole tower and the tower then computes the source's representation; sources that do not fit
(other dimensions, pooling, activation, channels, grid, a BiT or Swin, CLIP's layout, a missing path) are
refused with the setting that fits."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import traverse_util

from vitjax import models
from vitjax.interop import lit_init, npz
from vitjax.models.dual_encoder import ConfiguredDualEncoder

TOWER = dict(patch_size=8, width=16, depth=1, num_heads=2, mlp_dim=32)
DUAL = dict(layout="siglip", image_size=16, patch_size=8, vision_width=16, vision_depth=1, vision_mlp_dim=32,
            vision_heads=2, text_width=16, text_depth=1, text_mlp_dim=32, text_heads=2, vision_pool="tok",
            activation="gelu")
SHAPE = (16, 16, 3)


def _drawn(model, shape, seed=0):
    """{key: float32 array} drawn at random on the shapes of `model`'s parameters."""
    tree = jax.eval_shape(lambda x: model.init({"params": jax.random.key(0), "mask": jax.random.key(1)}, x),
                          jax.ShapeDtypeStruct((1, *shape), jnp.float32))
    flat = traverse_util.flatten_dict(nn.meta.unbox(tree["params"]), sep="/")
    rng = np.random.default_rng(seed)
    return {k: rng.normal(size=v.shape).astype(np.float32) for k, v in flat.items()}


def _saved(tmp_path, name, model, shape=SHAPE):
    flat = _drawn(model, shape)
    path = str(tmp_path / f"{name}.npz")
    npz.save(path, traverse_util.unflatten_dict(flat, sep="/"))
    return path, flat


def _vit(**changes):
    return models.build("vit", 7, **{"pool": "tok", "posemb": "learned", **TOWER, **changes})


def _dual(**changes):
    return ConfiguredDualEncoder(**{**DUAL, **changes})


def test_a_vits_network_is_the_whole_tower_and_the_tower_computes_its_representation(tmp_path):
    vit = _vit()
    path, source = _saved(tmp_path, "vit", vit)
    tower = lit_init.read(path, _dual(), SHAPE)
    loaded = traverse_util.flatten_dict(tower.params, sep="/")
    assert loaded.keys() == {k for k in source if not k.startswith("head/")}
    for key, value in loaded.items():
        np.testing.assert_array_equal(value, source[key], err_msg=key)
    assert tower.kind == "vit" and tower.left_out == ("head",)
    model = _dual()
    images = jax.random.normal(jax.random.key(3), (2, *SHAPE))
    params = tower.apply(model.init(jax.random.key(0), images)["params"])
    embedded = model.apply({"params": params}, images, method="embed_images")
    features = vit.clone(num_classes=0).apply({"params": traverse_util.unflatten_dict(
        {k: v for k, v in source.items() if not k.startswith("head/")}, sep="/")}, images)
    np.testing.assert_allclose(embedded, features / np.linalg.norm(features, axis=-1, keepdims=True), atol=1e-6)


def test_an_maes_encoder_loads_as_the_tower_with_its_sincos_table(tmp_path):
    mae = models.build("mae", 7, variant=None, **TOWER, decoder_width=16, decoder_depth=1, decoder_heads=2)
    path, source = _saved(tmp_path, "mae", mae)
    tower = lit_init.read(path, _dual(), SHAPE)
    loaded = traverse_util.flatten_dict(tower.params, sep="/")
    assert tower.kind == "mae" and tower.left_out == ("decoder",)
    for key in ("embedding/kernel", "cls", "Transformer/encoderblock_0/MlpBlock_0/Dense_0/kernel"):
        np.testing.assert_array_equal(loaded[key], source[key], err_msg=key)
    assert loaded["Transformer/posembed_input/pos_embedding"].shape == (1, 5, 16)  # CLS + 2x2 patches


@pytest.mark.parametrize("changes, message", [
    (dict(vision_width=32, text_width=32), "width 16 against the tower's 32 (--config.model.vision_width=16)"),
    (dict(patch_size=4), "patch_size 8 against the tower's 4 (--config.model.patch_size=8)"),
    (dict(vision_depth=2), "depth 1 against the tower's 2 (--config.model.vision_depth=1)"),
    (dict(image_size=32), "a learned position table of 4 patches against the tower's 4x4 "
                          "(--config.model.image_size=16"),
    (dict(vision_pool=None), "pooling 'tok' against the tower's 'map' (set --config.model.vision_pool=tok)"),
    (dict(activation=None), "activation 'gelu' against the tower's 'gelu_tanh' (set --config.model.activation=gelu)"),
    (dict(layout="clip"), "set --config.model.layout=siglip"),
])
def test_a_source_that_does_not_fit_the_tower_is_refused_with_the_setting_that_fits(tmp_path, changes, message):
    path, _ = _saved(tmp_path, "vit", _vit())
    model = _dual(**changes)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        lit_init.read(path, model, (model.image_size, model.image_size, 3))


def test_a_grey_source_a_bit_a_swin_and_a_missing_path_are_refused(tmp_path):
    grey, _ = _saved(tmp_path, "grey", _vit(), shape=(16, 16, 1))
    with pytest.raises(ValueError, match="1 input channels against the images' 3"):
        lit_init.read(grey, _dual(), SHAPE)
    bit = models.build("bit", 5, variant="R26x1", stem="small")
    swin = models.build("swin", 5, variant=None, patch_size=8, embed_dim=16, depths=(1, 1), num_heads=(1, 2),
                        window_size=2)
    for name, model in (("bit", bit), ("swin", swin)):
        path = str(tmp_path / f"{name}.npz")
        np.savez(path, **_drawn(model, (32, 32, 3)))
        with pytest.raises(ValueError, match="LiT's image tower is a ViT, loaded from a vitjax ViT, MAE or DINO "
                                             "run only"):
            lit_init.read(path, _dual(), SHAPE)
    with pytest.raises(FileNotFoundError, match="init_from='/nowhere/run' does not exist"):
        lit_init.read("/nowhere/run", _dual(), SHAPE)
