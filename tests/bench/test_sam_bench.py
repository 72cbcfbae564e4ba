"""`vitjax bench` on a SAM config: the image encoder and the prompt answers beside segment-anything's.

One short bench of a tiny SAM (64x64 images, width 32, two blocks, the 4x4 grid padded to windows of 3, a
32-wide decoder; 1 round) runs once for the module and must write the summary's ratios, latencies and host.
The agreement checks must refuse a pair that does not compute one function. No speed is asserted.
"""
import json

import numpy as np
import pytest

from vitjax import cli, host, models
from vitjax.bench import run, sam_model
from vitjax.interop import sam_weights

from tests.bench.command_line import bench_args

pytest.importorskip("torch")
pytest.importorskip("segment_anything")

DIMS = dict(width=32, depth=2, num_heads=2, global_attn_indexes=(1,), window_size=3, prompt_width=32,
            decoder_heads=2, decoder_mlp_dim=64, iou_head_hidden=32, mask_in_chans=4)
TINY = ["configs/bench/sam.py:res=64,batch=2"] + [f"--config.model.{key}={value}" for key, value in DIMS.items()]
SHORT = ["--rounds", "1", "--seconds", "0.01", "--peak_size", "64"]


def _bench(tmp_path_factory, *flags) -> dict:
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VITJAX_XLA_CPU_DEFAULTS", "0")
        cli.main(["bench", "--config", *TINY, *SHORT, *flags, "--out", str(out)])
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    return _bench(tmp_path_factory)


def test_the_summary_has_the_encoder_ratio_the_prompt_latencies_and_the_host(summary):
    sides, prompts = ("vitjax", "segment-anything"), ("point", "box")
    assert {f"{side} {part}" for side in sides for part in ("encoder", "prompt point", "prompt box")} \
        <= set(summary["workloads"])
    ratios = summary["ratios"]
    assert ratios["infer vitjax/segment-anything (image encoder)"] > 0
    assert all(ratios[f"prompt {p} vitjax/segment-anything"] > 0 for p in prompts)
    assert set(summary["latency_ms_per_prompt"]) == {f"{side} {p}" for side in sides for p in prompts}
    assert all(ms > 0 for ms in summary["latency_ms_per_prompt"].values())
    assert summary["machine"]["cpu"] == host.cpu()
    assert summary["model"]["description"].startswith("SAM image encoder width 32 depth 2 heads 2 global blocks (1,)")
    assert summary["model"]["batch_size"] == 2 and summary["workloads"]["vitjax encoder"]["calls_per_round"] >= 1


def test_the_pair_was_checked_to_compute_one_function(summary):
    model = models.SAM(variant="B", image_size=64, **DIMS)
    sam = summary["sam"]
    assert sam["encoder_agreement"]["images"] == 2
    assert sam["encoder_agreement"]["relative_error_of_embeddings"] < sam_model.TOLERANCE
    assert max(sam["prompt_agreement"].values()) < sam_model.TOLERANCE
    assert sam["params"]["all"] == summary["model"]["params"] == sum(
        p.numel() for p in sam_model.official_with_weights(model).parameters())
    # Both encoders are counted with XLA's FLOPs of vitjax's: one function, one count.
    counts = {name: w.get("xla_flops_per_call") for name, w in summary["workloads"].items() if name.endswith("encoder")}
    assert counts["vitjax encoder"] == counts["segment-anything encoder"] > 0


def test_vitjax_alone_needs_no_reference(tmp_path_factory):
    alone = _bench(tmp_path_factory, "--no_timm")
    assert set(alone["workloads"]) == {"matmul 64x64 float32 (jax)", "vitjax encoder", "vitjax prompt point",
                                       "vitjax prompt box"}
    assert alone["ratios"] == {} and set(alone["latency_ms_per_prompt"]) == {"vitjax point", "vitjax box"}
    assert "encoder_agreement" not in alone["sam"]


def test_encoders_of_other_weights_are_refused():
    model = models.SAM(variant="B", image_size=64, **DIMS)
    _, images = sam_model.input_images(model, 1)
    other = sam_weights.load(sam_model.official_with_weights(model, seed=1), model)
    embed, _ = sam_model.compile_encoder(model, other, images, None)
    with pytest.raises(ValueError, match="other embeddings"):
        sam_model.encoder_agreement(embed, sam_model.official_with_weights(model, seed=0), images)


def test_predictors_answering_differently_are_refused():
    answer = (np.ones((3, 8, 8), bool), np.array([0.5, 0.6, 0.7]), np.linspace(-1, 1, 3 * 16).reshape(3, 4, 4))
    assert max(sam_model.prompt_agreement(lambda: answer, lambda: answer).values()) == 0.0
    moved = (answer[0], answer[1], answer[2] + 0.01)
    with pytest.raises(ValueError, match="answer the same prompt differently"):
        sam_model.prompt_agreement(lambda: answer, lambda: moved)
    fewer = (answer[0], answer[1][:1], answer[2][:1])  # one mask against three
    with pytest.raises(ValueError, match="answer the same prompt differently"):
        sam_model.prompt_agreement(lambda: answer, lambda: fewer)


@pytest.mark.parametrize("flags", [["--against", "model.depth=1"], ["--no_infer"], ["--image", "32"],
                                   ["--compile_only"]])
def test_options_a_sam_bench_has_no_use_for_are_refused_before_anything_runs(flags):
    with pytest.raises(ValueError, match="not for a SAM config"):
        run.bench(bench_args(["--config", *TINY, *flags]))


def test_a_bfloat16_comparison_is_refused():
    with pytest.raises(ValueError, match="float32"):
        run.bench(bench_args(["--config", *TINY, "--dtype", "bfloat16"]))
