"""MAE: masking, patch order, the loss, the encoder on visible tokens, gradients, the official
parameter count, and the encoder loading into a ViT classifier.

Tiny models (16x16 images, 4x4 patches: 16 tokens, 4 kept at mask ratio 0.75) except for the
ViT-B/16 parameter count, which is taken with jax.eval_shape (nothing allocated).
"""
import functools
import math
import os

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax import config as config_lib, models
from vitjax.interop import npz
from vitjax.models import mae as mae_lib
from vitjax.models.mae import MAE, encoder_params, mae_loss, normalized_patches, patchify, random_masking, unpatchify
from vitjax.models.transformer import Encoder

TINY = dict(variant=None, patch_size=4, width=16, depth=2, mlp_dim=32, num_heads=2,
            decoder_width=8, decoder_depth=1, decoder_heads=2)
SHAPE = (2, 16, 16, 3)


def _images(seed=0, shape=SHAPE):
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape), jnp.float32)


def _random_params(model, seed=1, shape=SHAPE):
    """Every parameter random (the zero biases too), so no path through the model is trivially dead."""
    shapes = nn.unbox(jax.eval_shape(model.init, jax.random.key(0), jax.ShapeDtypeStruct(shape, jnp.float32)))
    rng = np.random.default_rng(seed)
    return jax.tree.map(lambda s: jnp.asarray(0.3 * rng.normal(size=s.shape), s.dtype), shapes)


@functools.cache
def _apply(model):
    """Jitted (pred, mask, ids_restore, latent) of `model` for (params, images, mask key)."""
    def run(params, images, key):
        (pred, mask, ids), state = model.apply(params, images, return_ids=True, rngs={"mask": key},
                                               mutable=["intermediates"])
        return pred, mask, ids, state["intermediates"]["latent"][0]
    return jax.jit(run)


# --- masking ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("length, ratio, kept", [(196, 0.75, 49), (49, 0.75, 12), (16, 0.0, 16), (10, 0.9, 1),
                                                 (10, 0.3, 7)])
def test_masking_keeps_round_fraction_per_example_and_ids_restore_inverts_the_shuffle(length, ratio, kept):
    batch = 64
    ids_keep, mask, ids_restore = map(np.asarray, random_masking(jax.random.key(0), batch, length, ratio))
    assert ids_keep.shape == (batch, kept) and mask.shape == ids_restore.shape == (batch, length)
    assert (mask.sum(axis=1) == length - kept).all()
    for row in range(batch):
        assert sorted(ids_restore[row]) == list(range(length))  # a permutation
        # The j-th kept token sits at place j of the shuffled order, and it is visible.
        np.testing.assert_array_equal(ids_restore[row][ids_keep[row]], np.arange(kept))
        assert (mask[row][ids_keep[row]] == 0).all()
    # mask = 1 exactly where a token ranks at or after `kept` in the shuffled order.
    np.testing.assert_array_equal(mask, (ids_restore >= kept).astype(np.float32))
    if 0 < kept < length:
        subsets = len({tuple(sorted(row)) for row in ids_keep})
        assert subsets > min(batch, math.comb(length, kept)) // 2, "examples must draw their own masks"


def test_masking_is_deterministic_per_key_and_differs_across_keys():
    draw = lambda seed: np.asarray(random_masking(jax.random.key(seed), 8, 49, 0.75)[1])  # noqa: E731
    np.testing.assert_array_equal(draw(3), draw(3))
    assert (draw(3) != draw(4)).any()


def test_model_masks_from_its_mask_stream_per_example():
    model = MAE(**TINY)
    params, images, run = _random_params(model), _images(), _apply(model)
    pred, mask, ids, latent = run(params, images, jax.random.key(5))
    again = run(params, images, jax.random.key(5))
    np.testing.assert_array_equal(pred, again[0])
    np.testing.assert_array_equal(mask, again[1])
    assert (np.asarray(mask).sum(axis=1) == 12).all()
    assert (np.asarray(mask[0]) != np.asarray(mask[1])).any()
    assert (np.asarray(run(params, images, jax.random.key(6))[1]) != np.asarray(mask)).any()
    np.testing.assert_array_equal(mask, (np.asarray(ids) >= 4).astype(np.float32))
    assert pred.shape == (2, 16, 4 * 4 * 3) and pred.dtype == jnp.float32


