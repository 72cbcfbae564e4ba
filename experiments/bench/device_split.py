"""Which workloads gain from vitjax's 4-device XLA:CPU split: each one's train step at 1 and 4 devices.

    .venv/bin/python experiments/bench/device_split.py --reps 2 --out experiments/results/bench/device_split

A process's device count is fixed when JAX's backend starts, so the two counts cannot share a process:
each workload runs as `VITJAX_CPU_DEVICES=N vitjax bench ...` in alternating processes (1 then 4, then
4 then 1, ...), `--reps` pairs of them, back to back. Between processes the host drifts, so each
process also times a yardstick: its own 2048 float32 jax matmul, which ran the same at 1 and 4 devices.
timm's train step, timed in the same rounds where `vitjax bench` compares with timm, is reported but
not used: beside Swin it ran slower in the 4-device processes (4.1 and 3.3 img/s against 4.6 and 4.7),
so it moves with the setting it should measure. The table gives each count's median vitjax img/s, its
median per matmul TFLOP/s, the 1-device figure over the 4-device one for both, and the ratios to timm
or to the supervised step where timed; vitjax/xla_cpu.py's default (MIN_DEVICE_BATCH) rests on the
matmul-relative ratio. MAE and DINO also run beside the supervised step of their ViT in each process
(their step over it at each count: issue 41's MAE target). Run on otherwise idle cores (check
`uptime`): ~25 minutes for the first five workloads at --reps 2 on 2 cores, ~13 for the other five.
Writes each process's `vitjax bench` JSON and `device_split.json` (the table) into --out.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

_FAST = ("--no_infer", "--no_pipeline")
WORKLOADS = {
    "swin_t_224_b8": ["--config", "configs/bench/swin.py:variant=T,res=224,batch=8"],
    "fashion_mnist_vit": ["--config", "configs/fashion_mnist/vit.py"],
    "fashion_mnist_bit": ["--config", "configs/fashion_mnist/bit.py", "--no_timm"],
    # Beside the supervised step of the same ViT, whose ratio (issue 41's MAE target) each count also gives.
    "fashion_mnist_mae": ["--config", "configs/fashion_mnist/mae.py", "--beside", "configs/fashion_mnist/vit.py",
                          "--no_timm"],
    "fashion_mnist_dino": ["--config", "configs/fashion_mnist/dino.py", "--beside", "configs/fashion_mnist/vit.py",
                           "--no_timm"],
    # The split lost for two large models at batch 8 (Swin-T, MAE-B/16); these pull the model's size and the
    # examples per device apart (Swin-T at 8 a device, the small ViT at 2 to 8, the models of other shapes).
    "swin_t_224_b32": ["--config", "configs/bench/swin.py:variant=T,res=224,batch=32", "--no_timm"],
    "fashion_mnist_vit_b8": ["--config", "configs/fashion_mnist/vit.py", "--batch", "8", "--no_timm"],
    "fashion_mnist_vit_b16": ["--config", "configs/fashion_mnist/vit.py", "--batch", "16", "--no_timm"],
    "fashion_mnist_vit_b32": ["--config", "configs/fashion_mnist/vit.py", "--batch", "32", "--no_timm"],
    "fashion_mnist_swin": ["--config", "configs/fashion_mnist/swin.py", "--no_timm"],
    "vit_ti16_224_b16": ["--config", "configs/bench/vit.py:variant=Ti/16,res=224,batch=16", "--no_timm"],
}
DEVICE_COUNTS = (1, 4)
_MATMUL = "matmul 2048x2048 float32 (jax)"


def run_bench(vitjax: str, args: list, devices: int, out: pathlib.Path, rounds: int, seconds: float) -> dict:
    env = {**os.environ, "VITJAX_CPU_DEVICES": str(devices)}
    command = [vitjax, "bench", *args, *_FAST, "--rounds", str(rounds), "--seconds", str(seconds),
               "--out", str(out)]
    print("$", f"VITJAX_CPU_DEVICES={devices}", " ".join(command[1:]), flush=True)
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def relative_speed(result: dict) -> float:
    """vitjax's train step against the process's yardstick: img/s per TFLOP/s of its jax matmul."""
    workloads = result["workloads"]
    return workloads["vitjax train"]["images_per_second"] / (workloads[_MATMUL]["flops_per_second"] / 1e12)


def summarise(results: dict) -> dict:
    """{devices: medians over the reps}, and 1 device over 4."""
    rows = {}
    for devices, runs in results.items():
        ratios = {key for key, value in runs[0]["ratios"].items() if value is not None and key.startswith("train")}
        rows[devices] = {
            "images_per_second": statistics.median(r["workloads"]["vitjax train"]["images_per_second"]
                                                   for r in runs),
            "per_matmul_tflops": statistics.median(relative_speed(r) for r in runs),
            "per_matmul_tflops_per_rep": [relative_speed(r) for r in runs],
            "ratios": {key: statistics.median(r["ratios"][key] for r in runs) for key in sorted(ratios)}}
    one, four = rows[1], rows[4]
    return {"by_devices": rows, "one_over_four_img_s": one["images_per_second"] / four["images_per_second"],
            "one_over_four_per_matmul": one["per_matmul_tflops"] / four["per_matmul_tflops"]}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--only", default="", help="comma-separated workload names (default: all)")
    parser.add_argument("--vitjax", default=str(pathlib.Path(sys.executable).with_name("vitjax")))
    parser.add_argument("--summarise_only", action="store_true",
                        help="run nothing: the table from the JSONs a previous run left in --out")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = args.only.split(",") if args.only else list(WORKLOADS)
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; choose from {sorted(WORKLOADS)}")
    table_path = out / "device_split.json"
    # --only adds its rows to the table an earlier run left, rather than dropping that run's rows.
    table = json.loads(table_path.read_text()) if table_path.exists() else {}
    for name in names:
        results = {devices: [] for devices in DEVICE_COUNTS}
        for rep in range(args.reps):
            order = DEVICE_COUNTS if rep % 2 == 0 else DEVICE_COUNTS[::-1]
            for devices in order:
                path = out / f"{name}_{devices}dev_{rep}.json"
                results[devices].append(json.loads(path.read_text()) if args.summarise_only else run_bench(
                    args.vitjax, WORKLOADS[name], devices, path, args.rounds, args.seconds))
        table[name] = row = summarise(results)
        print(f"{name}: 1 device / 4 devices = {row['one_over_four_per_matmul']:.3f} per matmul TFLOP/s "
              f"({row['one_over_four_img_s']:.3f} in img/s)", flush=True)
    table_path.write_text(json.dumps(table, indent=1) + "\n")


if __name__ == "__main__":
    main()
