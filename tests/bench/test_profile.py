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


def test_profile_refuses_compile_only():
    with pytest.raises(ValueError, match="compile_only"):
        run.bench(bench_args(["--config", TINY, "--compile_only", "--profile", "unused", "--no_timm"]))
