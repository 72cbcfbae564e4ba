"""Cost against image size: Swin-T beside a ViT of the same FLOPs at 224 (ViT-S/16, DeiT-S's shape).

    .venv/bin/python experiments/bench/swin_cost.py --out experiments/results/bench/cpu_swin_cost.json
    .venv/bin/python experiments/bench/swin_cost.py --flops_only --out experiments/results/bench/swin_cost_flops.json

For each model and image size (default 224, 448, 896) it counts the forward pass's FLOPs per image
as XLA's cost analysis of the lowered program gives them (2 per multiply-add, norms and softmax
included; lowered, not compiled, so the largest sizes cost no compilation), then compiles the forward
passes that are affordable and times them in alternating rounds in one process (as `vitjax bench`
does), batch 1 by default. Writes JSON (--out) and a markdown table (--markdown, default beside the
JSON): FLOPs, their ratio to the first size's beside the ratio of pixels (1, 4, 16), img/s, and every
point skipped with the reason.

What it should show: Swin attends within windows of a fixed 7x7, so its FLOPs grow with the pixels
(x4, x16); a ViT attends over all its tokens (197 at 224, 3,137 at 896), so its attention grows with
their square and its FLOPs faster than the pixels. At 224 XLA counts 9.06 GFLOPs for Swin-T and 9.25
for ViT-S/16 (their matmuls alone, by hand: 8.98 and 9.20, i.e. the papers' 4.5 and 4.6 G multiply-adds);
at 896, x16.0 and x34.7 (experiments/results/bench/swin_cost_flops.md). Measured 2026-12-02 on 2 idle
vCPUs (AMD EPYC), batch 1: Swin-T 10.2 / 3.0 / 0.78 img/s at 224 / 448 / 896, ViT-S/16 12.4 / 2.7
(experiments/results/bench/cpu_swin_cost.md).

Choices:
- ViT-S/16 computes every row of its last block (`cls_only_last_block=False`), as DeiT-S and timm do.
- Position embeddings: each size builds its own model, so the ViT's learned position embeddings are
  initialised afresh at that size's token count rather than interpolated; the values change neither
  the FLOPs nor the speed. All weights are random for the same reason.
- Swin keeps window 7 and patch 4 at every size; a size the windows do not tile is skipped with the
  sizes that work (`Swin.stages`).
- Timed only below --max_timed_gflops per image (default 150): ViT-S/16 at 896 counts ~320 GFLOPs,
  seconds per image on 2 CPU cores and a [6, 3137, 3137] score matrix per block; its FLOPs are still
  counted.
- One XLA device, vitjax's CPU compiler options and model kernels (vitjax/xla_cpu.py), tcmalloc.
"""
import argparse
import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from vitjax import models, xla_cpu
from vitjax.bench import report, timing
from vitjax.config import base
from vitjax.train import flops

# name: (model_name, the model's keyword arguments, input channels, classes)
MODELS = {
    "Swin-T": ("swin", {"variant": "T", "patch_size": 4, "window_size": 7}, 3, 1000),
    "ViT-S/16": ("vit", {"variant": "S/16", "cls_only_last_block": False}, 3, 1000),
}
SIZES = (224, 448, 896)


def build(name: str, spec) -> tuple:
    """(model, compiler options) of one MODELS entry, with vitjax's CPU choices for one device."""
    model_name, kwargs, _, classes = spec
    config = base()
    config.model_name = model_name
    config.model.update(kwargs)
    xla_cpu.choose(config, device_count=1)  # the model kernels and XLA options `vitjax train` would use
    return models.build(model_name, classes, **config.model), dict(config.compiler_options or {})


