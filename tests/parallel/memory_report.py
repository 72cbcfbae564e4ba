"""Per-device memory of a real model's train step under each preset, on 8 fake CPU devices.

    XLA_FLAGS=--xla_backend_optimization_level=0 python -m tests.parallel.memory_report B/16 [--batch 8]

Nothing is allocated or run: the trainer's plan and state_spec give the state's shapes and
shardings, and the train step is lowered and compiled for them, so XLA reports what each device
would hold (arguments = state shard + batch shard; temps = activations, gradients, gathered
weights). Prints one JSON line per preset. The batch is tiny on purpose: the figures that matter
here are the state's; activations scale with the batch and are the same under every preset.
"""
import argparse
import json
import os
import time

if __name__ == "__main__":
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax  # noqa: E402

from vitjax import parallel  # noqa: E402
from vitjax.config import base  # noqa: E402
from vitjax.train import trainer  # noqa: E402

PRESETS = {
    "data": dict(data=8, fsdp=1, model=1),
    "fsdp": dict(data=1, fsdp=8, model=1),
    "fsdp_tp": dict(data=1, fsdp=4, model=2),
}


def make_config(variant: str, preset: str, batch: int, image: int, classes: int):
    c = base()
    c.model.variant = variant
    c.model.scan = True  # one compiled layer instead of `depth`: same memory, much faster to compile
    c.dtype = "bfloat16"
    c.data.name = "synthetic"
    c.data.synthetic.num_train = batch
    c.data.synthetic.num_test = batch
    c.data.synthetic.image_shape = (image, image, 3)
    c.data.synthetic.num_classes = classes
    c.data.pp_train = c.data.pp_eval = "value_range(-1, 1)"
    c.batch_size = batch
    c.total_steps = 1
    c.mesh = PRESETS[preset]
    c.sharding = preset
    return c


def report(variant, preset, batch, image, classes) -> dict:
    config = make_config(variant, preset, batch, image, classes)
    p = trainer.plan(config)
    spec = trainer.state_spec(config, p)
    start = time.time()
    compiled, _ = trainer.compile_train_step(config, p, spec, jax.random.key(0))
    memory = compiled.memory_analysis()
    state = parallel.bytes_per_device(spec.abstract)
    return {"variant": variant, "preset": preset, "mesh": PRESETS[preset], "batch": batch,
            "params": spec.num_params, "state_total_MiB": state["total"] / 2**20,
            "state_per_device_MiB": state["per_device"] / 2**20,
            "xla_arguments_MiB": memory.argument_size_in_bytes / 2**20,
            "xla_temps_MiB": memory.temp_size_in_bytes / 2**20,
            "xla_outputs_MiB": memory.output_size_in_bytes / 2**20,
            "xla_aliased_MiB": memory.alias_size_in_bytes / 2**20,
            "compile_seconds": time.time() - start}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("variant", nargs="?", default="B/16")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--image", type=int, default=224)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--presets", default="data,fsdp,fsdp_tp")
    args = parser.parse_args()
    for preset in args.presets.split(","):
        row = report(args.variant, preset, args.batch, args.image, args.classes)
        print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in row.items()}), flush=True)


if __name__ == "__main__":
    main()