# --- patches and the loss --------------------------------------------------------------------------

def test_patchify_round_trips_and_orders_pixels_as_the_official_code():
    images = _images(shape=(2, 8, 12, 3))  # a 2x3 grid of 4x4 patches: rows and columns differ
    patches = patchify(images, 4)
    assert patches.shape == (2, 6, 48)
    np.testing.assert_array_equal(unpatchify(patches, 4, (2, 3)), images)
    # The official patchify: NCHW images reshaped to (n, c, h, p, w, q), then 'nchpwq->nhwpqc'.
    nchw = np.asarray(images).transpose(0, 3, 1, 2).reshape(2, 3, 2, 4, 3, 4)
    official = np.einsum("nchpwq->nhwpqc", nchw).reshape(2, 6, 48)
    np.testing.assert_array_equal(patches, official)
    # The patch embedding reads each patch in the same order: one matrix product with its kernel.
    embed = mae_lib.PatchEmbedding(5, 4)
    variables = nn.unbox(embed.init(jax.random.key(0), images))
    kernel, bias = variables["params"]["kernel"], variables["params"]["bias"]
    np.testing.assert_allclose(embed.apply(variables, images).reshape(2, 6, 5),
                               patches @ kernel.reshape(48, 5) + bias, atol=1e-5)


def test_loss_counts_only_the_masked_patches():
    images = _images()
    mask = jnp.asarray(np.random.default_rng(2).permutation([1.0] * 12 + [0.0] * 4)[None].repeat(2, 0))
    pred = _images(3, (2, 16, 48))
    loss = lambda p: float(mae_loss(images, p, mask, 4, norm_pix_loss=True))  # noqa: E731
    visible, masked = int(np.argmin(mask[0])), int(np.argmax(mask[0]))
    assert loss(pred.at[0, visible].add(5.0)) == loss(pred)
    assert loss(pred.at[0, masked].add(5.0)) > loss(pred) + 1e-3
    # By hand: the per-patch mean of squared errors, averaged over the 24 masked patches.
    errors = np.mean((np.asarray(pred) - np.asarray(normalized_patches(patchify(images, 4)))) ** 2, axis=-1)
    assert loss(pred) == pytest.approx(float((errors * np.asarray(mask)).sum() / 24), rel=1e-5)
    assert float(mae_loss(images, pred, jnp.zeros_like(mask), 4)) == 0.0  # nothing masked
    assert float(MAE(**TINY).loss(images, pred, mask)) == loss(pred)  # its patch size, norm_pix_loss=True


def test_norm_pix_targets_have_zero_mean_and_unit_variance_per_patch():
    patches = patchify(3.0 * _images() + 1.0, 4)
    target = np.asarray(normalized_patches(patches))
    np.testing.assert_allclose(target.mean(axis=-1), 0.0, atol=1e-5)
    # The unbiased variance is 1 (up to the 1e-6 in the denominator), as the official code's torch.var.
    np.testing.assert_allclose(target.var(axis=-1, ddof=1), 1.0, atol=1e-5)
    # A perfect prediction of the normalised (or, without norm_pix_loss, the raw) patches has no loss.
    images, mask = 3.0 * _images() + 1.0, jnp.ones((2, 16))
    assert float(mae_loss(images, normalized_patches(patchify(images, 4)), mask, 4, True)) < 1e-10
    assert float(mae_loss(images, patchify(images, 4), mask, 4, False)) == 0.0


# --- the encoder sees the visible tokens only; gradients -------------------------------------------

def _flops(model, params, images):
    # The lowered (unoptimised) program's count: what the model asks for, without compiling it.
    cost = jax.jit(lambda p, x: model.apply(p, x, rngs={"mask": jax.random.key(0)})).lower(params, images).cost_analysis()
    return (cost[0] if isinstance(cost, (list, tuple)) else cost)["flops"]


