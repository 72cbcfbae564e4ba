"""Device mesh, logical-axis sharding rules and multi-host setup.

JAX does the work: `jax.jit` over a `Mesh` with `NamedSharding`s, and XLA's partitioner inserts the
collectives. This module only decides *where* each array lives:

* the mesh has three named axes, `data`, `fsdp` and `model` (`make_mesh`); across the slices of a
  multi-slice TPU, `data` is split over the data-centre network as well (`make_hybrid_mesh`);
* every parameter and key activation carries logical axis names ('embed', 'mlp', 'heads', ...),
  set by the models with `nn.with_logical_partitioning` / `nn.with_logical_constraint`;
* a rule set maps logical names onto mesh axes (`rules_for`: a preset name, optionally followed by
  `name=axis` overrides, from `config.sharding`). Names no rule maps are replicated.

The batch is split over `data` x `fsdp`. Under FSDP the parameters and the optimiser state are
split over `fsdp` too (each device keeps 1/fsdp of them and XLA all-gathers a layer's weights when
it needs them); tensor parallelism splits attention heads and MLP units over `model`. The same code
runs on one CPU, 8 fake CPU devices, GPUs and TPU pod slices.
"""
import glob
import logging
import math
import os
from typing import Sequence

import flax.linen as nn
import jax
import numpy as np
from jax.experimental import mesh_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

log = logging.getLogger(__name__)

MESH_AXES = ("data", "fsdp", "model")
BATCH_AXES = ("data", "fsdp")
DCN_DATA = "dcn_data"  # config.mesh key: slices the data axis spans over the data-centre network
# Auto axes: Flax's logical constraints are hints to the partitioner; under Explicit axes they fail.
AUTO_AXES = (jax.sharding.AxisType.Auto,) * len(MESH_AXES)

# The logical names the models use, and what each one is.
LOGICAL_AXES = {
    "batch": "examples in a batch (activations only)",
    "length": "tokens of a sequence / position-embedding rows",
    "embed": "the transformer width, D",
    "mlp": "hidden units of the transformer MLP",
    "heads": "attention heads",
    "kv": "features of one attention head, D / heads",
    "conv_in": "input channels of a convolution",
    "conv_out": "output channels of a convolution",
    "layers": "the stacked-layer axis of a scanned (nn.scan) encoder",
    "classes": "logits of the classifier head",
}

# Logical name -> mesh axes, in priority order; a mesh axis is used at most once per array, so in
# the FSDP presets an activation [batch, length, embed] is split on batch only and keeps its width
# whole, while a weight [embed, mlp] is split on embed.
RULES = {
    # Pure data parallelism: parameters and optimiser state replicated on every device.
    "data": (("batch", BATCH_AXES),),
    # FSDP (ZeRO-3): parameters and optimiser state split over `fsdp` along their width axis.
    "fsdp": (("batch", BATCH_AXES), ("embed", "fsdp"), ("conv_out", "fsdp")),
    # FSDP plus tensor parallelism (Megatron-style) over `model`: heads and MLP units.
    "fsdp_tp": (("batch", BATCH_AXES), ("embed", "fsdp"), ("conv_out", "fsdp"),
                ("mlp", "model"), ("heads", "model")),
}

# Parameters the models create with plain Flax layers (no logical names) and that are worth
# splitting: the classifier head is [width, classes] (27M parameters for ViT-H with 21k classes)
# and the pre-logits layer [width, width]. Matched on the end of the parameter path, in the params
# and in every optimiser-state copy of them. BiT's head input is its channel count; calling it
# 'embed' gives it the same treatment as the width of a ViT.
PATH_NAMES = {
    ("head", "kernel"): ("embed", "classes"),
    ("pre_logits", "kernel"): ("embed", None),
}
# Every other unnamed leaf stays replicated on purpose: LayerNorm/RMSNorm/GroupNorm scales and
# biases and dense/conv biases are O(width) each, about 0.1% of a ViT's parameters, and splitting
# them would add a collective per leaf for no memory worth having. tests/parallel checks that no
# large leaf is left unnamed.


