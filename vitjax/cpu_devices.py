"""How many XLA devices `vitjax train` and `vitjax bench` split a CPU host into.

JAX gives a CPU host one device by default. vitjax's commands ask for four (`jax_num_cpu_devices`)
and train data-parallel over them, as on any multi-device machine: each device runs its quarter of
the batch as its own program, so the memory-bound passes (norms, softmax, GELU, layout copies) of one
quarter overlap the matrix products of another instead of waiting for them. On the project's 2-core
machines, in one process with the same train step compiled for 1, 2, 4 and 8 devices and alternated
(experiments/results/bench/README.md): the default Fashion-MNIST config ran 1.26-1.40x faster on 4
than on 1, ViT-Ti at 224 1.21x, ViT-Ti at 28x28 1.10x; 8 devices were no better than 4. The
arithmetic is that of one device up to the order of the gradient sums.

The cost is memory: under the default 'data' sharding every device holds the parameters and the
optimiser state (for ViT-B, ~1 GiB each); `config.sharding='fsdp'` splits them instead.

The count is lowered to the largest of 4, 2, 1 that divides the (micro-)batch and the eval batch, and
left alone when:
  * VITJAX_CPU_DEVICES=N says otherwise (1: JAX's single device);
  * XLA_FLAGS names --xla_force_host_platform_device_count, or JAX_NUM_CPU_DEVICES is set: yours wins;
  * config.mesh is not the default {data: -1, fsdp: 1, model: 1}: an explicit mesh names its devices;
  * the run spans several processes (jax.distributed), or JAX's backends have already started in this
    process (a caller ran JAX before calling the command).
Accelerator devices are unaffected: the setting only shapes the CPU backend.
"""
import logging
import os

import jax

log = logging.getLogger(__name__)

ENV = "VITJAX_CPU_DEVICES"
DEFAULT = 4  # measured on 2 cores only; re-measure (experiments/bench/cpu_devices.py) on other machines
DEFAULT_MESH = {"data": -1, "fsdp": 1, "model": 1}


def requested() -> int | None:
    """The count asked for: VITJAX_CPU_DEVICES, else DEFAULT; None when the user set one for JAX."""
    if "--xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "") or \
            os.environ.get("JAX_NUM_CPU_DEVICES"):
        return None
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return DEFAULT
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{ENV}={raw!r} must be a positive integer (1 keeps JAX's single CPU device)")
    return int(raw)


def count_for(config, wanted: int) -> int:
    """The largest count <= `wanted`, halving, whose devices split every batch of `config` evenly."""
    batches = [config.batch_size // config.grad_accum_steps, config.eval_batch_size]
    count = wanted
    while count > 1 and any(batch % count for batch in batches):
        count //= 2
    return max(count, 1)


def apply(config) -> int | None:
    """Sets JAX's CPU device count for `config` before the backends start; returns it, or None."""
    wanted = requested()
    if wanted is None or dict(config.mesh) != DEFAULT_MESH or jax.distributed.is_initialized():
        return None
    count = count_for(config, wanted)
    try:
        jax.config.update("jax_num_cpu_devices", count)
    except RuntimeError:  # the backends already started in this process: their devices stay
        log.info("JAX's backends have started; the CPU keeps its %d device(s)", jax.local_device_count("cpu"))
        return None
    if count < wanted:
        log.info("%d CPU devices instead of %d so that batch %d and eval batch %d split evenly", count,
                 wanted, config.batch_size, config.eval_batch_size)
    return count