def test_encoder_runs_on_the_visible_tokens_and_cls_only():
    model = MAE(**{**TINY, "depth": 4})
    params, images = _random_params(model), _images()
    *_, latent = _apply(model)(params, images, jax.random.key(0))
    assert latent.shape == (2, 1 + 4, 16)
    # With nothing masked the encoder takes all 17 tokens: 4 blocks of attention and MLP on 4x the rows.
    # The decoder (1 block, width 8) is the same in both, so the masked model costs well under 60%.
    masked = _flops(model, params, images)
    assert masked < 0.6 * _flops(model.clone(mask_ratio=0.0), params, images)
    # The whole MAE, decoder included, asks for under half the products of the ViT classifier that
    # runs the same encoder on every token (0.44x here).
    vit = model.classifier(5, posemb="sincos2d_mae", cls_only_last_block=False)
    assert masked < 0.5 * _flops(vit, _random_params(vit), images)


def test_loss_gradient_reaches_every_parameter():
    model = MAE(**TINY)
    params, images = _random_params(model), _images()

    def loss(p):
        pred, mask = model.apply(p, images, rngs={"mask": jax.random.key(0)})
        return model.loss(images, pred, mask)

    grads = jax.jit(jax.grad(loss))(params)["params"]
    zero = [jax.tree_util.keystr(path) for path, g in jax.tree_util.tree_flatten_with_path(grads)[0]
            if not np.abs(np.asarray(g)).max() > 0]
    assert not zero, f"no gradient reaches {zero}"
    for name in ("embedding", "cls", "Transformer", "decoder_embed", "mask_token", "decoder", "decoder_pred"):
        assert name in grads


# --- parameter counts ------------------------------------------------------------------------------

