"""The per-op profile: a traced program's ops are found, counted per call and timed."""
import json

import jax
import jax.numpy as jnp
import pytest

from tests.bench.command_line import bench_args
from tests.paths import TINY
from vitjax import cli
from vitjax.bench import profile, run


def test_op_table_counts_each_op_once_per_call(tmp_path):
    x = jnp.ones((512, 512))
    tanh_then_product = jax.jit(lambda x: jnp.tanh(x) @ x)
    calls = 3
    xplane, seconds_per_call = profile.trace(lambda: tanh_then_product(x).block_until_ready(), calls, str(tmp_path))
    rows = profile.op_table(xplane, calls)

    assert rows, "no ops found in the trace"
    assert {r.events_per_call for r in rows} == {1.0}  # one tanh fusion and one product per call
    assert len(rows) == 2 and sum(r.milliseconds_per_call for r in rows) > 0
    assert seconds_per_call > 0
    assert "all ops" in profile.format_table(rows, seconds_per_call)


def test_bench_profile_writes_a_trace_and_its_op_table(tmp_path):
    out, logdir = tmp_path / "bench.json", tmp_path / "trace"
    cli.main(["bench", "--config", TINY, "--config.batch_size=8", "--rounds", "1", "--seconds", "0.01",
              "--peak_size", "256", "--no_timm", "--no_infer", "--no_pipeline",
              "--profile", str(logdir), "--profile_calls", "2", "--out", str(out)])
    summary = json.loads(out.read_text())["profile"]

    assert summary["calls"] == 2 and summary["xplane"].startswith(str(logdir))
    ops = {row["op"]: row for row in summary["ops"]}
    assert len(ops) > 5 and sum(row["milliseconds_per_call"] for row in ops.values()) > 0
    parts = {row["op"] for row in summary["parts"]}
    assert any(part.startswith("backward: ViT") for part in parts), parts  # the model's own name stack


def test_bench_profile_of_inference_names_its_ops_as_the_forward_pass(tmp_path):
    out, logdir = tmp_path / "bench.json", tmp_path / "trace"
    cli.main(["bench", "--config", TINY, "--config.batch_size=8", "--rounds", "1", "--seconds", "0.01",
              "--peak_size", "256", "--no_timm", "--no_pipeline", "--profile", str(logdir),
              "--profile_workload", "infer", "--profile_calls", "2", "--out", str(out)])
    summary = json.loads(out.read_text())["profile"]

    assert summary["workload"] == "infer" and summary["calls"] == 2
    parts = {row["op"] for row in summary["parts"]}
    assert any(part.startswith("forward: ViT") for part in parts), parts
    assert not any(part.startswith(("backward:", "step: ViT")) for part in parts), parts


def test_profile_of_inference_refuses_no_infer():
    with pytest.raises(ValueError, match="no_infer"):
        run.bench(bench_args(["--config", TINY, "--no_infer", "--profile", "unused", "--profile_workload", "infer",
                              "--no_timm"]))


def test_profile_refuses_compile_only():
    with pytest.raises(ValueError, match="compile_only"):
        run.bench(bench_args(["--config", TINY, "--compile_only", "--profile", "unused", "--no_timm"]))


def test_scope_drops_wrappers_and_layer_indices_and_names_the_direction():
    assert (profile.scope("jit(train_step)/transpose(jvp(Swin))/stage_3/block_1/attention/gather")
            == "backward: Swin/stage/block/attention/gather")
    assert profile.scope("jit(train_step)/jvp(ViT)/Transformer/encoderblock_11/dot_general") == \
        "forward: ViT/Transformer/encoderblock/dot_general"
    assert profile.scope("jit(train_step)/cond/branch_1_fun/optimizer/mul") == "step: optimizer/mul"


def test_scope_table_attributes_a_traced_program_to_its_named_parts(tmp_path):
    def program(x):
        with jax.named_scope("first"):
            x = jnp.tanh(x) @ x
        with jax.named_scope("second"):
            return jnp.sin(x) @ x
    compiled = jax.jit(program).lower(jnp.ones((256, 256))).compile()
    x = jnp.ones((256, 256))
    calls = 2
    xplane, _ = profile.trace(lambda: compiled(x).block_until_ready(), calls, str(tmp_path))
    scopes = profile.instruction_scopes(compiled.as_text())
    parts = {r.op: r for r in profile.scope_table(xplane, calls, scopes, depth=1)}

    assert {"step: first", "step: second"} <= set(parts), parts
    full = profile.scope_table(xplane, calls, scopes)
    assert sum(r.milliseconds_per_call for r in full) == pytest.approx(
        sum(r.milliseconds_per_call for r in parts.values()))
    assert sum(r.milliseconds_per_call for r in full) == pytest.approx(
        sum(r.milliseconds_per_call for r in profile.op_table(xplane, calls)))


def test_scope_of_a_collective_over_a_path_keeps_the_collective():
    assert profile.scope("jit(train_step)/psum(jit(train_step)/transpose(jvp(ViT))/embedding/dot_general)") \
        == "step: psum"
    assert profile.scope("jit(train_step)/(transpose(jvp(ViT))/head/dot_general:transpose(jvp(ViT))/head/reduce_sum)") \
        == "step: (combined)"


def test_a_dino_step_names_its_parts_for_the_profile():
    from vitjax.bench import jax_model
    from vitjax.config import load_config

    config = load_config("tests/train/tiny_config.py:model=dino,steps=8")
    parts = {scope.split("/")[0] for scope in profile.instruction_scopes(
        jax_model.build(config, inference=False).train_hlo()).values()}
    for part in ("crops", "student_global", "student_local", "teacher", "loss_and_centre", "optimizer",
                 "update_extra"):
        assert any(p.endswith(f": {part}") for p in parts), (part, sorted(parts))
