"""Whether a checkpoint step is intact, and whether it fits the train state it is restored into.

Orbax writes each step to a temporary directory and renames it when complete, so a run killed
mid-save leaves only finished steps behind. Bytes can still rot or files go missing afterwards, and
a flipped bit in an uncompressed chunk would restore silently as a wrong value. Each save therefore
records a bit-exact checksum of every array (the sum of its raw bits as uint32, position-weighted,
wrapping) in the step's meta item, keyed by the array's path in the tree, and every reader
recomputes it.

A step can fail in two ways, and only one of them is the data's fault:
    corrupt    a file is missing or unreadable, or an array fails its checksum (CorruptCheckpointError):
               the trainer moves such a step aside; readers report it and leave it in place
    mismatch   the files are intact but hold other leaves, shapes or dtypes than the state they are
               restored into: a changed config or changed code. `layout_differences` names the leaves;
               nothing is moved.

The trainer's Checkpointer (vitjax/checkpoints/checkpointer.py) restores whole train states with these
checks; `read_verified` serves the readers that want arrays on the host whatever mesh saved them
(vitjax/checkpoints/reader.py: init_from, teachers, the few-shot probe, `vitjax analyze`); both walk
back through a run's steps with `newest_that_verifies`. This module takes item directories, not runs,
and imports no vitjax module.
"""
import json

import jax
import jax.numpy as jnp
import numpy as np


class CorruptCheckpointError(ValueError):
    """A checkpoint step that cannot be read or fails its checksums."""


# --- Checksums ------------------------------------------------------------------------------------

def _bits_checksum(x):
    if x.dtype == jnp.bool_:
        x = x.astype(jnp.uint8)
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = jax.random.key_data(x)
    bits = {1: jnp.uint8, 2: jnp.uint16, 4: jnp.uint32, 8: jnp.uint32}[x.dtype.itemsize]
    if x.dtype.itemsize == 8:
        x = x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(jnp.int32)
    raw = jax.lax.bitcast_convert_type(x, bits).astype(jnp.uint32)
    # Weight each element by its position so swapped values are caught as well as changed ones.
    position = jnp.arange(raw.size, dtype=jnp.uint32).reshape(raw.shape) * jnp.uint32(2654435761)
    return jnp.sum(raw * (position | jnp.uint32(1)), dtype=jnp.uint32)


def _all_finite(x):
    if jnp.issubdtype(x.dtype, jnp.inexact):
        return jnp.all(jnp.isfinite(x))
    return jnp.bool_(True)


@jax.jit
def _checksums_and_finite(tree):
    # One pass over the state at save time serves both: no extra work in the train step.
    return jax.tree.map(_bits_checksum, tree), jax.tree.map(_all_finite, tree)


def checksums_and_finite(tree) -> tuple[dict[str, int], list[str]]:
    """({leaf path: checksum}, paths of the leaves holding a NaN or an infinity). With several
    processes, a collective over the global arrays: every process gets the same answer."""
    sums, finite = jax.device_get(_checksums_and_finite(tree))
    paths = list(layout_of(tree))
    return ({path: int(v) for path, v in zip(paths, jax.tree.leaves(sums))},
            [path for path, ok in zip(paths, jax.tree.leaves(finite)) if not bool(ok)])


def recorded_checksums(meta: dict, saved_order) -> dict[str, int]:
    """{leaf path: checksum} as a step's meta recorded it.

    Steps saved before checksums were keyed by path recorded a list in the leaf order of the saved
    tree; `saved_order()` gives those paths (called only for such a step).
    """
    recorded = meta.get("checksums")
    if isinstance(recorded, list):
        return dict(zip(saved_order(), recorded))
    return recorded or {}


def verify(what: str, recorded: dict[str, int], actual: dict[str, int]) -> None:
    """Raises CorruptCheckpointError naming `what` and the arrays that differ from their record."""
    bad = sorted(path for path in actual.keys() | recorded.keys() if actual.get(path) != recorded.get(path))
    if bad:
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        raise CorruptCheckpointError(f"{what} fails its checksums in {', '.join(bad[:5])}{more}")


# --- Layouts: leaf paths, shapes and dtypes ---------------------------------------------------------

def _key_name(key) -> str:
    for attribute in ("key", "name", "idx"):  # DictKey / FlattenedIndexKey, GetAttrKey, SequenceKey
        if hasattr(key, attribute):
            return str(getattr(key, attribute))
    return str(key)


def layout_of(tree) -> dict[str, tuple[tuple[int, ...], str]]:
    """'params/head/kernel' -> (shape, dtype name) of every array leaf, in leaf order.

    Paths are spelled as orbax stores them: a dataclass field or a dict key by name, a tuple
    element by its index, so that a train state and its checkpoint's metadata can be compared.
    """
    return {"/".join(_key_name(key) for key in path): (tuple(leaf.shape), np.dtype(leaf.dtype).name)
            for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]}


def _saved_tree(state_dir: str):
    import orbax.checkpoint as ocp  # here: slow to import
    return ocp.StandardCheckpointHandler().metadata(_path(state_dir)).tree


def _path(directory: str):
    from etils import epath
    return epath.Path(directory)