def test_official_mae_vit_b16_parameter_count():
    """ViT-B/16 MAE with the 8-block, 512-wide decoder at 224x224: 111,907,840 as the official code counts.

    Trainable (jax.eval_shape): encoder 85,647,360 (patch embedding 590,592, CLS 768, 12 blocks of
    7,087,872, final norm 1,536), decoder 26,008,320 (decoder_embed 768*512+512 = 393,728, mask token
    512, 8 blocks of 3,152,384, norm 1,024, decoder_pred 512*768+768 = 393,984). The official code
    also registers its two fixed sin-cos tables as (frozen) parameters: 197*768 = 151,296 in the
    encoder, 197*512 = 100,864 in the decoder. So: encoder 85,798,656 (timm's
    vit_base_patch16_224.mae, whose pos_embed is that table), decoder 26,109,184.
    """
    timm = pytest.importorskip("timm")
    torch = pytest.importorskip("torch")
    model = MAE(variant="B/16")
    shapes = nn.unbox(jax.eval_shape(model.init, jax.random.key(0), jax.ShapeDtypeStruct((1, 224, 224, 3),
                                                                                          jnp.float32)))["params"]
    size = lambda tree: sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(tree))  # noqa: E731
    encoder = size({k: shapes[k] for k in ("embedding", "cls", "Transformer")})
    decoder = size(shapes) - encoder
    assert (encoder, decoder) == (85_647_360, 26_008_320)
    assert size(shapes["decoder"]["encoderblock_0"]) == 3_152_384
    tokens = 1 + (224 // 16) ** 2
    assert (encoder + tokens * 768, decoder + tokens * 512) == (85_798_656, 26_109_184)
    assert size(shapes) + tokens * (768 + 512) == 111_907_840
    with torch.device("meta"):
        reference = timm.create_model("vit_base_patch16_224.mae", pretrained=False)
    assert reference.num_classes == 0 and reference.pos_embed.numel() == tokens * 768
    assert sum(p.numel() for p in reference.parameters()) == encoder + tokens * 768


# --- the encoder in a ViT classifier ---------------------------------------------------------------

def _vit_tokens(vit, params, images):
    """(pre-logits, every token of the encoder output) of a ViT."""
    capture = lambda module, method: isinstance(module, Encoder) and method == "__call__"  # noqa: E731
    _, state = vit.apply(params, images, capture_intermediates=capture, mutable=["intermediates"])
    return state["intermediates"]["pre_logits"][0], state["intermediates"]["Transformer"]["__call__"][0]


@pytest.mark.parametrize("posemb, route", [("learned", "merge"), ("sincos2d_mae", "merge"), ("learned", "npz")])
def test_with_nothing_masked_the_encoder_is_the_vit_classifiers(posemb, route):
    model = MAE(**{**TINY, "mask_ratio": 0.0})
    params, images = _random_params(model), _images()
    _, mask, ids, latent = _apply(model)(params, images, jax.random.key(7))
    assert float(mask.sum()) == 0.0 and latent.shape == (2, 17, 16)
    vit = model.classifier(5, posemb=posemb)
    encoder = encoder_params(params, (16, 16), posemb=posemb)
    if route == "merge":
        vit_params = {"params": {**_random_params(vit, 2)["params"], **encoder}}
    else:  # through the official layout, as a fine-tuning run's init_from would load it
        vit_params = {"params": npz.load(npz.to_official(encoder), vit, (16, 16), verbose=False)}
        assert not np.asarray(vit_params["params"]["head"]["kernel"]).any()  # a fresh zero head
    pre_logits, tokens = _vit_tokens(vit, vit_params, images)
    # The encoder saw the tokens shuffled; put them back in the image's order.
    unshuffled = jnp.take_along_axis(latent[:, 1:], ids[..., None], axis=1)
    np.testing.assert_allclose(tokens[:, 1:], unshuffled, atol=2e-5)
    np.testing.assert_allclose(tokens[:, 0], latent[:, 0], atol=2e-5)
    np.testing.assert_allclose(pre_logits, latent[:, 0], atol=2e-5)


@pytest.mark.parametrize("pool", ["tok", "gap", "map"])
@pytest.mark.parametrize("scan", [False, True])
def test_encoder_params_fill_the_classifier_but_its_heads(pool, scan):
    model = MAE(**{**TINY, "scan": scan})
    struct = jax.ShapeDtypeStruct(SHAPE, jnp.float32)
    shapes = lambda m: nn.unbox(jax.eval_shape(m.init, jax.random.key(0), struct))["params"]  # noqa: E731
    vit = model.classifier(5, pool=pool)
    loaded = encoder_params(shapes(model), (16, 16), pool=pool)
    want = {k: v for k, v in shapes(vit).items() if k not in ("head", "MAPHead_0")}
    assert jax.tree.map(lambda a: (a.shape, a.dtype), loaded) == jax.tree.map(lambda a: (a.shape, a.dtype), want)
    with pytest.raises(ValueError, match="use 'learned'"):
        encoder_params(shapes(model), (16, 16), posemb="sincos2d")


# --- registration and validation -------------------------------------------------------------------

def test_build_makes_an_mae_without_a_head_and_configs_see_its_fields():
    model = models.build("mae", 10, variant="Ti/16", mask_ratio=0.5, kernels=["heads_major"])
    assert isinstance(model, MAE) and model.mask_ratio == 0.5 and model.kernels == ("heads_major",)
    assert models.family("mae") is MAE
    fields = config_lib.model_fields("mae")
    assert {"mask_ratio", "decoder_width", "norm_pix_loss"} <= set(fields) and "num_classes" not in fields
    assert "num_classes" not in str(MAE.__dataclass_fields__)


def test_the_fashion_mnist_config_builds_the_default_vits_encoder_and_a_small_decoder():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    config = config_lib.load_config(os.path.join(root, "configs", "fashion_mnist", "mae.py"))
    model = models.build(config.model_name, 10, **config.model)
    images = jax.ShapeDtypeStruct((2, 28, 28, 1), jnp.float32)
    variables = jax.eval_shape(model.init, jax.random.key(0), images)
    pred, mask = jax.eval_shape(lambda v, x: model.apply(v, x, rngs={"mask": jax.random.key(0)}), variables, images)
    assert pred.shape == (2, 49, 16) and mask.shape == (2, 49)
    vit = config_lib.load_config(os.path.join(root, "configs", "fashion_mnist", "vit.py"))
    classifier = model.classifier(10, pool=vit.model.pool, posemb=vit.model.posemb)
    assert classifier.dims() == models.build("vit", 10, **vit.model).dims()
    assert mae_lib.num_visible(49, model.mask_ratio) == 12


@pytest.mark.parametrize("change, message", [
    ({"mask_ratio": 1.0}, r"mask_ratio must be in \[0, 1\), got 1.0"),
    ({"decoder_heads": 3}, "divisible"),
    ({"decoder_width": 10, "decoder_heads": 2}, "decoder_width divisible by 4, got 10"),
    ({"patch_size": 5}, "not divisible by patch_size=5"),
])
def test_bad_settings_raise_before_anything_runs(change, message):
    with pytest.raises(ValueError, match=message):
        MAE(**{**TINY, **change}).init(jax.random.key(0), _images())