def make_mesh(axis_sizes: dict, devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A mesh with axes (data, fsdp, model); one size may be -1 for "all remaining devices".

    `axis_sizes` may also hold `dcn_data` (config.mesh.dcn_data, default 1): the number of slices
    the `data` axis spans over the data-centre network; see `make_hybrid_mesh`. With the default
    devices the layout comes from `jax.make_mesh`, which follows the physical topology on TPUs
    (neighbouring devices on the fastest axes).
    """
    axis_sizes = dict(axis_sizes)
    dcn_data = axis_sizes.pop(DCN_DATA, 1)
    if int(dcn_data) != 1:
        return make_hybrid_mesh(axis_sizes, int(dcn_data), devices)
    explicit = devices is not None
    devices = list(jax.devices() if devices is None else devices)
    sizes = _mesh_sizes(axis_sizes, len(devices))
    if not explicit:
        try:
            return jax.make_mesh(sizes, MESH_AXES, axis_types=AUTO_AXES, devices=devices)
        except (ValueError, NotImplementedError) as error:
            # Some shapes have no mapping onto a TPU torus; any device order still works, only slower.
            log.warning("no topology-aware layout for mesh %s (%s); using the devices in order",
                        dict(zip(MESH_AXES, sizes)), error)
    return Mesh(np.asarray(devices).reshape(sizes), MESH_AXES, axis_types=AUTO_AXES)


def _mesh_sizes(axis_sizes: dict, num_devices: int, where: str = "") -> list[int]:
    """The sizes of (data, fsdp, model) over `num_devices`, the -1 resolved; ValueError naming the fix.
    `where` says which devices they are ("of each slice") when not all of them."""
    unknown = set(axis_sizes) - set(MESH_AXES)
    if unknown:
        raise ValueError(f"unknown mesh axes {sorted(unknown)}; the mesh axes are {MESH_AXES} "
                         f"(and {DCN_DATA}, the slices)")
    sizes = [int(axis_sizes.get(axis, 1)) for axis in MESH_AXES]
    named = lambda s: dict(zip(MESH_AXES, s))
    if sizes.count(-1) > 1:
        raise ValueError(f"at most one mesh axis may be -1, got {named(sizes)}")
    if any(s == 0 or s < -1 for s in sizes):
        raise ValueError(f"mesh axis sizes must be positive or -1, got {named(sizes)}")
    if -1 in sizes:
        known = math.prod(s for s in sizes if s != -1)
        if num_devices % known:
            raise ValueError(f"the fixed mesh axes {named(sizes)} (product {known}) do not divide the "
                             f"{num_devices} devices{where}; change the mesh sizes (config.mesh)")
        sizes[sizes.index(-1)] = num_devices // known
    if math.prod(sizes) != num_devices:
        raise ValueError(
            f"mesh {named(sizes)} needs {math.prod(sizes)} devices but {num_devices} are available{where}; "
            f"make the sizes of config.mesh multiply to {num_devices}, or set one of them to -1")
    return sizes


def make_hybrid_mesh(axis_sizes: dict, dcn_data: int, devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A multi-slice mesh: `data` spans `dcn_data` slices over the data-centre network (DCN), and
    inside each slice the sizes of `axis_sizes` (one may be -1) run over the chips' own links (ICI).

    The mesh keeps the axes (data, fsdp, model), with data = dcn_data x the per-slice data size, the
    slices outermost: only the gradient all-reduce of data parallelism crosses the slow DCN, while
    FSDP's all-gathers and tensor parallelism stay inside a slice. Built with
    `jax.experimental.mesh_utils.create_hybrid_device_mesh`. A slice is what the devices'
    `slice_index` says (TPU multi-slice); where every device is in one slice, or devices carry no
    slice_index (CPU, GPU), each process stands for a slice (`process_is_granule=True`).
    """
    if dcn_data < 1:
        raise ValueError(f"config.mesh.{DCN_DATA} must be a positive number of slices, got {dcn_data}")
    devices = list(jax.devices() if devices is None else devices)
    by_process, granules = _granules(devices, dcn_data)
    per_granule = {len(g) for g in granules}
    if len(per_granule) != 1:
        raise ValueError(f"the {len(granules)} {'processes' if by_process else 'slices'} hold different "
                         f"numbers of devices {sorted(len(g) for g in granules)}; a multi-slice mesh needs "
                         f"equal ones")
    sizes = _mesh_sizes(axis_sizes, per_granule.pop(), where=" of each slice")
    try:
        layout = mesh_utils.create_hybrid_device_mesh(sizes, (dcn_data, 1, 1), devices,
                                                      process_is_granule=by_process)
    except (ValueError, NotImplementedError, AssertionError) as error:
        # No mapping of the per-slice shape onto a TPU torus: slice after slice, devices in order.
        log.warning("no topology-aware layout for the per-slice mesh %s (%s); using the devices in order",
                    dict(zip(MESH_AXES, sizes)), error)
        layout = np.concatenate([np.asarray(g).reshape(sizes) for g in granules], axis=0)
    return Mesh(layout, MESH_AXES, axis_types=AUTO_AXES)


def _granules(devices, dcn_data: int) -> tuple[bool, list[list]]:
    """(by process, the devices of each slice in order): the devices' slices when there are several,
    else their processes; ValueError unless there are exactly `dcn_data` of them."""
    slices = {getattr(d, "slice_index", 0) for d in devices}
    by_process = len(slices) == 1
    key = (lambda d: d.process_index) if by_process else (lambda d: d.slice_index)
    groups = {}
    for device in devices:
        groups.setdefault(key(device), []).append(device)
    if len(groups) != dcn_data:
        what = f"{len(groups)} process(es), each standing for a slice" if by_process else f"{len(groups)} slices"
        raise ValueError(f"config.mesh.{DCN_DATA}={dcn_data} must equal the number of slices, and the devices "
                         f"are in {what}; set config.mesh.{DCN_DATA}={len(groups)} (or 1 for a single mesh "
                         f"over all devices)")
    return by_process, [groups[k] for k in sorted(groups)]


def rules_for(sharding: str) -> tuple:
    """Rules from `config.sharding`: a preset, optionally with overrides, or overrides alone.

        'fsdp'                       the preset
        'fsdp,mlp=model'             the preset, with MLP units also split over `model`
        'data,embed=fsdp'            custom: batch over data x fsdp, width over fsdp
        'fsdp_tp,heads='             the preset, with heads replicated (an empty value)
    Overrides replace every rule of their logical name; mesh axes are joined with '+'
    ('batch=data+fsdp'). Without a preset the batch keeps its usual data x fsdp split.
    """
    items = [item.strip() for item in str(sharding).split(",") if item.strip()]
    if not items:
        raise ValueError(f"config.sharding is empty; choose a preset: {sorted(RULES)}")
    rules = list(RULES["data"])
    if "=" not in items[0]:
        if items[0] not in RULES:
            raise ValueError(f"unknown sharding preset {items[0]!r}; choose one of {sorted(RULES)}, "
                             f"optionally followed by overrides such as ',mlp=model'")
        rules = list(RULES[items.pop(0)])
    for item in items:
        name, eq, value = (part.strip() for part in item.partition("="))
        if not eq:
            raise ValueError(f"config.sharding={sharding!r}: {item!r} is not 'logical_name=mesh_axis'; only "
                             f"the first item may be a preset name")
        if name not in LOGICAL_AXES:
            raise ValueError(f"config.sharding={sharding!r}: unknown logical axis {name!r}; the models use "
                             f"{sorted(LOGICAL_AXES)}")
        axes = tuple(a.strip() for a in value.split("+") if a.strip())
        bad = [a for a in axes if a not in MESH_AXES]
        if bad or len(set(axes)) != len(axes):
            raise ValueError(f"config.sharding={sharding!r}: {item!r} must name distinct mesh axes from "
                             f"{MESH_AXES} joined with '+', or nothing to replicate")
        rules = [rule for rule in rules if rule[0] != name]
        if axes:
            rules.append((name, axes[0] if len(axes) == 1 else axes))
    return tuple(rules)


def data_parallel_size(mesh: Mesh) -> int:
    return math.prod(mesh.shape[axis] for axis in BATCH_AXES)


def check_batch_size(global_batch_size: int, mesh: Mesh, what: str = "global batch size") -> None:
    size = data_parallel_size(mesh)
    if global_batch_size % size:
        raise ValueError(
            f"{what} {global_batch_size} is not divisible by the data-parallel size {size} "
            f"(data x fsdp of mesh {dict(mesh.shape)}); use a multiple of {size}, e.g. "
            f"{(global_batch_size // size + 1) * size}")


def batch_sharding(mesh: Mesh) -> NamedSharding:
    """Leading (batch) axis split over data x fsdp, the rest replicated."""
    return NamedSharding(mesh, P(BATCH_AXES))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P())


