"""Cross-checks against timm: the same weights give the same logits in vitjax and timm.

vitjax -> timm: random vitjax params on the model's exact tree (every leaf, the zero-initialised head and
norms too, so a dropped or transposed parameter shows), `npz.save`, timm's `load_pretrained`, compare logits.
timm -> vitjax: perturb every parameter of the timm model, export with `timm_weights.to_official`,
`npz.load`, compare.
Nothing is downloaded: timm models are built with pretrained=False and read only the files written here.
"""
import jax
import numpy as np
import pytest

torch = pytest.importorskip("torch")
timm = pytest.importorskip("timm")
from timm.models.vision_transformer import VisionTransformer  # noqa: E402

from tests.interop.timm_reference import images, jitter_timm, random_params, rel_err, timm_logits  # noqa: E402
from vitjax import models  # noqa: E402
from vitjax.interop import npz, timm_weights  # noqa: E402

TOL = 1e-4  # relative error ||a - b|| / ||b||, float32


def cross_check(tmp_path, model, timm_model_fn, image_size, name):
    """Both directions for one configuration; returns (vitjax->timm, timm->vitjax) relative errors."""
    apply = jax.jit(model.apply)
    x = images(image_size)
    params = random_params(model, image_size)
    path = npz.save(tmp_path / "checkpoint.npz", params)
    ours = apply({"params": params}, x)
    tm = timm_model_fn().eval()
    tm.load_pretrained(path)
    forward = rel_err(ours, timm_logits(tm, x))

    # Reverse: perturb every timm parameter (new values vitjax never held), export, load, compare.
    tm = jitter_timm(tm, seed=3)
    loaded = npz.load(timm_weights.to_official(tm), model, image_size=image_size, verbose=False)
    backward = rel_err(apply({"params": loaded}, x), timm_logits(tm, x))
    print(f"{name}: vitjax->timm {forward:.2e}, timm->vitjax {backward:.2e}")
    assert forward <= TOL, f"{name}: vitjax->timm relative error {forward:.3g}"
    assert backward <= TOL, f"{name}: timm->vitjax relative error {backward:.3g}"
    return forward, backward


def test_vit_ti16_224(tmp_path):
    model = models.ViT(num_classes=10, variant="Ti/16")
    cross_check(tmp_path, model, lambda: timm.create_model(
        "vit_tiny_patch16_224", pretrained=False, num_classes=10), 224, "ViT-Ti/16@224")


def test_vit_s32_384_scanned(tmp_path):
    # Scanned parameters: save unstacks the layer axis, load stacks it again.
    model = models.ViT(num_classes=7, variant="S/32", scan=True)
    cross_check(tmp_path, model, lambda: timm.create_model(
        "vit_small_patch32_384", pretrained=False, num_classes=7, img_size=384), 384, "ViT-S/32@384 scan")


def test_vit_small_gap_patch8_48(tmp_path):
    model = models.ViT(num_classes=5, patch_size=8, width=64, depth=3, mlp_dim=128, num_heads=4, pool="gap")
    cross_check(tmp_path, model, lambda: VisionTransformer(
        img_size=48, patch_size=8, num_classes=5, embed_dim=64, depth=3, num_heads=4, mlp_ratio=2.0,
        class_token=False, global_pool="avg", fc_norm=False), 48, "ViT w64 d3 p8 gap@48")


def test_vit_small_map_patch4_32(tmp_path):
    model = models.ViT(num_classes=6, patch_size=4, width=64, depth=2, mlp_dim=256, num_heads=4, pool="map",
                       scan=True)
    cross_check(tmp_path, model, lambda: VisionTransformer(
        img_size=32, patch_size=4, num_classes=6, embed_dim=64, depth=2, num_heads=4, mlp_ratio=4.0,
        class_token=False, global_pool="map"), 32, "ViT w64 d2 p4 map@32")


def test_bit_r50x1(tmp_path):
    model = models.BiT(num_classes=10, variant="R50x1")
    cross_check(tmp_path, model, lambda: timm.create_model(
        "resnetv2_50x1_bit", pretrained=False, num_classes=10), 64, "BiT-R50x1@64")


def test_hybrid_r50_b16(tmp_path):
    # The full R50 (3, 4, 9) backbone and B/16 width; depth 2 instead of 12 keeps it cheap.
    model = models.ViT(num_classes=10, variant="B/16", resnet="R50", depth=2)
    cross_check(tmp_path, model, lambda: timm.create_model(
        "vit_base_r50_s16_224", pretrained=False, num_classes=10, img_size=64, depth=2), 64,
        "R50+ViT-B/16 d2@64")


def test_resized_checkpoint_matches_timm_resize(tmp_path):
    """A 32x32 checkpoint loaded at 48x48 with another head: timm's own resize gives the same features."""
    small = dict(patch_size=8, width=64, depth=2, mlp_dim=128, num_heads=4)
    params = random_params(models.ViT(num_classes=10, **small), 32)
    path = npz.save(tmp_path / "w32.npz", params)
    model = models.ViT(num_classes=3, **small)
    loaded = npz.load(path, model, image_size=48, verbose=False)
    assert loaded["Transformer"]["posembed_input"]["pos_embedding"].shape == (1, 1 + 36, 64)
    x = images(48)
    logits, state = jax.jit(lambda p, x: model.apply({"params": p}, x, mutable=["intermediates"]))(loaded, x)
    assert np.all(np.asarray(logits) == 0.0)  # fresh zero head
    ours = state["intermediates"]["pre_logits"][0]
    tm = VisionTransformer(img_size=48, patch_size=8, num_classes=3, embed_dim=64, depth=2, num_heads=4,
                           mlp_ratio=2.0).eval()
    tm.load_pretrained(path)
    err = rel_err(ours, timm_logits(tm, x, pre_logits=True))
    print(f"resized 32->48 features vs timm: {err:.2e}")
    assert err <= TOL


def test_timm_export_errors():
    tm = VisionTransformer(img_size=16, patch_size=8, num_classes=2, embed_dim=16, depth=1, num_heads=2,
                           class_token=False, global_pool="avg")  # fc_norm: norm after pooling
    with pytest.raises(ValueError, match="num_heads="):
        timm_weights.to_official(tm.state_dict())
    with pytest.raises(ValueError, match=r"no place in the official format: \['fc_norm.bias', 'fc_norm.weight'\]"):
        timm_weights.to_official(tm)
    with pytest.raises(ValueError, match="not a timm VisionTransformer or ResNetV2"):
        timm_weights.to_official({"conv1.weight": np.zeros((1, 1, 1, 1))})