def tokens(model, size: int) -> int:
    """Tokens the first attention layer sees: all patches (+ CLS) for a ViT, the first stage's map for Swin."""
    if isinstance(model, models.Swin):
        height, width = model.stages(size, size)[0].resolution
        return height * width
    patch = model.dims()[1]
    return (size // patch) ** 2 + (1 if model.pool == "tok" else 0)


def _abstract(model, size: int, channels: int, batch: int):
    images = jax.ShapeDtypeStruct((batch, size, size, channels), jnp.float32)
    return images, jax.eval_shape(lambda x: nn.unbox(model.init(jax.random.key(0), x)), images)


def point(name: str, model, size: int, channels: int, batch: int) -> dict:
    """One row: the lowered forward pass's FLOPs per image, or why the size was skipped."""
    row = {"model": name, "size": size, "pixels_ratio": None, "flops_ratio": None, "images_per_second": None}
    try:
        if isinstance(model, models.Swin):
            model.check_input_shape((size, size, channels))  # refuses sizes the windows do not tile
        images, params = _abstract(model, size, channels, batch)
        row["tokens"] = tokens(model, size)
        lowered = jax.jit(lambda p, x: model.apply({"params": p}, x)).lower(params["params"], images)
        row["forward_flops_per_image"] = flops.of(lowered) / batch
    except (ValueError, MemoryError) as error:
        row["skipped"] = f"not counted: {error}"
    return row


def _forward_workload(name: str, model, options: dict, size: int, channels: int, batch: int):
    images, params = _abstract(model, size, channels, batch)
    rng = np.random.default_rng(0)
    values = jax.tree.map(lambda a: jnp.asarray(0.02 * rng.standard_normal(a.shape), a.dtype), params["params"])
    x = jnp.asarray(rng.uniform(-1, 1, images.shape), jnp.float32)
    forward = jax.jit(lambda p, x: model.apply({"params": p}, x)).lower(values, x).compile(options or None)
    return timing.Workload(f"{name} @ {size}", lambda: forward(values, x).block_until_ready(), images=batch)


def measure(specs: dict, sizes, *, batch: int = 1, rounds: int = 3, seconds: float = 1.0,
            max_timed_gflops: float = 150.0, flops_only: bool = False) -> dict:
    """Counts every (model, size), times the affordable ones in alternating rounds; the summary."""
    rows, workloads = [], {}
    for name, spec in specs.items():
        model, options = build(name, spec)
        channels = spec[2]
        for size in sizes:
            row = point(name, model, size, channels, batch)
            rows.append(row)
            if "skipped" in row:
                continue
            if flops_only:
                row["skipped"] = "not timed: --flops_only"
            elif row["forward_flops_per_image"] > max_timed_gflops * 1e9:
                row["skipped"] = (f"not timed: {row['forward_flops_per_image'] / 1e9:.3g} GFLOPs per image is over "
                                  f"--max_timed_gflops {max_timed_gflops:g} (memory and time on this machine)")
            else:
                print(f"compiling {name} at {size} ...", file=sys.stderr, flush=True)
                workloads[(name, size)] = _forward_workload(name, model, options, size, channels, batch)
    if workloads:
        for w in workloads.values():
            timing.calibrate(w, seconds)
        timing.alternate(list(workloads.values()), rounds)
    for row in rows:
        w = workloads.get((row["model"], row["size"]))
        if w is not None:
            row["images_per_second"] = timing.median(w.per_second("images"))
            row["images_per_second_rounds"] = w.per_second("images")
    _ratios(rows, sizes[0])
    return {"sizes": list(sizes), "batch": batch, "rounds": rounds, "seconds": seconds,
            "max_timed_gflops": max_timed_gflops, "flops": "XLA cost analysis of the lowered forward pass, per image",
            "machine": {"backend": jax.default_backend(), "cpu_count": os.cpu_count(),
                        "load_average": timing.load_average()},
            "models": {name: {"model_name": s[0], "kwargs": s[1], "channels": s[2], "classes": s[3]}
                       for name, s in specs.items()},
            "rows": rows}


def _ratios(rows: list, first: int) -> None:
    """Each row's FLOPs over its model's at the first size, beside the ratio of pixels."""
    for row in rows:
        row["pixels_ratio"] = (row["size"] / first) ** 2
        base_row = next((r for r in rows if r["model"] == row["model"] and r["size"] == first), None)
        if base_row and base_row.get("forward_flops_per_image") and row.get("forward_flops_per_image"):
            row["flops_ratio"] = row["forward_flops_per_image"] / base_row["forward_flops_per_image"]


def markdown(summary: dict) -> str:
    """The table: one row per (model, size), skipped points with their reason."""
    lines = ["| model | image | tokens (first layer) | forward GFLOPs / image | FLOPs / at "
             f"{summary['sizes'][0]} | pixels / at {summary['sizes'][0]} | img/s (batch {summary['batch']}) | note |",
             "|---|---|---|---|---|---|---|---|"]
    fmt = lambda value, spec: "-" if value is None else format(value, spec)  # noqa: E731
    for row in summary["rows"]:
        gflops = row.get("forward_flops_per_image")
        lines.append(f"| {row['model']} | {row['size']} | {fmt(row.get('tokens'), ',d')} | "
                     f"{fmt(gflops / 1e9 if gflops else None, '.4g')} | {fmt(row['flops_ratio'], '.2f')} | "
                     f"{fmt(row['pixels_ratio'], '.3g')} | {fmt(row['images_per_second'], '.2f')} | "
                     f"{row.get('skipped', '')} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {list(MODELS)}")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="square image sides; the first is the reference")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5, help="alternating timing rounds")
    parser.add_argument("--seconds", type=float, default=2.0, help="target seconds of each point within a round")
    parser.add_argument("--max_timed_gflops", type=float, default=150.0,
                        help="time only points under this many forward GFLOPs per image")
    parser.add_argument("--flops_only", action="store_true", help="count FLOPs, time nothing")
    parser.add_argument("--out", default="swin_cost.json")
    parser.add_argument("--markdown", default=None, help="the table's file (default: --out with .md)")
    args = parser.parse_args(argv)
    xla_cpu.reexec_under_tcmalloc()  # as `vitjax` itself runs
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {list(MODELS)}")
    summary = measure({n: MODELS[n] for n in names}, [int(s) for s in args.sizes.split(",")], batch=args.batch,
                      rounds=args.rounds, seconds=args.seconds, max_timed_gflops=args.max_timed_gflops,
                      flops_only=args.flops_only)
    report.write_json(summary, args.out)
    table = markdown(summary)
    with open(args.markdown or os.path.splitext(args.out)[0] + ".md", "w") as f:
        f.write(table)
    print(table)
    return summary


if __name__ == "__main__":
    main()