def _is_box(x) -> bool:
    return isinstance(x, nn.Partitioned)


def _path_names(path) -> tuple:
    keys = []
    for entry in path:
        for attr in ("key", "name", "idx"):
            if hasattr(entry, attr):
                keys.append(str(getattr(entry, attr)))
                break
    return tuple(keys)


def _names_of(path, leaf):
    if _is_box(leaf):
        return tuple(leaf.names)
    keys = _path_names(path)
    for suffix, fallback in PATH_NAMES.items():
        if keys[-len(suffix):] == suffix and len(fallback) == len(leaf.shape):
            return fallback
    return None


def logical_names(boxed_tree) -> dict:
    """{'path': logical axis names or None (replicated)} for every leaf, from the boxes or PATH_NAMES."""
    leaves = jax.tree_util.tree_flatten_with_path(boxed_tree, is_leaf=_is_box)[0]
    return {jax.tree_util.keystr(path): _names_of(path, leaf) for path, leaf in leaves}


def shardings_of(abstract_boxed_tree, mesh: Mesh, rules):
    """NamedShardings for a tree whose leaves may be logically-partitioned boxes (from eval_shape).

    The result has the structure of the unboxed tree. A dimension that its mesh axes do not divide
    evenly (ViT-Ti's 3 heads over model=2) is replicated rather than padded, with a warning: even
    shards keep memory and collectives predictable.
    """

    def sharding(path, leaf):
        names = _names_of(path, leaf)
        if names is None:
            return NamedSharding(mesh, P())
        shape = (leaf.value if _is_box(leaf) else leaf).shape
        spec = list(nn.logical_to_mesh_axes(names, rules))
        for dim, axes in enumerate(spec):
            if axes is None:
                continue
            size = math.prod(mesh.shape[a] for a in ((axes,) if isinstance(axes, str) else axes))
            if shape[dim] % size:
                log.warning("%s: dimension %d (%s, size %d) does not divide over mesh axes %s (%d devices); "
                            "replicating it", jax.tree_util.keystr(path), dim, names[dim], shape[dim], axes, size)
                spec[dim] = None
        return NamedSharding(mesh, P(*spec))

    return jax.tree_util.tree_map_with_path(sharding, abstract_boxed_tree, is_leaf=_is_box)


