"""Preemption-safe checkpoints: orbax CheckpointManager, verified on every restore.

Each save records a checksum of every array and the config it was saved with, and refuses a state
holding a NaN or an infinity. A restore first compares the step's saved layout (leaves, shapes,
dtypes; orbax's metadata, read before any array) with the state it restores into: a difference is a
changed config or changed code, raised as CheckpointMismatchError naming the leaves and the config
keys that changed, and nothing is moved. Only a step that cannot be read or fails its checksums is
corrupt (vitjax/checkpoints/integrity.py): the trainer moves it aside (never deletes it) and tries the
previous one; when none is left it raises rather than start again from step 0. A reader (`vitjax
eval`) opens the directory read-only: orbax neither creates, cleans nor deletes anything, and a
corrupt step is reported and left in place.

With several processes every decision is taken together: each process reads its shards, the
processes agree on whether every one of them could, the checksums are computed over the global
arrays (the same on each), and only process 0 moves a step. Where steps live is vitjax/checkpoints/locations.py's.
"""
import contextlib
import errno
import logging
import shutil
import time

import jax
import numpy as np
import orbax.checkpoint as ocp
from jax.experimental import multihost_utils

from vitjax import config_compare, rundir, storage
from vitjax.checkpoints import integrity, locations, reported_once
from vitjax.checkpoints.integrity import CorruptCheckpointError

log = logging.getLogger(__name__)


class CheckpointMismatchError(ValueError):
    """An intact checkpoint saved with other leaves, shapes or dtypes than the state restored into."""


class NonFiniteStateError(FloatingPointError):
    """A save of a train state holding a NaN or an infinity, refused."""


class FullDiskError(OSError):
    """A checkpoint the directory's disk has no room for: refused before writing, or failed while written."""


# How each process's attempt at a step ended; the processes agree on the worst (the largest).
_READ, _UNREADABLE, _MISMATCH = 0, 1, 2


