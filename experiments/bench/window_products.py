r"""Swin-T's window-attention products alone, XLA:CPU beside torch: the batched [49 x 32] x [32 x 49] score
product and the [49 x 49] x [49 x 32] value product at each stage's batch of windows (Swin-T at 224,
batch 8: 64 / 16 / 4 / 1 windows per image x 3 / 6 / 12 / 24 heads), timed in alternating rounds in one
process with the 2048 float32 matmul of each library as its yardstick (issue 41: what bounds Swin's step).

    .venv/bin/python experiments/bench/window_products.py --out experiments/results/bench/window_products.json

On an AMD host, torch's oneMKL runs its generic code unless told otherwise; to compare with its AVX-512
path, preload the library experiments/bench/torch_mkl_avx512.sh builds (`LD_PRELOAD=... python ...`).
XLA compiles with vitjax's CPU options (vitjax/xla_cpu.py), one device, and again with its dots handed to
oneDNN (experiments/bench/xla_cpu_options.py's set of that name: of XLA:CPU's libraries the fastest on these
products in a probe, where YNNPACK's individual-dot kind, the other, takes them alone but none inside the
Swin step; on the whole Swin-T train step oneDNN gained nothing: bench README); torch with 2 threads.
Prints and writes GFLOP/s per product, XLA / torch and XLA with oneDNN / XLA (medians of paired rounds).
"""
import argparse
import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

from vitjax import host, xla_cpu
from vitjax.bench import peak, timing
from vitjax.config import load_module

ONEDNN_DOTS = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "xla_cpu_options.py"),
                          "xla_cpu_options").OPTION_SETS["oneDNN fusion (dot)"]

WINDOW_TOKENS, HEAD_DIM, IMAGES = 49, 32, 8
STAGES = ((64, 3), (16, 6), (4, 12), (1, 24))  # Swin-T at 224: windows per image, heads
PRODUCTS = {"scores": ("bnd,bmd->bnm", (WINDOW_TOKENS, HEAD_DIM), (WINDOW_TOKENS, HEAD_DIM)),
            "values": ("bnm,bmd->bnd", (WINDOW_TOKENS, WINDOW_TOKENS), (WINDOW_TOKENS, HEAD_DIM))}


def _pair(stage: int, product: str) -> list:
    """(jax, torch, jax with oneDNN dots) Workloads of one stage's batched product, the same operands."""
    import torch

    windows, heads = STAGES[stage]
    batch, (equation, left, right) = IMAGES * windows * heads, PRODUCTS[product]
    rng = np.random.RandomState(stage)
    a, b = (rng.standard_normal((batch, *shape)).astype(np.float32) for shape in (left, right))
    flops = 2.0 * batch * WINDOW_TOKENS ** 2 * HEAD_DIM  # the same for both products
    ja, jb = jnp.asarray(a), jnp.asarray(b)
    lowered = jax.jit(lambda x, y: jnp.einsum(equation, x, y)).lower(ja, jb)
    compiled = lowered.compile(compiler_options=xla_cpu.COMPILER_OPTIONS)
    onednn = lowered.compile(compiler_options={**xla_cpu.COMPILER_OPTIONS, **ONEDNN_DOTS})
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    torch_call = (lambda: torch.bmm(ta, tb.transpose(1, 2))) if product == "scores" else (lambda: torch.bmm(ta, tb))
    name = f"stage {stage} {product} [{batch} x {left[0]}x{left[1]}]"
    return [timing.Workload(f"{name} (jax)", lambda: compiled(ja, jb).block_until_ready(), flops=flops),
            timing.Workload(f"{name} (torch)", torch_call, flops=flops),
            timing.Workload(f"{name} (jax, oneDNN)", lambda: onednn(ja, jb).block_until_ready(), flops=flops)]


def measure(rounds: int, seconds: float) -> dict:
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    pairs = [_pair(stage, product) for stage in range(len(STAGES)) for product in PRODUCTS]
    pairs.append([peak.matmul_workload(2048, "float32"), peak.torch_matmul_workload(2048, "float32", "cpu")])
    workloads = [w for pair in pairs for w in pair]
    for workload in workloads:
        timing.calibrate(workload, seconds)
    load_before = timing.load_average()
    timing.alternate(workloads, rounds)
    rows = []
    for ours, theirs, *onednn in pairs:
        rates = [w.per_second("flops") for w in (ours, theirs, *onednn)]
        row = {"workload": ours.name.removesuffix(" (jax)"), "jax_gflops": timing.median(rates[0]) / 1e9,
               "torch_gflops": timing.median(rates[1]) / 1e9, "jax_over_torch": timing.paired_ratio(*rates[:2])}
        if onednn:  # the yardstick matmul has none
            row.update(onednn_gflops=timing.median(rates[2]) / 1e9, onednn_over_jax=timing.paired_ratio(rates[2], rates[0]))
        rows.append(row)
    return {"rows": rows, "rounds": rounds, "load_before": load_before, "load_after": timing.load_average(),
            "host": host.describe(), "code": host.code(), "ld_preload": os.environ.get("LD_PRELOAD", ""),
            "torch_version": torch.__version__, "jax_devices": jax.device_count()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.5, help="target seconds per workload per round")
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args(argv)
    found = measure(args.rounds, args.seconds)
    for row in found["rows"]:
        onednn = (f"  oneDNN {row['onednn_gflops']:7.1f} GFLOP/s, / jax {row['onednn_over_jax']:.3f}"
                  if "onednn_gflops" in row else "")
        print(f"{row['workload']:<40} jax {row['jax_gflops']:7.1f}  torch {row['torch_gflops']:7.1f} GFLOP/s  "
              f"jax / torch {row['jax_over_torch']:.3f}{onednn}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(found, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