def bytes_per_device(tree) -> dict:
    """Bytes of `tree` in total and on each device, from its leaves' shapes, dtypes and shardings.

    Leaves are jax.Arrays or jax.ShapeDtypeStructs carrying a sharding; arithmetic only, nothing is
    allocated. With even shards every device holds the same amount.
    """
    total = per_device = 0
    for leaf in jax.tree.leaves(tree):
        itemsize = np.dtype(leaf.dtype).itemsize
        total += math.prod(leaf.shape) * itemsize
        per_device += math.prod(leaf.sharding.shard_shape(leaf.shape)) * itemsize
    return {"total": total, "per_device": per_device}


def describe(mesh: Mesh, rules) -> str:
    """A one-line summary for the logs: 'mesh data=2 fsdp=4 model=1; embed->fsdp, ...'."""
    axes = " ".join(f"{name}={size}" for name, size in mesh.shape.items())
    mapped = ", ".join(f"{name}->{'+'.join(a) if isinstance(a, tuple) else a}" for name, a in rules)
    return f"mesh {axes}; {mapped}"


# --- Multi-host ---------------------------------------------------------------------------------

ENV_COORDINATOR = "JAX_COORDINATOR_ADDRESS"  # also read by jax.distributed itself
ENV_NUM_PROCESSES = "JAX_NUM_PROCESSES"
ENV_PROCESS_ID = "JAX_PROCESS_ID"


