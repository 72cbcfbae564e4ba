"""How many XLA devices `vitjax train` and `vitjax bench` split a CPU host into.

JAX gives a CPU host one device by default. vitjax's commands ask for four (`jax_num_cpu_devices`)
and train data-parallel over them, as on any multi-device machine: each device runs its quarter of
the batch as its own program, so the small and memory-bound operations (norms, softmax, GELU, layout
copies, the many tiny attention products of a narrow model) of one quarter overlap the work of
another instead of leaving a core idle. On the project's 2-core machines, as the vitjax/timm ratio of
`vitjax bench` (both in one process; 1 and 4 devices in separate processes, same hour): the default
Fashion-MNIST config 0.87 -> 1.01 (+16%); ViT-Ti at 28x28, batch 128, 0.86/0.91 -> 0.91/0.98/0.88
(about +5%); ViT-Ti at 224, batch 16, 0.85/0.87/0.92 -> 0.84/0.95/0.86 (no change). The smaller the
model's operations, the more it gains. The arithmetic is that of one device up to the order of the
gradient sums.

The costs: under the default 'data' sharding every device holds the parameters and the optimiser
state (for ViT-B, ~1 GiB each; `config.sharding='fsdp'` splits them instead), and compiling for four
devices takes longer (a scanned ViT-B/16 train step: 6.2 s instead of 4.3 s).

The count is halved (4, 2, 1) until it divides the (micro-)batch and the eval batch, and left alone when:
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
DEFAULT = 4  # measured on 2 cores only; re-measure on other machines (experiments/results/bench/README.md)
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
    return count


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
