"""Which workloads gain from vitjax's 4-device XLA:CPU split: each one's train step at 1 and 4 devices.

    .venv/bin/python experiments/bench/device_split.py --reps 2 --out experiments/results/bench/device_split

A process's device count is fixed when JAX's backend starts, so the two counts cannot share a process:
each workload runs as `VITJAX_CPU_DEVICES=N vitjax bench ...` in alternating processes (1 then 4, then
4 then 1, ...), `--reps` pairs of them, back to back. Between processes the host drifts, so each
process also times a yardstick that the device count does not touch: timm's train step of the same
model where `vitjax bench` compares with timm (Swin, ViT), else the process's own 2048 float32 matmul (BiT, MAE, DINO). The
table gives each count's median vitjax img/s and its median over the yardstick, and the 1-device
figure over the 4-device one for both; vitjax/xla_cpu.py's per-workload default rests on the
yardstick-relative ratio. Run on otherwise idle cores (check `uptime`): ~20 minutes at --reps 2 on 2
cores. Writes each process's `vitjax bench` JSON and `device_split.json` (the table) into --out.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

_FAST = ("--no_infer", "--no_pipeline")
# name: (bench arguments, yardstick); the yardstick is a key of the bench JSON's `ratios` (vitjax over
# timm, in the same rounds) or None for the matmul's flops.
WORKLOADS = {
    "swin_t_224_b8": (["--config", "configs/bench/swin.py:variant=T,res=224,batch=8"], "train vitjax/timm"),
    "fashion_mnist_vit": (["--config", "configs/fashion_mnist/vit.py"], "train vitjax/timm"),
    "fashion_mnist_bit": (["--config", "configs/fashion_mnist/bit.py", "--no_timm"], None),
    "fashion_mnist_mae": (["--config", "configs/fashion_mnist/mae.py", "--no_timm"], None),
    "fashion_mnist_dino": (["--config", "configs/fashion_mnist/dino.py", "--no_timm"], None),
}
DEVICE_COUNTS = (1, 4)
_MATMUL = "matmul 2048x2048 float32 (jax)"


def run_bench(vitjax: str, args: list, devices: int, out: pathlib.Path, rounds: int, seconds: float) -> dict:
    env = {**os.environ, "VITJAX_CPU_DEVICES": str(devices)}
    command = [vitjax, "bench", *args, *_FAST, "--rounds", str(rounds), "--seconds", str(seconds), "--out", str(out)]
    print("$", f"VITJAX_CPU_DEVICES={devices}", " ".join(command[1:]), flush=True)
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def relative_speed(result: dict, yardstick: str | None) -> float:
    """vitjax's train step against the process's yardstick (a ratio to timm, or img/s per matmul TFLOP/s)."""
    if yardstick:
        return result["ratios"][yardstick]
    return result["workloads"]["vitjax train"]["images_per_second"] / (result["workloads"][_MATMUL]["flops_per_second"] / 1e12)


def summarise(results: dict, yardstick: str | None) -> dict:
    """{devices: {img/s, relative}} medians over the reps, and 1 device over 4."""
    rows = {}
    for devices, runs in results.items():
        rows[devices] = {"images_per_second": statistics.median(r["workloads"]["vitjax train"]["images_per_second"] for r in runs),
                         "relative": statistics.median(relative_speed(r, yardstick) for r in runs),
                         "relative_per_rep": [relative_speed(r, yardstick) for r in runs]}
    one, four = rows[1], rows[4]
    return {"yardstick": yardstick or "img/s per matmul TFLOP/s", "by_devices": rows,
            "one_over_four_img_s": one["images_per_second"] / four["images_per_second"],
            "one_over_four_relative": one["relative"] / four["relative"]}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--only", default="", help="comma-separated workload names (default: all)")
    parser.add_argument("--vitjax", default=str(pathlib.Path(sys.executable).with_name("vitjax")))
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = args.only.split(",") if args.only else list(WORKLOADS)
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; choose from {sorted(WORKLOADS)}")
    table = {}
    for name in names:
        bench_args, yardstick = WORKLOADS[name]
        results = {devices: [] for devices in DEVICE_COUNTS}
        for rep in range(args.reps):
            order = DEVICE_COUNTS if rep % 2 == 0 else DEVICE_COUNTS[::-1]
            for devices in order:
                path = out / f"{name}_{devices}dev_{rep}.json"
                results[devices].append(run_bench(args.vitjax, bench_args, devices, path, args.rounds, args.seconds))
        table[name] = summarise(results, yardstick)
        row = table[name]
        print(f"{name}: 1 device / 4 devices = {row['one_over_four_relative']:.3f} against {row['yardstick']} "
              f"({row['one_over_four_img_s']:.3f} in img/s)", flush=True)
    (out / "device_split.json").write_text(json.dumps(table, indent=1) + "\n")


if __name__ == "__main__":
    main()
