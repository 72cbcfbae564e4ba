"""SAM's image encoder from a ViT or MAE encoder (vitjax/interop/sam_init.py): the blocks load tensor for
tensor, the patch embedding gives the source's embedding of the same pixels, the position embedding is the
ViT's table resized or the MAE's sin-cos table on SAM's grid, SAM's own parts keep their init; sources that
do not fit (dimensions, a BiT or Swin, no learned table, another pixel range, no file) are refused with the
fix. Parameters are drawn on eval_shape's trees: nothing here compiles a model."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import traverse_util
import flax.linen as nn

from vitjax import models
from vitjax.interop import npz, sam_init
from vitjax.models import posemb
from vitjax.models.mae import patchify
from vitjax.models.sam import SAM, preprocess

ENCODER = dict(width=16, depth=2, num_heads=2)
SAM_TINY = dict(variant=None, image_size=32, patch_size=8, global_attn_indexes=(1,), window_size=2,
                prompt_width=16, mask_in_chans=4, decoder_depth=1, decoder_heads=2, decoder_mlp_dim=32,
                iou_head_hidden=16, **ENCODER)  # mlp_ratio 4: MLP 64


def _drawn(model, shape, seed=0, **init_kwargs):
    """{key: float32 array} drawn at random on the shapes of `model`'s parameters."""
    tree = jax.eval_shape(lambda x: model.init({"params": jax.random.key(0), "mask": jax.random.key(1)}, x,
                                               **init_kwargs), jax.ShapeDtypeStruct(shape, jnp.float32))
    flat = traverse_util.flatten_dict(nn.meta.unbox(tree["params"]), sep="/")
    rng = np.random.default_rng(seed)
    return {k: rng.normal(size=v.shape).astype(np.float32) for k, v in flat.items()}


def _saved(tmp_path, flat, name):
    path = str(tmp_path / f"{name}.npz")
    npz.save(path, traverse_util.unflatten_dict(flat, sep="/"))
    return path


def _vit(tmp_path, channels=1, posemb_kind="learned", **changes):
    vit = models.build("vit", 5, **{**ENCODER, "mlp_dim": 64, "patch_size": 8, **changes},
                       pool="tok", posemb=posemb_kind)
    flat = _drawn(vit, (1, 16, 16, channels), train=False)
    return _saved(tmp_path, flat, "vit"), flat


def _mae(tmp_path):
    mae = models.build("mae", 5, variant=None, **ENCODER, mlp_dim=64, patch_size=8, decoder_width=16,
                       decoder_depth=1, decoder_heads=2)
    flat = _drawn(mae, (1, 16, 16, 1), seed=1)
    return _saved(tmp_path, flat, "mae"), flat


def _sam(**changes):
    return SAM(**{**SAM_TINY, **changes})


def test_a_vits_blocks_load_tensor_for_tensor_and_sams_own_parts_stay_at_init(tmp_path):
    path, source = _vit(tmp_path)
    model = _sam()
    start = sam_init.read(path, model)
    initial = _drawn(model, (1, 32, 32, 3), seed=2)
    loaded = traverse_util.flatten_dict(start.apply(traverse_util.unflatten_dict(initial, sep="/")), sep="/")
    for i in range(2):
        for part, sam_part in (("LayerNorm_0", "LayerNorm_0"), ("LayerNorm_1", "LayerNorm_1"),
                               ("MlpBlock_0", "MlpBlock_0"), ("MultiHeadDotProductAttention_0", "attention")):
            keys = [k for k in source if k.startswith(f"Transformer/encoderblock_{i}/{part}/")]
            assert keys
            for key in keys:
                rest = key.split(f"/{part}/")[1]
                np.testing.assert_array_equal(np.asarray(loaded[f"image_encoder/block_{i}/{sam_part}/{rest}"]),
                                              source[key], err_msg=key)
    table = posemb.resize_grid(source["Transformer/posembed_input/pos_embedding"], (4, 4), 1)[:, 1:]
    np.testing.assert_array_equal(np.asarray(loaded["image_encoder/pos_embed"]), table.reshape(1, 4, 4, 16))
    assert set(start.at_init) == set(initial) - set(start.params)
    assert {k.split("/")[0] for k in start.at_init} == {"image_encoder", "prompt_encoder", "mask_decoder"}
    assert {k.split("/")[-1] for k in start.at_init if k.startswith("image_encoder/block_")} == {
        "rel_pos_h", "rel_pos_w"}
    assert all(k.startswith("image_encoder/neck/") for k in start.at_init
               if k.startswith("image_encoder/") and "/block_" not in k)
    for key in start.at_init:
        np.testing.assert_array_equal(np.asarray(loaded[key]), initial[key], err_msg=key)
    assert start.unused == ("Transformer/encoder_norm/bias", "Transformer/encoder_norm/scale", "cls",
                            "head/bias", "head/kernel")
    assert start.report()["loaded"] == sorted(start.params)
    assert "resized bilinearly from its 2x2 grid to SAM's 4x4" in start.summary()


