"""Three DINO steps of tests/train/tiny_config.py:model=dino on DEVICES fake CPU devices, printed as JSON.

    python -m tests.objectives.dino_mesh_worker 8 fsdp      # mesh data=2 fsdp=4, sharding 'fsdp'
    python -m tests.objectives.dino_mesh_worker 1 data      # one device

Run by tests/objectives/test_dino_mesh.py in subprocesses: the device count is fixed before jax starts.
"""
import json
import os
import sys

if __name__ == "__main__":
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               f" --xla_force_host_platform_device_count={int(sys.argv[1])}")

from tests.parallel.harness import Run  # noqa: E402  (after XLA_FLAGS)
from tests.train import tiny_config  # noqa: E402

STEPS = 3


def main(devices: int, sharding: str):
    config = tiny_config.get_config(f"model=dino,steps={STEPS}")
    config.warmup_steps = 1
    config.sharding = sharding
    config.mesh = dict(data=2, fsdp=4, model=1) if devices == 8 else dict(data=1, fsdp=1, model=1)
    run = Run(config)
    state, losses = run.train(run.init(), STEPS)
    centre = [float(x) for x in state.extra["centre"].reshape(-1)[:8]]
    print(json.dumps({"losses": losses, "centre": centre}))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
