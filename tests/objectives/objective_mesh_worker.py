"""Three steps of tests/train/tiny_config.py:model=MODEL (mae or dino) on DEVICES fake CPU devices, as JSON.

    python -m tests.objectives.objective_mesh_worker dino 8 fsdp      # mesh data=2 fsdp=4, sharding 'fsdp'
    python -m tests.objectives.objective_mesh_worker mae 1 data       # one device

Run by tests/objectives/test_objective_mesh.py in subprocesses: the device count is fixed before jax starts.
Prints the losses, and DINO's centre (the state an objective adds beside the parameters) when it has one.
"""
import json
import os
import sys

if __name__ == "__main__":
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               f" --xla_force_host_platform_device_count={int(sys.argv[2])}")

from tests.parallel.harness import Run  # noqa: E402  (after XLA_FLAGS)
from tests.train import tiny_config  # noqa: E402

STEPS = 3


def main(model: str, devices: int, sharding: str):
    config = tiny_config.get_config(f"model={model},steps={STEPS}")
    config.warmup_steps = 1
    config.sharding = sharding
    config.mesh = dict(data=2, fsdp=4, model=1) if devices == 8 else dict(data=1, fsdp=1, model=1)
    run = Run(config)
    state, losses = run.train(run.init(), STEPS)
    extra = getattr(state, "extra", None) or {}
    centre = [float(x) for x in extra["centre"].reshape(-1)[:8]] if "centre" in extra else None
    print(json.dumps({"losses": losses, "centre": centre}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
