r"""Which runtime property makes one config and seed train to different numbers: the instruction set
XLA:CPU compiles for, the XLA device split, or neither (issue: the same run differed by up to 0.63
test points between two hosts).

    python experiments/host_numerics.py --out experiments/results/host_numerics [--steps 60]

Trains the plain arm's ViT (configs/fashion_mnist/vit.py, 5.5k images, seed 0) for `steps` steps once
per variant, each in a fresh `vitjax train` process on this host, and compares every variant's final
parameters with the default's: bitwise equal or the largest difference, and the loss at each logged
step. Variants: the default twice (does this host repeat itself?); XLA's code capped at AVX2 and at
AVX (`XLA_FLAGS=--xla_cpu_max_isa=...`: the instruction sets another host may lack); one XLA device
instead of four (VITJAX_CPU_DEVICES=1). A variant that differs from the default on one host is a
property that makes hosts differ; one that does not cannot. Writes OUT/host_numerics.json.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from vitjax import host, rundir
from vitjax import metrics_log
from vitjax.checkpoints import reader

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIANTS = {
    "default": {},
    "default, again": {},
    "XLA code capped at AVX2": {"XLA_FLAGS": "--xla_cpu_max_isa=AVX2"},
    "XLA code capped at AVX": {"XLA_FLAGS": "--xla_cpu_max_isa=AVX"},
    "1 XLA device": {"VITJAX_CPU_DEVICES": "1"},
}


def train(workdir: str, steps: int, environ: dict) -> None:
    command = [sys.executable, "-m", "vitjax", "train", "--config", os.path.join(ROOT, "configs/fashion_mnist/vit.py"),
               "--workdir", workdir, f"--config.total_steps={steps}", "--config.total_epochs=0",
               "--config.data.train_size=5500", "--config.data.val_size=5000", "--config.data.class_balanced=true",
               "--config.warmup_steps=10", "--config.log_every_steps=10", "--config.eval_every_steps=0",
               f"--config.checkpoint_every_steps={steps}"]
    done = subprocess.run(command, env={**os.environ, **environ}, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")


def flat(tree, prefix=""):
    out = {}
    for key, value in tree.items():
        out.update(flat(value, f"{prefix}{key}/") if isinstance(value, dict) else {prefix + key: np.asarray(value)})
    return out


def compare(reference: str, other: str) -> dict:
    a, b = flat(reader.read_params(reference)), flat(reader.read_params(other))
    largest = max(float(np.max(np.abs(a[k] - b[k]))) for k in a)
    losses = [[r["step"], r["loss"]] for r in metrics_log.read_metrics(other) if "loss" in r]
    results = rundir.read_results(other)
    return {"bitwise_equal": all(np.array_equal(a[k], b[k]) for k in a), "largest_param_difference": largest,
            "losses": losses, "test_accuracy": results["test_accuracy"], "devices": results["devices"],
            "xla_flags": results["host"].get("xla_flags")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args(argv)
    found = {"host": host.describe(), "code": host.code(), "steps": args.steps, "variants": {}}
    with tempfile.TemporaryDirectory() as scratch:
        dirs = {name: os.path.join(scratch, f"run{i}") for i, name in enumerate(VARIANTS)}
        for name, environ in VARIANTS.items():
            train(dirs[name], args.steps, environ)
            found["variants"][name] = {"environment": environ, **compare(dirs["default"], dirs[name])}
            print(f"{name:28s} bitwise equal to the default: {found['variants'][name]['bitwise_equal']}; "
                  f"largest parameter difference {found['variants'][name]['largest_param_difference']:.3g}",
                  flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "host_numerics.json"), "w") as f:
        json.dump(found, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