def on_cloud_tpu_vm() -> bool:
    """TPU chips are attached to this machine (v4 and older: /dev/accel*; v5e and newer: vfio)."""
    return bool(glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*"))


def initialize_distributed(coordinator_address: str | None = None, num_processes: int | None = None,
                           process_id: int | None = None, *, mode: str = "auto") -> bool:
    """Joins a multi-process run with `jax.distributed.initialize`; True if it did.

    Call before anything touches a device. `mode`:
      'auto'  initialise when any of the three settings is given (here or in the environment
              variables JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID), or on a Cloud
              TPU VM, where JAX reads the slice's hosts from the metadata server (a single-host
              slice becomes one process); otherwise stay a plain single process.
      'on'    always initialise; JAX fills in what is not given from the cluster it detects
              (Cloud TPU, SLURM, Open MPI, Kubernetes).
      'off'   never.
    """
    if mode not in ("auto", "on", "off"):
        raise ValueError(f"distributed mode must be 'auto', 'on' or 'off', got {mode!r}")
    if mode == "off":
        return False
    coordinator_address = coordinator_address or os.environ.get(ENV_COORDINATOR) or None
    num_processes = _int_setting(num_processes, ENV_NUM_PROCESSES, "num_processes")
    process_id = _int_setting(process_id, ENV_PROCESS_ID, "process_id")
    given = [v is not None for v in (coordinator_address, num_processes, process_id)]
    if mode == "auto" and not any(given) and not on_cloud_tpu_vm():
        return False
    if num_processes == 1 and process_id in (None, 0) and mode == "auto":
        return False  # one process asked for explicitly: nothing to join
    if any(given) and not all(given) and not on_cloud_tpu_vm():
        missing = [flag for flag, ok in zip(("--coordinator_address", "--num_processes", "--process_id"), given)
                   if not ok]
        raise ValueError(f"a multi-process run needs --coordinator_address (host:port of process 0), "
                         f"--num_processes and --process_id on every process; missing {missing} (or set "
                         f"{ENV_COORDINATOR}, {ENV_NUM_PROCESSES}, {ENV_PROCESS_ID})")
    if num_processes is not None and process_id is not None and not 0 <= process_id < num_processes:
        raise ValueError(f"process_id must be in [0, num_processes={num_processes}), got {process_id}")
    jax.distributed.initialize(coordinator_address=coordinator_address, num_processes=num_processes,
                               process_id=process_id)
    log.info("process %d of %d; %d local of %d devices", jax.process_index(), jax.process_count(),
             jax.local_device_count(), jax.device_count())
    return True


def _int_setting(value, env: str, name: str):
    if value is not None:
        return int(value)
    raw = os.environ.get(env)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{env}={raw!r} is not an integer ({name})") from None
