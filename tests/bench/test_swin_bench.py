"""`vitjax bench` on a Swin: vitjax's step and inference beside timm's SwinTransformer with the same weights.

One short bench of a tiny Swin (16x16 synthetic images, patch 2, window 4, two stages; 1 round) runs
once for the module. It checks what makes the comparison like for like: timm's network holds vitjax's
weights and gives its features, AdamW decays the same parameters on both sides, and the FLOP counts
(XLA's and the hand count) are the Swin's.
"""
import json

import flax.linen as nn
import jax
import numpy as np
import pytest
import torch

from vitjax import cli, models
from vitjax.bench import jax_model, timm_nets
from vitjax.train import optimizer

pytest.importorskip("timm")

BATCH = 4
TINY = ["configs/bench/swin.py:res=16,batch=4", "--config.model.patch_size=2", "--config.model.window_size=4",
        "--config.model.embed_dim=16", "--config.model.depths=(2, 2)", "--config.model.num_heads=(2, 2)"]
DIMS = dict(variant=None, patch_size=2, window_size=4, embed_dim=16, depths=(2, 2), num_heads=(2, 2))


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VITJAX_XLA_CPU_DEFAULTS", "0")
        cli.main(["bench", "--config", *TINY, "--rounds", "1", "--seconds", "0.01", "--peak_size", "64",
                  "--no_pipeline", "--out", str(out)])
    return json.loads(out.read_text())


def test_timm_runs_the_same_swin(summary):
    assert {"vitjax train", "vitjax infer", "timm train", "timm infer"} <= set(summary["workloads"])
    assert summary["model"]["description"].startswith("Swin embed 16 depths (2, 2) heads (2, 2) patch 2 window 4")
    timm_info = summary["timm"]
    assert timm_info["params"] == summary["model"]["params"]
    assert "to_timm" in timm_info["weights"]
    assert timm_info["forward_check"]["relative_error_of_features"] < timm_nets.FORWARD_CHECK_TOLERANCE
    assert summary["ratios"]["train vitjax/timm"] > 0 and summary["ratios"]["infer vitjax/timm"] > 0


def test_flop_counts_are_the_swins(summary):
    model = models.Swin(num_classes=10, **DIMS)
    per_image = summary["jax"]["model_flops_per_image"]
    assert per_image["forward"] == jax_model.model_flops_per_image(model, (16, 16, 3), 10)
    assert per_image["forward_every_row"] == per_image["forward"] and per_image["train"] == 3 * per_image["forward"]
    xla = summary["jax"]["xla_flops_per_step"]
    # Width 16: norms, softmax, bias and mask weigh more than at Swin-T's widths, and the compiled
    # program's fusions duplicate some of them (tests/bench/test_model_flops.py compares at real widths).
    assert 0.7 < BATCH * per_image["forward"] / xla["infer"] < 1.0
    # timm computes what vitjax does: the same FLOPs per call.
    workloads = summary["workloads"]
    assert workloads["timm train"]["xla_flops_per_call"] == pytest.approx(xla["train"], rel=1e-12)
    assert workloads["timm infer"]["xla_flops_per_call"] == pytest.approx(xla["infer"], rel=1e-12)


def test_weight_decay_covers_the_same_parameters_on_both_sides():
    model = models.Swin(num_classes=10, **DIMS)
    shapes = jax.eval_shape(model.init, jax.random.key(0), jax.ShapeDtypeStruct((1, 16, 16, 3), np.float32))
    params = jax.tree.map(lambda a: np.zeros(a.shape, a.dtype), nn.meta.unbox(shapes["params"]))  # no compiling
    net, _ = timm_nets.build(model, (16, 16, 3), 10, params=params)
    timm_decayed = sum(p.numel() for name, p in net.named_parameters() if timm_nets.decays(model, name, p))
    mask = optimizer.decay_mask(params)
    vitjax_decayed = sum(leaf.size for leaf, decayed in zip(jax.tree.leaves(params), jax.tree.leaves(mask)) if decayed)
    assert timm_decayed == vitjax_decayed
    assert 0 < timm_decayed < sum(p.numel() for p in net.parameters())
    table = dict(net.named_parameters())["layers.0.blocks.0.attn.relative_position_bias_table"]
    assert not timm_nets.decays(model, "layers.0.blocks.0.attn.relative_position_bias_table", table)
    assert isinstance(table, torch.nn.Parameter)


def test_a_model_without_a_timm_counterpart_is_refused():
    with pytest.raises(ValueError, match="--no_timm"):
        timm_nets.check_comparable(models.BiT(num_classes=10))