class Checkpointer:
    """Saves and restores (state, meta) pairs under `directory`; meta is a small JSON dict.

    `config` (the run's config as a dict) is recorded with every save and compared with the
    checkpoint's on a mismatch. `read_only` opens the directory as a reader, see the module docstring.
    The newest `max_to_keep` steps are kept, and every step of `keep_steps` besides.
    """

    def __init__(self, directory: str, *, max_to_keep: int = 3, keep_steps=(), async_save: bool = True,
                 read_only: bool = False, config: dict | None = None):
        self.directory = storage.absolute(directory)  # a local path made absolute (orbax needs it), or gs://...
        self._max_to_keep = max_to_keep
        self._keep_steps = tuple(int(step) for step in keep_steps)
        self._async = async_save
        self._read_only = read_only
        self._config = config
        if read_only and not storage.isdir(self.directory):
            raise locations.nothing_saved(self.directory)
        self._manager = self._open()

    def _open(self):
        if self._read_only:
            options = ocp.CheckpointManagerOptions(read_only=True, create=False, save_interval_steps=0,
                                                   enable_async_checkpointing=False)
        else:
            # Cleaning another writer's temporary directories is safe only for the one writer of a
            # workdir, the trainer.
            options = ocp.CheckpointManagerOptions(
                preservation_policy=ocp.checkpoint_managers.AnyPreservationPolicy([
                    ocp.checkpoint_managers.LatestN(n=self._max_to_keep),
                    ocp.checkpoint_managers.CustomSteps(self._keep_steps)]),
                enable_async_checkpointing=self._async, cleanup_tmp_directories=True, create=True)
        return ocp.CheckpointManager(self.directory, options=options)

    def steps(self) -> list[int]:
        return sorted(self._manager.all_steps())

    def save(self, step: int, state, meta: dict) -> None:
        """Saves `state` as `step` (asynchronously unless async_save=False); raises NonFiniteStateError,
        writing nothing, when it holds a NaN or an infinity."""
        if self._read_only:
            raise ValueError(f"{self.directory} was opened read-only; only the trainer saves checkpoints")
        sums, non_finite = integrity.checksums_and_finite(state)
        if non_finite:
            earlier = self.steps()
            raise NonFiniteStateError(
                f"the train state at step {step} holds non-finite values in {', '.join(non_finite[:5])}"
                f"{f' and {len(non_finite) - 5} more arrays' if len(non_finite) > 5 else ''}; it was not "
                f"saved. Last good checkpoint: "
                f"{f'step {earlier[-1]} in {self.directory}' if earlier else 'none (no checkpoint written yet)'}")
        self._check_room(step, state)
        meta = dict(meta, step=int(step), checksums=sums, saved_at=time.time(), config=self._config)
        with self._full_disk_reported():  # the previous step's asynchronous save is awaited here
            self._manager.save(step, args=ocp.args.Composite(
                **{locations.STATE: ocp.args.StandardSave(state), locations.META: ocp.args.JsonSave(meta)}),
                force=True)

    @contextlib.contextmanager
    def _full_disk_reported(self):
        """Turns the checkpoint library's error for a write that found the disk full (tensorstore's
        ValueError, after its threads' logs, which the CLI drops: reported_once.py) into FullDiskError
        naming the directory, the last complete step and the fix."""
        try:
            yield
        except FullDiskError:
            raise
        except (ValueError, OSError) as error:
            if not reported_once.is_full_disk(error):
                raise
            steps = self._manager.all_steps()
            where = (f"the last complete one is step {max(steps)}. Free space and run the same command again, which "
                     f"resumes from it" if steps else "no step is complete yet. Free space and run the same command "
                     "again, which starts the run afresh")
            raise FullDiskError(errno.ENOSPC, f"the disk filled up while a checkpoint was written; {where}",
                                self.directory) from None

    def _check_room(self, step: int, state) -> None:
        """Raises FullDiskError naming the directory, writing nothing, when its disk cannot hold what
        this process would write for `step` (its arrays and orbax's metadata): an asynchronous save that
        ran out of room would show only when awaited, at the next save. Decided by all processes together."""
        if storage.is_remote(self.directory):
            return
        leaves = jax.tree.leaves(state)
        need = sum(_bytes_written_here(leaf) for leaf in leaves) + _OVERHEAD_PER_ARRAY * len(leaves) + _OVERHEAD
        free = shutil.disk_usage(storage.nearest_existing(self.directory)).free
        if _agree(int(free < need)):
            raise FullDiskError(errno.ENOSPC, f"no room for checkpoint step {step}: it needs {need / 2**20:,.1f} "
                                f"MiB, {free / 2**20:,.1f} MiB are free (on some process); free space and run the "
                                f"same command again, which resumes from the last checkpoint", self.directory)

    def restore_latest(self, abstract_state):
        """(state, meta) of the newest step that verifies; None when the directory holds no step.

        `abstract_state` holds jax.ShapeDtypeStructs with the target shardings, so a checkpoint
        saved on one mesh restores onto another. A corrupt step is moved aside (left in place when
        read-only) and the previous one tried; CorruptCheckpointError when none verifies, and
        CheckpointMismatchError at once for a step saved with another layout.
        """
        steps = self.steps()
        if not steps:
            self._refuse_a_fresh_start()
            return None
        fix = ("pass another run or checkpoint" if self._read_only else "training does not start again from "
               "step 0 on its own: use a new --workdir (the steps set aside are kept for inspection)")
        return integrity.newest_that_verifies(
            steps, lambda step: self.restore(step, abstract_state),
            lambda step, error, earlier: self._report_corrupt(step, error, earlier=earlier),
            where=self.directory, fix=fix)

    def restore(self, step: int, abstract_state):
        """(state, meta) of one step. Raises CheckpointMismatchError when its layout differs from
        `abstract_state`'s, CorruptCheckpointError when it cannot be read or fails its checksums;
        moves nothing."""
        what = f"checkpoint step {step} in {self.directory}"
        outcome, detail = self._read(step, abstract_state)
        agreed = _agree(outcome)
        if agreed == _MISMATCH:
            raise CheckpointMismatchError(detail if outcome == _MISMATCH else
                                          f"{what} was saved with another layout on another process; "
                                          f"see process 0's error")
        if agreed == _UNREADABLE:
            raise CorruptCheckpointError(f"{what} cannot be read" + (
                f" ({detail})" if outcome == _UNREADABLE else " by another process"))
        state, meta = detail
        # A list recorded by an older save follows the leaf order of the state, the same as this one's.
        recorded = integrity.recorded_checksums(meta, lambda: list(integrity.layout_of(abstract_state)))
        # Over the global arrays, so every process sees the same sums and decides alike.
        integrity.verify(what, recorded, integrity.checksums_and_finite(state)[0])
        return state, meta

    def _read(self, step: int, abstract_state):
        """This process's attempt: (_READ, (state, meta)), (_UNREADABLE, why) or (_MISMATCH, message).

        Through orbax's handlers, not the manager: the manager's restore ends in a barrier that a
        process whose read failed would never reach."""
        step_dir = locations.step_dir(self.directory, step)
        state_dir, meta_dir = storage.join(step_dir, locations.STATE), storage.join(step_dir, locations.META)
        try:
            saved = integrity.saved_layout(state_dir)
        except Exception as error:  # orbax raises many types for missing or garbled files
            return _UNREADABLE, integrity.error_summary(error)
        differences = integrity.layout_differences(saved, integrity.layout_of(abstract_state))
        if differences:
            return _MISMATCH, self._mismatch_message(step, meta_dir, differences)
        try:
            return _READ, (integrity.read_into(state_dir, abstract_state), integrity.read_meta(meta_dir))
        except Exception as error:
            return _UNREADABLE, integrity.error_summary(error)

    def _mismatch_message(self, step: int, meta_dir: str, differences: list[str]) -> str:
        try:
            saved_config = integrity.read_meta(meta_dir).get("config")
        except Exception:  # the layout is what matters here; an unreadable meta only loses the hint
            saved_config = None
        if saved_config is None or self._config is None:
            keys = ["(the checkpoint records no config to compare with; see its run's config.json)"]
        else:
            keys = config_compare.config_changes(saved_config, self._config) or [
                "none: the code that builds the model or the optimiser has changed since it was saved"]
        return (f"checkpoint step {step} in {self.directory} holds a train state of another layout than this "
                f"config builds (a changed config or changed code, not corruption; nothing was moved):\n"
                + "".join(f"  {line}\n" for line in differences)
                + "Config keys that differ from the checkpoint's:\n" + "".join(f"  {line}\n" for line in keys)
                + "Use a new --workdir for the new config, or restore the old config (or code) to resume "
                  "this run.")

    def _report_corrupt(self, step: int, error, *, earlier: list[int]) -> str:
        """Moves a corrupt step aside (a writer; process 0 only) and says so; returns a summary."""
        if self._read_only:
            where = "left in place (a reader moves nothing; the trainer sets it aside when it resumes)"
        else:
            where = f"moved to {self._set_aside(step)}"
        next_step = f"trying step {earlier[-1]}" if earlier else "no earlier checkpoint to try"
        log.warning("%s; %s; %s", error, where, next_step)
        print(f"WARNING: checkpoint step {step} is corrupt ({error}); {where}; {next_step}", flush=True)
        return f"step {step} {where}"

    def _set_aside(self, step: int) -> str:
        self._manager.wait_until_finished()
        _barrier(f"vitjax: every process has read checkpoint step {step}")
        target = locations.set_aside(self.directory, step) if rundir.is_writer() else None
        _barrier(f"vitjax: checkpoint step {step} set aside")
        self._manager.close()
        self._manager = self._open()  # forgets the step it had listed
        return target or f"{locations.corrupt_dir(self.directory)} (by process 0)"

    def _refuse_a_fresh_start(self) -> None:
        """Raises when every step of this run was set aside: starting from step 0 is the user's call."""
        corrupt = locations.corrupt_dir(self.directory)
        if self._read_only or not storage.isdir(corrupt) or not storage.listdir(corrupt):
            return
        raise CorruptCheckpointError(
            f"{self.directory} holds no checkpoint, and the corrupt steps of this run were set aside in {corrupt} "
            f"({', '.join(sorted(storage.listdir(corrupt)))}); training does not start again from step 0 on its own. "
            f"Use a new --workdir, or move {corrupt} away to start this run again from step 0.")

    def wait(self) -> None:
        with self._full_disk_reported():
            self._manager.wait_until_finished()

    def close(self) -> None:
        self.wait()
        self._manager.close()


# What orbax writes beside the arrays' bytes: each array's metadata (the default ViT's step is 2.4 MiB of
# arrays and ~0.45 MiB more, 1.8 KiB per array, measured 2026-12-07), and a step's own files.
_OVERHEAD_PER_ARRAY, _OVERHEAD = 4 * 2**10, 2**20


def _bytes_written_here(leaf) -> int:
    """The bytes of `leaf` this process writes: one replica of each of its shards."""
    if isinstance(leaf, jax.Array):
        return sum(shard.data.nbytes for shard in leaf.addressable_shards if shard.replica_id == 0)
    return int(getattr(leaf, "nbytes", 0))


def _agree(outcome: int) -> int:
    """The worst outcome over all processes (a collective: every process must call it)."""
    if jax.process_count() == 1:
        return outcome
    return int(np.max(multihost_utils.process_allgather(np.int32(outcome))))


def _barrier(name: str) -> None:
    if jax.process_count() > 1:
        multihost_utils.sync_global_devices(name)
