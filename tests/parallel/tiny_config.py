"""The trainer's tiny ViT with dropout on and a metrics row every step, for the scale-out tests.

    vitjax train --config tests/parallel/tiny_config.py --workdir /tmp/w --config.mesh.fsdp=-1 \
        --config.mesh.data=1 --config.sharding=fsdp

Dropout makes the comparisons stricter: its random bits must not depend on how the batch is split.
"""
from tests.train import tiny_config


def get_config(arg=None):
    c = tiny_config.get_config(arg or "steps=20")
    c.model.dropout_rate = 0.1
    c.log_every_steps = 1
    c.checkpoint_every_steps = 10
    return c