def _embedding(kernel, bias, images, patch=8):
    return patchify(jnp.asarray(images, jnp.float32), patch) @ kernel.reshape(-1, kernel.shape[-1]) + bias


@pytest.mark.parametrize("channels, pixel_range", [(1, (-1.0, 1.0)), (1, (0.0, 1.0)), (3, (-1.0, 1.0))])
def test_the_patch_embedding_gives_the_sources_embedding_of_the_same_pixels(channels, pixel_range):
    rng = np.random.default_rng(3)
    kernel = rng.normal(size=(8, 8, channels, 16)).astype(np.float32)
    bias = rng.normal(size=16).astype(np.float32)
    pixels = rng.integers(0, 256, size=(2, 32, 32, channels)).astype(np.float32)
    low, high = pixel_range
    theirs = _embedding(kernel, bias, pixels / 255.0 * (high - low) + low)
    new_kernel, new_bias = sam_init.patch_kernel(kernel, bias, pixel_range)
    rgb = np.repeat(pixels, 3, axis=-1) if channels == 1 else pixels
    ours = _embedding(new_kernel, new_bias, preprocess(rgb, 32))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-4, atol=1e-3)


def test_an_maes_encoder_loads_with_its_sincos_table_on_sams_grid(tmp_path):
    path, source = _mae(tmp_path)
    start = sam_init.read(path, _sam())
    assert start.kind == "mae"
    np.testing.assert_array_equal(start.params["image_encoder/pos_embed"],
                                  posemb.sincos_2d_mae((4, 4), 16).reshape(1, 4, 4, 16))
    np.testing.assert_array_equal(start.params["image_encoder/block_1/attention/query/kernel"],
                                  source["Transformer/encoderblock_1/MultiHeadDotProductAttention_0/query/kernel"])
    assert {k.split("/")[0] for k in start.unused} == {"Transformer", "cls", "decoder", "decoder_embed",
                                                        "decoder_norm", "decoder_pred", "mask_token"} & {
        k.split("/")[0] for k in source}
    assert not any(k.startswith("Transformer/encoderblock_") for k in start.unused)


@pytest.mark.parametrize("changes, message", [
    (dict(width=32, num_heads=2), "width 16 against SAM's 32, mlp_dim 64 against SAM's 128; set "
                                  "--config.model.width=16 --config.model.mlp_ratio=4"),
    (dict(depth=3, global_attn_indexes=(2,)), "depth 2 against SAM's 3; set --config.model.depth=2"),
    (dict(num_heads=4), "num_heads 2 against SAM's 4; set --config.model.num_heads=2"),
    (dict(patch_size=4, image_size=32), "patch_size 8 against SAM's 4; set --config.model.patch_size=8"),
])
def test_an_encoder_of_other_dimensions_is_refused_with_the_settings_that_fit(tmp_path, changes, message):
    path, _ = _vit(tmp_path)
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        sam_init.read(path, _sam(**changes))


def test_a_bit_a_swin_or_a_vit_without_a_learned_table_is_refused(tmp_path):
    bit = models.build("bit", 5, variant="R26x1", stem="small")
    swin = models.build("swin", 5, variant=None, patch_size=8, embed_dim=16, depths=(1, 1), num_heads=(1, 2),
                        window_size=2)
    for name, model in (("bit", bit), ("swin", swin)):
        flat = _drawn(model, (1, 32, 32, 1), train=False)
        path = str(tmp_path / f"{name}.npz")
        np.savez(path, **flat)
        with pytest.raises(ValueError, match="is not a ViT or MAE encoder .* not a BiT, hybrid or Swin"):
            sam_init.read(path, _sam())
    path, _ = _vit(tmp_path, posemb_kind="sincos2d")
    with pytest.raises(ValueError, match="without a learned position embedding"):
        sam_init.read(path, _sam())
    with pytest.raises(FileNotFoundError, match="init_from='/nowhere/run' does not exist"):
        sam_init.read("/nowhere/run", _sam())


def test_a_source_over_other_channels_than_grey_or_rgb_is_refused():
    with pytest.raises(ValueError, match="over 2 input channels"):
        sam_init.patch_kernel(np.zeros((8, 8, 2, 16)), np.zeros(16), (-1.0, 1.0))
