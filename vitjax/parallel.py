"""Device mesh, logical-axis sharding rules and multi-host setup.

Every parameter and key activation carries logical axis names ('embed', 'mlp', 'heads', ...); a
preset maps them onto the mesh axes `data`, `fsdp` and `model`. The batch is split over
`data` x `fsdp`; under FSDP the parameters and optimiser state are split over `fsdp` too, and XLA
inserts the all-gathers. The same code runs on one CPU, 8 fake CPU devices, GPUs or a TPU slice.
"""
import math
from typing import Sequence

import flax.linen as nn
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

MESH_AXES = ("data", "fsdp", "model")
BATCH_AXES = ("data", "fsdp")

# Logical axis name -> mesh axis. Names absent from a preset are replicated.
RULES = {
    "data": (("batch", BATCH_AXES),),
    "fsdp": (("batch", BATCH_AXES), ("embed", "fsdp"), ("conv_out", "fsdp")),
    "fsdp_tp": (("batch", BATCH_AXES), ("embed", "fsdp"), ("conv_out", "fsdp"),
                ("mlp", "model"), ("heads", "model")),
}


def make_mesh(axis_sizes: dict, devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A mesh with axes (data, fsdp, model); one size may be -1 for "all remaining devices"."""
    devices = list(jax.devices() if devices is None else devices)
    unknown = set(axis_sizes) - set(MESH_AXES)
    if unknown:
        raise ValueError(f"unknown mesh axes {sorted(unknown)}; the mesh axes are {MESH_AXES}")
    sizes = [int(axis_sizes.get(axis, 1)) for axis in MESH_AXES]
    if sizes.count(-1) > 1:
        raise ValueError(f"at most one mesh axis may be -1, got {dict(zip(MESH_AXES, sizes))}")
    if -1 in sizes:
        known = math.prod(s for s in sizes if s != -1)
        if len(devices) % known:
            raise ValueError(f"the fixed mesh axes {dict(zip(MESH_AXES, sizes))} (product {known}) do not "
                             f"divide the {len(devices)} devices; change the mesh sizes")
        sizes[sizes.index(-1)] = len(devices) // known
    if math.prod(sizes) != len(devices):
        raise ValueError(
            f"mesh {dict(zip(MESH_AXES, sizes))} has {math.prod(sizes)} devices but {len(devices)} are "
            f"available; make the sizes multiply to {len(devices)} or use -1 for one axis")
    grid = np.asarray(devices).reshape(sizes)
    # Auto axes: Flax's logical constraints are hints to the partitioner, not asserts (STACK-NOTES).
    return Mesh(grid, MESH_AXES, axis_types=(jax.sharding.AxisType.Auto,) * len(MESH_AXES))


def rules_for(preset: str):
    if preset not in RULES:
        raise ValueError(f"unknown sharding preset {preset!r}; choose one of {sorted(RULES)}")
    return RULES[preset]


def data_parallel_size(mesh: Mesh) -> int:
    return math.prod(mesh.shape[axis] for axis in BATCH_AXES)


def check_batch_size(global_batch_size: int, mesh: Mesh) -> None:
    size = data_parallel_size(mesh)
    if global_batch_size % size:
        raise ValueError(
            f"global batch size {global_batch_size} is not divisible by the data-parallel size {size} "
            f"(mesh {dict(mesh.shape)}); use a multiple of {size}, e.g. {(global_batch_size // size + 1) * size}")


def batch_sharding(mesh: Mesh) -> NamedSharding:
    """Leading (batch) axis split over data x fsdp, the rest replicated."""
    return NamedSharding(mesh, P(BATCH_AXES))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P())


def shardings_of(abstract_boxed_tree, mesh: Mesh, rules):
    """NamedShardings for a tree whose leaves may be logically-partitioned boxes (from eval_shape)."""
    specs = nn.get_partition_spec(abstract_boxed_tree)
    return nn.logical_to_mesh_sharding(specs, mesh, rules)
