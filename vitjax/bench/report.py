"""The benchmark's summary: one JSON-ready dict, and a table of it for the terminal.

Every rate is a median over rounds. A ratio is the median of per-round ratios (both sides measured in
the same round, under the same load), and MFU is achieved FLOP/s over the matmul's FLOP/s in that
same round, again a median over rounds.
"""
import json
import os

from vitjax.bench.timing import Workload, median, paired_ratio


def workload_summary(w: Workload, peak: Workload | None, model_flops_per_image: float | None,
                     datasheet: float | None) -> dict:
    images = w.per_second("images") if w.images else None
    out = {
        "calls_per_round": w.calls_per_round,
        "seconds_per_call": median([s / w.calls_per_round for s in w.wall]),
        # Share of the wall time the process spent on a CPU (summed over threads): below the number of
        # threads means it waited, typically for cores other processes held.
        "cpu_per_wall": median([c / s for c, s in zip(w.cpu, w.wall) if s]),
        "rounds_seconds": [round(s, 4) for s in w.wall],
    }
    if images:
        out["images_per_second"] = median(images)
        out["images_per_second_min_max"] = [min(images), max(images)]
    if w.flops:
        flops = w.per_second("flops")
        out["xla_flops_per_call"] = w.flops
        out["flops_per_second"] = median(flops)
        if peak is not None:
            out["mfu"] = paired_ratio(flops, peak.per_second("flops"))
        if datasheet:
            out["mfu_datasheet"] = median(flops) / datasheet
    if images and model_flops_per_image and peak is not None:
        # Matmul FLOPs of the model only (the usual MFU numerator), against the same round's peak.
        model_rates = [r * model_flops_per_image for r in images]
        out["model_flops_per_second"] = median(model_rates)
        out["model_mfu"] = paired_ratio(model_rates, peak.per_second("flops"))
    return out


def ratio(a: Workload | None, b: Workload | None):
    if a is None or b is None or not a.images or not b.images:
        return None
    return paired_ratio(a.per_second("images"), b.per_second("images"))


def write_json(summary: dict, path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(summary, f, indent=2, sort_keys=False)
        f.write("\n")


def _fmt(value, spec=",.1f", none="-"):
    return none if value is None else format(value, spec)


# jax's matmul this many times torch's or more means torch's BLAS, not the model, sets the comparison.
SLOW_TORCH_BLAS = 1.5


def _slow_torch_blas_note(summary: dict) -> list[str]:
    """A warning when torch's matmul runs far below jax's on a CPU: on an AMD processor the torch wheel's
    oneMKL takes its generic path (half of XLA's rate on the AMD EPYC family 26 host)."""
    ratio = summary.get("ratios", {}).get("matmul jax/torch")
    if summary["machine"].get("backend") != "cpu" or ratio is None or ratio < SLOW_TORCH_BLAS:
        return []
    return [f"note: torch's matmul ran at {1 / ratio:.2f}x of jax's, so the vitjax/PyTorch ratios above measure "
            f"torch's BLAS more than the models; on an AMD processor its oneMKL runs a generic code path: "
            f"experiments/bench/torch_mkl_avx512.sh runs the same bench with it on its fast path"]


def table(summary: dict) -> str:
    """A plain-text table of the summary."""
    lines = []
    machine = summary["machine"]
    lines.append(f"vitjax bench: {summary['config']} {' '.join(summary.get('overrides_argv', []))}".rstrip())
    lines.append(f"machine: {machine['device_kind']} x{machine['devices']} ({machine['backend']}), "
                 f"{machine['cpu_count']} CPUs, load average {machine['load_average_start']} -> "
                 f"{machine['load_average_end']}")
    model = summary.get("model", {})
    if model:
        lines.append(f"model: {model.get('description', '')}; {model.get('params', 0):,} parameters; batch "
                     f"{model.get('batch_size')}; {summary['settings']['rounds']} rounds")
    header = f"{'workload':34s} {'img/s':>10s} {'min..max':>17s} {'GFLOP/s':>9s} {'MFU':>6s} {'mMFU':>6s} {'cpu/wall':>8s}"
    lines += [header, "-" * len(header)]
    for name, w in summary["workloads"].items():
        spread = w.get("images_per_second_min_max")
        spread = f"{spread[0]:,.1f}..{spread[1]:,.1f}" if spread else ""
        gflops = w.get("flops_per_second")
        lines.append(f"{name:34s} {_fmt(w.get('images_per_second')):>10s} {spread:>17s} "
                     f"{_fmt(gflops / 1e9 if gflops else None):>9s} {_fmt(w.get('mfu'), '.1%'):>6s} "
                     f"{_fmt(w.get('model_mfu'), '.1%'):>6s} {_fmt(w.get('cpu_per_wall'), '.2f'):>8s}")
    lines.append("(MFU: XLA's FLOP count / the jax matmul's FLOP/s in the same round; mMFU: the model's matmul "
                 "FLOPs only)")
    for name, value in summary.get("ratios", {}).items():
        if value is not None:
            lines.append(f"ratio {name}: {value:.3f}")
    lines += _slow_torch_blas_note(summary)
    for name, value in summary.get("latency_ms_per_prompt", {}).items():  # SAM's prompts on a cached embedding
        lines.append(f"latency {name}: {value:,.2f} ms per prompt")
    jax_info = summary.get("jax", {})
    if jax_info:
        compile_s = jax_info.get("compile_seconds", {})
        lines.append("compile: " + ", ".join(f"{k} {v:.1f}s" for k, v in compile_s.items()))
        memory = jax_info.get("memory", {}).get("train", {})
        if memory:
            lines.append("XLA memory (train step): " + ", ".join(
                f"{k.replace('_size_in_bytes', '').replace('_in_bytes', '')} {v / 2**20:,.1f} MiB"
                for k, v in memory.items() if v))
    process = summary.get("process_memory", {})
    if process:
        lines.append("process memory: " + ", ".join(f"{k} {v / 2**20:,.0f} MiB" for k, v in process.items()))
    return "\n".join(lines)
