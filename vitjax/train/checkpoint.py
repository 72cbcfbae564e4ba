"""Preemption-safe checkpoints: orbax CheckpointManager plus a checksum of every array.

Orbax writes each step to a temporary directory and renames it when complete, so a run killed
mid-save leaves only finished steps behind. Bytes can still rot or files go missing afterwards, and
a flipped bit in an uncompressed chunk would restore silently as a wrong value. Each save therefore
records a bit-exact checksum of every array (the sum of its raw bits as uint32, wrapping); restore
recomputes it, and a checkpoint that fails to load or to match is moved aside (never deleted) and
the previous one is used. Where the steps and the moved-aside ones live is vitjax/rundir.py's.
"""
import logging
import os
import time

import jax
import jax.numpy as jnp
import orbax.checkpoint as ocp

from vitjax import rundir

log = logging.getLogger(__name__)


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


@jax.jit
def checksums(tree):
    return jax.tree.map(_bits_checksum, tree)


def _to_json(tree):
    return [int(v) for v in jax.tree.leaves(jax.device_get(checksums(tree)))]


class CorruptCheckpointError(RuntimeError):
    pass


class Checkpointer:
    """Saves and restores (state, meta) pairs under `directory`; meta is a small JSON dict."""

    def __init__(self, directory: str, *, max_to_keep: int = 3, async_save: bool = True):
        self.directory = os.path.abspath(directory)
        self._max_to_keep = max_to_keep
        self._async = async_save
        self._manager = self._open()

    def _open(self):
        options = ocp.CheckpointManagerOptions(
            max_to_keep=self._max_to_keep, enable_async_checkpointing=self._async,
            cleanup_tmp_directories=True, create=True)
        return ocp.CheckpointManager(self.directory, options=options)

    def steps(self) -> list[int]:
        return sorted(self._manager.all_steps())

    def save(self, step: int, state, meta: dict) -> None:
        meta = dict(meta, step=int(step), checksums=_to_json(state), saved_at=time.time())
        self._manager.save(step, args=ocp.args.Composite(
            **{rundir.STATE: ocp.args.StandardSave(state), rundir.META: ocp.args.JsonSave(meta)}), force=True)

    def restore_latest(self, abstract_state):
        """(state, meta) of the newest checkpoint that restores and matches its checksums, or None.

        `abstract_state` holds jax.ShapeDtypeStructs with the target shardings, so a checkpoint
        saved on one mesh restores onto another.
        """
        for step in reversed(self.steps()):
            try:
                return self.restore(step, abstract_state)
            except Exception as error:  # orbax raises many types for missing or garbled files
                moved = self._quarantine(step)
                log.warning("checkpoint at step %d is unreadable or corrupt (%s: %s); moved it to %s "
                            "and falling back to the previous one", step, type(error).__name__,
                            str(error)[:300], moved)
                print(f"WARNING: checkpoint step {step} is corrupt ({type(error).__name__}); moved to "
                      f"{moved}; trying the previous checkpoint", flush=True)
        return None

    def restore(self, step, abstract_state):
        """(state, meta) of one step; raises if it is unreadable or fails its checksums."""
        restored = self._manager.restore(step, args=ocp.args.Composite(
            **{rundir.STATE: ocp.args.StandardRestore(abstract_state), rundir.META: ocp.args.JsonRestore()}))
        state, meta = restored[rundir.STATE], restored[rundir.META]
        if meta.get("checksums") != _to_json(state):
            raise CorruptCheckpointError(f"checksum mismatch in checkpoint step {step}")
        return state, meta

    def _quarantine(self, step) -> str:
        self._manager.wait_until_finished()
        target = rundir.set_aside(self.directory, step)
        self._manager.close()
        self._manager = self._open()
        return target

    def wait(self) -> None:
        self._manager.wait_until_finished()

    def close(self) -> None:
        self._manager.wait_until_finished()
        self._manager.close()