def _leaves(node, prefix=()):
    """(path, array metadata) of every array of a metadata tree; an empty optimiser state is saved as None."""
    if isinstance(node, dict):
        for key, child in node.items():
            yield from _leaves(child, (*prefix, str(key)))
    elif isinstance(node, (list, tuple)):
        for index, child in enumerate(node):
            yield from _leaves(child, (*prefix, str(index)))
    elif node is not None and hasattr(node, "shape"):
        yield "/".join(prefix), node


def _legacy_saved_order(state_dir: str) -> list[str]:
    """Leaf paths in the order the save flattened them, for steps that recorded a list of checksums.

    Orbax's metadata API returns its tree with sorted keys, so the order comes from the metadata
    file itself, whose entries are written in flattening order.
    """
    entries = json.loads((_path(state_dir) / "_METADATA").read_text())["tree_metadata"].values()
    return ["/".join(str(key["key"]) for key in entry["key_metadata"]) for entry in entries
            if entry["value_metadata"]["value_type"] != "None"]


def saved_layout(state_dir: str) -> dict[str, tuple[tuple[int, ...], str]]:
    """The layout of the train state saved in an orbax state item directory.

    Reads only orbax's metadata; raises (orbax's own errors) when that cannot be read.
    """
    return {path: (tuple(leaf.shape), np.dtype(leaf.dtype).name) for path, leaf in _leaves(_saved_tree(state_dir))}


def layout_differences(saved: dict, target: dict, *, most: int = 12) -> list[str]:
    """Lines naming each leaf whose presence, shape or dtype differs (at most `most`, then a count),
    in the target's leaf order (a train state's parameters before its optimiser state)."""
    lines = []
    for path in [*target, *(p for p in saved if p not in target)]:
        if path not in target:
            lines.append(f"{path}: saved {_describe(saved[path])}, not in the new state")
        elif path not in saved:
            lines.append(f"{path}: new {_describe(target[path])}, not in the checkpoint")
        elif saved[path] != target[path]:
            lines.append(f"{path}: saved {_describe(saved[path])} -> new {_describe(target[path])}")
    if len(lines) > most:
        lines = lines[:most] + [f"... and {len(lines) - most} more leaves"]
    return lines


def _describe(shape_and_dtype) -> str:
    shape, dtype = shape_and_dtype
    return f"{dtype}{list(shape)}"


def error_summary(error: BaseException) -> str:
    """'Type: message' on one line, cut at 300 characters (tensorstore's messages run to pages)."""
    return f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"


def newest_that_verifies(steps: list[int], read, on_corrupt, *, where: str, fix: str):
    """read(step) of the newest of `steps` (oldest first) that raises no CorruptCheckpointError: the one
    restore loop of the trainer and of every reader. `on_corrupt(step, error, earlier_steps)` deals with a
    step that failed and returns what became of it in words; when none verifies, CorruptCheckpointError
    lists them and says `fix`."""
    failures = []
    for index in range(len(steps) - 1, -1, -1):
        try:
            return read(steps[index])
        except CorruptCheckpointError as error:
            failures.append(on_corrupt(steps[index], error, steps[:index]))
    raise CorruptCheckpointError(f"no checkpoint in {where} verifies: {'; '.join(failures)}; {fix}")


# --- Reading one step on the host, verified ---------------------------------------------------------

def read_meta(meta_dir: str) -> dict:
    """The meta item of a step (its checksums, step, config); orbax's errors when unreadable."""
    import orbax.checkpoint as ocp
    return ocp.JsonCheckpointHandler().restore(_path(meta_dir))


def read_into(state_dir: str, abstract_state):
    """The arrays of an orbax state item directory, in the shapes, dtypes and shardings of
    `abstract_state` (jax.ShapeDtypeStructs); not yet verified. Reads only, with no barrier between
    processes (a process whose read fails would never reach one)."""
    import orbax.checkpoint as ocp
    return ocp.StandardCheckpointHandler().restore(_path(state_dir), args=ocp.args.StandardRestore(abstract_state))


def read_verified(state_dir: str, meta_dir: str, what: str) -> dict:
    """The saved tree of one step as host numpy arrays, whatever mesh saved it, after its checksums
    matched. Reads only; raises CorruptCheckpointError naming `what` (e.g. 'checkpoint step 30 in
    DIR') when a file cannot be read or an array differs from its checksum."""
    import orbax.checkpoint as ocp
    try:
        saved = _saved_tree(state_dir)
        # Restored as numpy: by default orbax rebuilds the saving run's shardings, and refuses
        # ("topology mismatch") when this process has other devices, e.g. a run trained on 4 CPU devices.
        as_numpy = jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), saved)
        tree = ocp.PyTreeCheckpointHandler().restore(_path(state_dir), args=ocp.args.PyTreeRestore(
            restore_args=as_numpy))
        recorded = recorded_checksums(read_meta(meta_dir), lambda: _legacy_saved_order(state_dir))
    except Exception as error:  # orbax and tensorstore raise many types for missing or garbled files
        raise CorruptCheckpointError(f"{what} cannot be read ({error_summary(error)})") from error
    verify(what, recorded, checksums_and_finite(tree)[0])
    return tree
