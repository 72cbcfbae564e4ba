"""`vitjax bench` end to end on a tiny model (one short round, no timing assertions), and its argument handling."""
import argparse
import json
import os

import pytest

from vitjax import cli
from vitjax.bench import run
from vitjax.config import parse_command_line

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = os.path.join(ROOT, "tests", "train", "tiny_config.py")


def _args(argv):
    parser = argparse.ArgumentParser()
    run.main_args(parser)
    return parse_command_line(parser, argv)


def test_config_overrides_and_convenience_flags():
    args = _args(["--config", TINY, "--config.model.width=48", "--config.model.scan", "True", "--depth", "2",
                  "--image", "24", "--channels", "1", "--batch", "8", "--config.batch_size=16"])
    config, overrides = run.build_config(args)
    assert (config.model.width, config.model.scan, config.model.depth) == (48, True, 2)
    assert config.data.name == "synthetic" and tuple(config.data.synthetic.image_shape) == (24, 24, 1)
    assert config.batch_size == 16  # --config.KEY=VALUE comes last, after the convenience flags
    assert overrides["model.width"] == 48 and overrides["model.scan"] is True


def test_a_misspelt_override_fails_with_its_name():
    with pytest.raises(KeyError, match="batchsize"):
        run.build_config(_args(["--config", TINY, "--config.batchsize=8"]))


def test_bench_writes_json_with_the_expected_fields(tmp_path):
    pytest.importorskip("timm")
    out = tmp_path / "bench.json"
    cli.main(["bench", "--config", TINY, "--config.batch_size=8", "--rounds", "1", "--seconds", "0.01",
              "--peak_size", "256", "--out", str(out)])
    summary = json.loads(out.read_text())

    assert summary["overrides"] == {"batch_size": 8}
    assert summary["machine"]["backend"] == "cpu" and len(summary["machine"]["load_average_end"]) == 3
    assert summary["peak"]["jax_matmul_flops_per_second"] > 0
    jax_info = summary["jax"]
    assert jax_info["compile_seconds"]["train"] > 0 and jax_info["xla_flops_per_step"]["train"] > 0
    assert jax_info["model_flops_per_image"]["train"] == 3 * jax_info["model_flops_per_image"]["forward"]
    assert jax_info["memory"]["train"]["temp_size_in_bytes"] >= 0
    workloads = summary["workloads"]
    for name in ("vitjax train", "vitjax infer", "timm train", "timm infer", "input pipeline"):
        assert workloads[name]["images_per_second"] > 0, name
    for name in ("vitjax train", "vitjax infer", "timm train"):
        assert 0 < workloads[name]["mfu"] and 0 < workloads[name]["model_mfu"], name
    ratios = summary["ratios"]
    assert ratios["train vitjax/timm"] > 0 and ratios["infer vitjax/timm"] > 0
    assert ratios["train vitjax/timm compiled"] is None  # torch.compile runs on GPUs only by default
    assert any(k.startswith("pipeline/train") and v > 0 for k, v in ratios.items())
    assert summary["process_memory"]["peak_rss_bytes"] > 0


def test_model_fields_the_config_does_not_list_can_be_set_but_typos_fail():
    config, _ = run.build_config(_args(["--config", TINY, "--config.model.remat_policy=dots_saveable"]))
    assert config.model.remat_policy == "dots_saveable"
    with pytest.raises(KeyError, match="scann"):
        run.build_config(_args(["--config", TINY, "--config.model.scann=True"]))


def test_against_times_each_override_beside_the_config_and_reports_the_ratio(tmp_path):
    out = tmp_path / "bench.json"
    cli.main(["bench", "--config", TINY, "--config.batch_size=8", "--config.model.kernels=()", "--no_timm",
              "--no_pipeline", "--no_infer", "--rounds", "1", "--seconds", "0.01", "--out", str(out),
              "--against", "model.kernels=('heads_major',)", "--against", "model.depth=2"])
    summary = json.loads(out.read_text())
    assert set(summary["workloads"]) == {"matmul 2048x2048 float32 (jax)", "vitjax train",
                                         "vitjax train [model.kernels=('heads_major',)]",
                                         "vitjax train [model.depth=2]"}
    ratios = {k: v for k, v in summary["ratios"].items() if k.startswith("train vitjax/vitjax[")}
    assert set(ratios) == {"train vitjax/vitjax[model.kernels=('heads_major',)]", "train vitjax/vitjax[model.depth=2]"}
    assert all(value > 0 for value in ratios.values())
    # The variant really is another program: a deeper stack has more FLOPs per step.
    flops = {name: w["xla_flops_per_call"] for name, w in summary["workloads"].items() if "vitjax" in name}
    assert flops["vitjax train [model.depth=2]"] > flops["vitjax train"]


def test_against_needs_key_equals_value():
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        cli.main(["bench", "--config", TINY, "--no_timm", "--against", "model.kernels"])
