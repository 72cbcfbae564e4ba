"""timm_weights.load / state_dict, the one entry point each way, against timm itself: DeiT-Ti distilled
at 224 (both heads in distilled training, their mean in eval), and a MAP-pooled ViT and BiT for the
other paths. Random values for every parameter; nothing is downloaded."""
import jax
import numpy as np
import pytest

torch = pytest.importorskip("torch")
timm = pytest.importorskip("timm")
from timm.models.vision_transformer import VisionTransformer  # noqa: E402

from tests.interop.timm_reference import images, jitter_timm, random_params, rel_err  # noqa: E402
from vitjax import models  # noqa: E402
from vitjax.interop import timm_weights  # noqa: E402

TOL = 1e-5  # relative error ||a - b|| / ||b||, float32


def _timm_outputs(tm, x, train: bool):
    """timm's logits: (cls, dist) in distilled training (dropout-free model), else the mean."""
    tm.train(train)
    with torch.no_grad():
        out = tm(torch.from_numpy(x.transpose(0, 3, 1, 2)))
    return tuple(o.numpy() for o in out) if isinstance(out, tuple) else out.numpy()


def _to_timm(tm, params, model):
    state = timm_weights.state_dict(params, model)
    missing, unexpected = tm.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=True)
    assert not missing and not unexpected


def test_deit_tiny_distilled_224_both_directions(tmp_path):
    model = models.ViT(num_classes=1000, variant="Ti/16", distillation_token=True)
    x = images(224)
    apply = jax.jit(model.apply, static_argnames="train")
    tm = timm.create_model("deit_tiny_distilled_patch16_224", pretrained=False)
    tm.set_distilled_training(True)

    errors = {}
    params = random_params(model, 224)
    _to_timm(tm, params, model)  # vitjax -> timm
    ours_cls, ours_dist = apply({"params": params}, x, train=True)
    theirs_cls, theirs_dist = _timm_outputs(tm, x, train=True)
    errors["vitjax->timm cls"] = rel_err(ours_cls, theirs_cls)
    errors["vitjax->timm dist"] = rel_err(ours_dist, theirs_dist)
    errors["vitjax->timm mean"] = rel_err(apply({"params": params}, x, train=False), _timm_outputs(tm, x, False))

    tm = jitter_timm(tm, seed=3)  # timm -> vitjax: new values for every timm parameter
    loaded = timm_weights.load(tm, model)
    ours_cls, ours_dist = apply({"params": loaded}, x, train=True)
    theirs_cls, theirs_dist = _timm_outputs(tm, x, train=True)
    errors["timm->vitjax cls"] = rel_err(ours_cls, theirs_cls)
    errors["timm->vitjax dist"] = rel_err(ours_dist, theirs_dist)
    errors["timm->vitjax mean"] = rel_err(apply({"params": loaded}, x, train=False), _timm_outputs(tm, x, False))
    print({k: f"{v:.2e}" for k, v in errors.items()})
    assert max(errors.values()) <= TOL, errors
    assert not np.allclose(ours_cls, ours_dist)  # two different heads, so the comparison of each counts


@pytest.mark.parametrize("name", ["vit_map", "bit"])
def test_other_families_both_directions(name):
    if name == "vit_map":
        model = models.ViT(num_classes=6, patch_size=4, width=64, depth=2, mlp_dim=256, num_heads=4, pool="map")
        tm, size = VisionTransformer(img_size=32, patch_size=4, num_classes=6, embed_dim=64, depth=2, num_heads=4,
                                     class_token=False, global_pool="map"), 32
    else:
        model = models.BiT(num_classes=10, variant="R50x1")
        tm, size = timm.create_model("resnetv2_50x1_bit", pretrained=False, num_classes=10), 32
    x, apply = images(size), jax.jit(model.apply)
    params = random_params(model, size)
    _to_timm(tm, params, model)
    forward = rel_err(apply({"params": params}, x), _timm_outputs(tm, x, False))
    tm = jitter_timm(tm, seed=3)
    backward = rel_err(apply({"params": timm_weights.load(tm, model, image_size=size)}, x), _timm_outputs(tm, x, False))
    print(f"{name}: vitjax->timm {forward:.2e}, timm->vitjax {backward:.2e}")
    assert max(forward, backward) <= 1e-4  # deeper (BiT) and MAP paths: test_npz_timm's tolerance
