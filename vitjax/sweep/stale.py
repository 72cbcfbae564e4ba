"""Stale runs: a run directory trained with another config than the one the sweep would run now.

A run's config.json records the config it was trained with. After an edit of the sweep file (an
override changed, another config file named) or of the config file itself, the config the sweep now
resolves for that run's name (spec.Run.config_dict) can differ from it. Such a run's results answer
another question than the sweep now asks: the table marks it 'stale' (without its old results), the
sweep neither skips it as finished nor resumes it, and `--redo_stale` sets it aside and trains afresh.
(`vitjax train --force` would not do: it resumes the old checkpoints under the new config.)

What the sweep resolves is compared with what the trainer resolves from the same command, the config
file with the overrides applied, by the trainer's own rule when it resumes a workdir
(config_compare.differing_keys): a key vitjax gained since the run was trained, where the sweep gives it its
default, is no difference, nor is a CPU runtime choice an older vitjax recorded in config.json; any
other difference is.
"""
import json
import os
import shutil
import time
import uuid

from vitjax import config_compare, rundir

STALE_DIR = "_stale"  # DIR/_stale/<name>-<time>-<random>/; a name no run can have (they begin alphanumeric)


def differences(recorded: dict, expected: dict) -> dict[str, tuple]:
    """{dotted key: (recorded value, expected value)} for every key where the config a run was trained
    with (its config.json) differs from the sweep's config for it; {} when the run is current."""
    return config_compare.differing_keys(recorded, expected)


def summary(found: dict, most: int = 3) -> str:
    """'lr: 0.01 -> 0.02, data.train_size: 1000 -> 2000 (and 2 more keys)'."""
    shown = ", ".join(f"{key}: {was!r} -> {wanted!r}" for key, (was, wanted) in list(found.items())[:most])
    return shown + (f" (and {len(found) - most} more keys)" if len(found) > most else "")


def advice(run_dir: str, found: dict) -> str:
    """What is stale about the run and how to redo it, in one line."""
    return (f"stale: {run_dir} was trained with another config than the sweep now gives it "
            f"({summary(found)}); its results are not this run's. Re-run the sweep with --redo_stale to move it "
            f"to {aside_dir(run_dir)}/ and train afresh, or delete {run_dir}")


def aside_dir(run_dir: str) -> str:
    """Where `set_aside` moves stale runs: the _stale/ directory of the run's sweep directory."""
    return os.path.join(os.path.dirname(os.path.abspath(run_dir)), STALE_DIR)


def set_aside(run_dir: str) -> str:
    """Moves everything in a run directory but its sweep lock (held by the caller) to
    <sweep dir>/_stale/<name>-<time>-<random>/, kept for inspection; returns that directory."""
    name = os.path.basename(os.path.abspath(run_dir))
    target = os.path.join(aside_dir(run_dir), f"{name}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}")
    os.makedirs(target)
    for entry in os.listdir(run_dir):
        if entry != rundir.SWEEP_LOCK:
            shutil.move(os.path.join(run_dir, entry), os.path.join(target, entry))
    return target
