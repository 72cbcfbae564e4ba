"""Cross-checks against timm's SwinTransformer: the same weights give the same logits, both ways.

vitjax -> timm: random values for every vitjax parameter (bias tables, norms and the zero-initialised head
too, so a dropped or mis-transposed parameter shows), `timm_swin.to_timm`, timm's strict `load_state_dict`.
timm -> vitjax: perturb every timm parameter (values vitjax never held), `timm_swin.from_timm`.
Swin-T at 224 (windows 7, shifted in its first three stages), and small models at 28x28, 32x32 and a
non-square 16x32 where shifted windows are active and windows shrink. Nothing is downloaded.
"""
import jax
import numpy as np
import pytest
import torch

timm = pytest.importorskip("timm")
from timm.models.swin_transformer import SwinTransformer, get_relative_position_index  # noqa: E402

from tests.interop.timm_reference import jitter_timm, random_params, rel_err, timm_logits  # noqa: E402
from vitjax import models  # noqa: E402
from vitjax.interop import timm_swin  # noqa: E402
from vitjax.models import swin  # noqa: E402

TOL = 1e-5  # relative error ||a - b|| / ||b||, float32


def cross_check(model, timm_model, image_size, name, batch=2):
    """Both directions for one configuration; returns (vitjax->timm, timm->vitjax) relative errors."""
    apply = jax.jit(model.apply)
    x = np.random.RandomState(0).randn(batch, *image_size, 3).astype(np.float32)
    # random_params takes square images; the parameters' shapes depend only on the windows, which the
    # larger side's square shares in the non-square case here.
    side = max(image_size)
    assert [p.window for p in model.stages(side, side)] == [p.window for p in model.stages(*image_size)]
    params = random_params(model, side)
    timm_model.load_state_dict({k: torch.from_numpy(v) for k, v in timm_swin.to_timm(params, model).items()})
    forward = rel_err(apply({"params": params}, x), timm_logits(timm_model.eval(), x))

    timm_model = jitter_timm(timm_model, seed=3)
    backward = rel_err(apply({"params": timm_swin.from_timm(timm_model, model)}, x), timm_logits(timm_model, x))
    print(f"{name}: vitjax->timm {forward:.2e}, timm->vitjax {backward:.2e}")
    assert forward <= TOL, f"{name}: vitjax->timm relative error {forward:.3g}"
    assert backward <= TOL, f"{name}: timm->vitjax relative error {backward:.3g}"
    return forward, backward


def test_swin_t_224():
    model = models.Swin(num_classes=10, variant="T")
    cross_check(model, timm.create_model("swin_tiny_patch4_window7_224", pretrained=False, num_classes=10),
                (224, 224), "Swin-T@224", batch=1)


SMALL = [
    # 28x28, patch 2: 14x14 then 7x7; windows 7, shifted in the first stage.
    ((28, 28), dict(patch_size=2, embed_dim=32, depths=(2, 2), num_heads=(2, 4), window_size=7)),
    # 32x32, patch 2, window 4: 16, 8, 4 then 2, where the window shrinks to 2x2.
    ((32, 32), dict(patch_size=2, embed_dim=16, depths=(2, 2, 2, 2), num_heads=(2, 2, 4, 4), window_size=4)),
    # 16x32: maps 8x16 then 4x8, the second shifted along the width only.
    ((16, 32), dict(patch_size=2, embed_dim=16, depths=(2, 2), num_heads=(2, 4), window_size=4)),
]


@pytest.mark.parametrize("image_size,dims", SMALL, ids=["28x28", "32x32", "16x32"])
def test_small_swin_with_shifted_windows(image_size, dims):
    model = models.Swin(num_classes=5, variant=None, **dims)
    assert any(any(plan.shift) for plan in model.stages(*image_size))
    tm = SwinTransformer(img_size=image_size, num_classes=5, drop_path_rate=0.0, **dims)
    cross_check(model, tm, image_size, f"Swin {dims}@{image_size}")


def test_constants_equal_timms():
    """The relative-position index and the shift masks are constants in vitjax and buffers in timm."""
    assert (swin.relative_position_index(3, 5) == get_relative_position_index(3, 5).numpy()).all()
    tm = SwinTransformer(img_size=(16, 32), patch_size=2, embed_dim=16, depths=(2, 2), num_heads=(2, 4),
                         window_size=4, num_classes=5)
    model = models.Swin(num_classes=5, variant=None, patch_size=2, embed_dim=16, depths=(2, 2),
                        num_heads=(2, 4), window_size=4)
    for stage, plan in zip(tm.layers, model.stages(16, 32)):
        block = stage.blocks[1]
        assert (tuple(block.window_size), tuple(block.shift_size)) == (plan.window, plan.shift)
        np.testing.assert_array_equal(swin.shift_mask(plan.resolution, plan.window, plan.shift),
                                      block.attn_mask.numpy())


def test_conversion_errors():
    dims = dict(patch_size=2, embed_dim=16, depths=(2, 2), num_heads=(2, 4), window_size=4)
    model = models.Swin(num_classes=5, variant=None, **dims)
    state = SwinTransformer(img_size=16, num_classes=5, **dims).state_dict()
    with pytest.raises(ValueError, match=r"no 'layers.1.blocks.1.norm1.weight'"):
        timm_swin.from_timm({k: v for k, v in state.items() if not k.startswith("layers.1.blocks.1.")}, model)
    with pytest.raises(ValueError, match=r"no place in this Swin: \['layers.1.blocks.2.norm1.weight'\]"):
        timm_swin.from_timm({**state, "layers.1.blocks.2.norm1.weight": state["norm.weight"]}, model)
    params = timm_swin.from_timm(state, model)
    del params["stage_1"]["block_1"]["attention"]["out"]
    with pytest.raises(ValueError, match="no stage_1/block_1/attention/out/kernel"):
        timm_swin.to_timm(params, model)
