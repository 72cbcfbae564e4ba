"""A run's directory (its workdir): the layout, finding its checkpoints, reading and writing its files.

    config.json           the full config the run was started with (`claim`)
    metrics.jsonl         one JSON object per logged step or evaluation (`MetricsLog`)
    events.*              TensorBoard summaries (`MetricsLog`, through clu)
    checkpoints/<step>/   orbax checkpoints (vitjax/train/checkpoint.py), the newest `keep_checkpoints`
                          kept; each step holds the items state/ (the train state) and meta/
    corrupt_checkpoints/  steps that could not be read or failed their checksums, moved aside by the
                          trainer (`set_aside`), never deleted
    results.json          final metrics; its presence marks the run as finished
    eval.json             `vitjax eval`'s re-evaluation of a checkpoint
    fewshot.json          the few-shot probe's accuracies (`vitjax eval --fewshot`)
    analysis/             `vitjax analyze`'s figures and tables, unless given --out
    train.log, fewshot.log, running.json, failed.json   a sweep's logs and markers (vitjax/sweep)

Every path inside a run directory is made here, so that moving runs to another filesystem changes
this file only (paths are local today: os.path). A command that reads a run takes it as the user
names it, a workdir, its checkpoints/ directory or one checkpoints/<step> directory, and `locate`
turns any of them into a `Location`.

This module sits low in the package graph (it imports only vitjax/checkpoint_integrity.py, which
imports no vitjax module), so train, evaluate, analysis and sweep can all read runs through it.
"""
import dataclasses
import json
import os
import shutil
import time

import jax
import ml_collections

CONFIG = "config.json"
METRICS = "metrics.jsonl"
RESULTS = "results.json"
EVAL = "eval.json"
FEWSHOT = "fewshot.json"
CHECKPOINTS = "checkpoints"
CORRUPT_CHECKPOINTS = "corrupt_checkpoints"
STATE, META = "state", "meta"  # the two orbax items of a checkpoint step
ANALYSIS = "analysis"
TRAIN_LOG, FEWSHOT_LOG = "train.log", "fewshot.log"
RUNNING = "running.json"  # pids working on the run now; removed when they are done
FAILED = "failed.json"  # the error and traceback of the sweep stage that failed

_WHAT_TO_PASS = (f"pass a vitjax workdir (it holds {CONFIG}), its {CHECKPOINTS}/ directory or one "
                 f"{CHECKPOINTS}/<step> directory")


# --- Paths ----------------------------------------------------------------------------------------

def file_path(run_dir: str, name: str) -> str:
    """The path of the file or directory `name` (one of this module's constants) in a run."""
    return os.path.join(run_dir, name)


def exists(run_dir: str, name: str) -> bool:
    return os.path.exists(file_path(run_dir, name))


def checkpoint_dir(run_dir: str) -> str:
    return file_path(run_dir, CHECKPOINTS)


def step_dir(directory: str, step: int) -> str:
    """One step's directory in a checkpoints directory."""
    return os.path.join(directory, str(step))


def checkpoint_steps(directory: str) -> list[int]:
    """The finalised steps in a checkpoints directory, oldest first.

    Orbax writes a step under a temporary name (`<step>.orbax-checkpoint-tmp-...`) and renames it to
    `<step>` when complete, so only all-digit names count.
    """
    if not os.path.isdir(directory):
        return []
    return sorted(int(name) for name in os.listdir(directory)
                  if name.isdigit() and os.path.isdir(os.path.join(directory, name)))


def corrupt_dir(directory: str) -> str:
    """The corrupt_checkpoints/ directory beside a checkpoints directory."""
    return os.path.join(os.path.dirname(os.path.abspath(directory)), CORRUPT_CHECKPOINTS)


def set_aside(directory: str, step: int) -> str:
    """Moves a corrupt step out of a checkpoints directory to corrupt_checkpoints/<step>-<unix time>
    beside it, where it is kept for inspection; returns the new path."""
    target = os.path.join(corrupt_dir(directory), f"{step}-{int(time.time())}")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    source = step_dir(directory, step)
    if os.path.exists(source):
        shutil.move(source, target)
    return target


@dataclasses.dataclass(frozen=True)
class Location:
    """A run and one of its checkpoints, as `locate` found them; absolute paths (orbax needs them)."""
    run_dir: str  # holds config.json
    checkpoint_dir: str
    step: int | None  # the step asked for; None for the newest


def locate(path: str) -> Location:
    """A workdir, its checkpoints/ directory or one checkpoints/<step> directory -> its `Location`.

    Raises FileNotFoundError naming what to pass when `path` is none of them.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path!r} does not exist; {_WHAT_TO_PASS}")
    absolute = os.path.abspath(path)
    name, parent = os.path.basename(absolute), os.path.dirname(absolute)
    if name.isdigit() and os.path.isdir(os.path.join(absolute, STATE)):
        return Location(os.path.dirname(parent), parent, int(name))
    if os.path.exists(os.path.join(absolute, CONFIG)) or os.path.isdir(checkpoint_dir(absolute)):
        return Location(absolute, checkpoint_dir(absolute), None)
    if name == CHECKPOINTS or checkpoint_steps(absolute):
        return Location(parent, absolute, None)
    raise FileNotFoundError(f"{path!r} is not a vitjax run or checkpoint; {_WHAT_TO_PASS}")


def chosen_step(location: Location) -> int:
    """The step `location` names, else its newest finalised one."""
    if location.step is not None:
        return location.step
    steps = checkpoint_steps(location.checkpoint_dir)
    if not steps:
        raise FileNotFoundError(f"no checkpoint in {location.checkpoint_dir}: the run has not saved one yet; "
                                f"train it further, or pass another run or checkpoint")
    return steps[-1]


# --- The run's files ------------------------------------------------------------------------------

def is_writer() -> bool:
    """Only process 0 writes logs and summary files; every process takes part in checkpointing."""
    return jax.process_index() == 0


def flatten(tree: dict, prefix: str = "") -> dict:
    """{'a': {'b': 1}} -> {'a.b': 1}: configs compared and tabulated key by key."""
    out = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def config_changes(old: dict, new: dict) -> list[str]:
    """'key: old -> new' for each flattened key whose value differs between two config dicts."""
    old, new = flatten(old), flatten(new)
    return [f"{key}: {old.get(key, '<absent>')!r} -> {new.get(key, '<absent>')!r}"
            for key in sorted(old.keys() | new.keys()) if old.get(key, "<absent>") != new.get(key, "<absent>")]


def config_to_dict(config: ml_collections.ConfigDict) -> dict:
    return json.loads(config.to_json_best_effort(sort_keys=True))


def read_json(run_dir: str, name: str) -> dict | None:
    """The JSON file `name` of a run (or of a sweep's directory, which holds runs), or None if absent."""
    path = file_path(run_dir, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def write_json(run_dir: str, name: str, payload: dict) -> None:
    """Writes the JSON file `name` (on process 0 only), atomically: a reader never sees half a file."""
    if not is_writer():
        return
    path = file_path(run_dir, name)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(payload, f, indent=2, sort_keys=True)
    os.replace(tmp, path)


def read_results(run_dir: str) -> dict | None:
    """results.json of a finished run; None while it is not finished."""
    return read_json(run_dir, RESULTS)


def load_config(run_dir: str) -> ml_collections.ConfigDict:
    config = read_json(run_dir, CONFIG)
    if config is None:
        raise FileNotFoundError(f"{file_path(run_dir, CONFIG)} not found: {run_dir} is not a vitjax run directory "
                                f"(train one with `vitjax train --config ... --workdir {run_dir}`)")
    return ml_collections.ConfigDict(config)


def claim(run_dir: str, config: ml_collections.ConfigDict, *, force: bool) -> None:
    """Records the config, or checks that an existing run was started with the same one."""
    current = config_to_dict(config)
    previous = read_json(run_dir, CONFIG)
    if previous is not None:
        old, new = flatten(previous), flatten(current)
        differing = sorted(k for k in old.keys() | new.keys() if old.get(k, "<absent>") != new.get(k, "<absent>"))
        if differing and not force:
            lines = "\n".join(f"  {k}: {old.get(k, '<absent>')!r} -> {new.get(k, '<absent>')!r}" for k in differing)
            raise ValueError(
                f"{run_dir} holds a run started with a different config; differing keys:\n{lines}\n"
                f"Use a new --workdir, or pass --force to resume this run with the new config.")
    if is_writer():
        os.makedirs(run_dir, exist_ok=True)
        write_json(run_dir, CONFIG, current)


def read_metrics(run_dir: str) -> list[dict]:
    """The rows of metrics.jsonl, oldest first; a line cut short by a kill is skipped."""
    path = file_path(run_dir, METRICS)
    if not os.path.exists(path):
        return []
    rows = []
    with open(path) as f:
        for line in f:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


class MetricsLog:
    """Appends one JSON object per line to metrics.jsonl and mirrors scalars to TensorBoard."""

    def __init__(self, run_dir: str):
        from clu import metric_writers  # imported here: pulls in TensorFlow's summary ops
        self._path = file_path(run_dir, METRICS)
        self._writer = metric_writers.create_default_writer(run_dir, just_logging=not is_writer())

    def write(self, step: int, scalars: dict) -> None:
        scalars = {k: float(v) for k, v in scalars.items()}
        self._writer.write_scalars(step, scalars)
        if is_writer():
            with open(self._path, "a") as f:
                f.write(json.dumps({"step": step, **scalars}) + "\n")

    def close(self) -> None:
        self._writer.flush()
        self._writer.close()


def read_checkpoint_params(path: str) -> dict:
    """The `params` subtree of a checkpoint, as host numpy arrays whatever mesh it was saved on.

    `path` is anything `locate` takes. Reads only (nothing is cleaned, moved or deleted) and checks
    the step's checksums: a named step that fails raises CorruptCheckpointError (a ValueError); without
    a step, the newest step that verifies is read, after a warning for each newer one that does not.
    """
    from vitjax import checkpoint_integrity as integrity  # here: imports jax; most users never read one

    location = locate(path)
    steps = [location.step] if location.step is not None else checkpoint_steps(location.checkpoint_dir)[::-1]
    if not steps:
        chosen_step(location)  # raises, saying the run has not saved a checkpoint yet
    for index, step in enumerate(steps):
        directory = step_dir(location.checkpoint_dir, step)
        try:
            return integrity.read_verified(os.path.join(directory, STATE), os.path.join(directory, META),
                                           f"checkpoint step {step} in {location.checkpoint_dir}")["params"]
        except integrity.CorruptCheckpointError as error:
            if location.step is not None:
                raise
            later = f"reading step {steps[index + 1]}" if index + 1 < len(steps) else "no earlier checkpoint"
            print(f"WARNING: {error}; left in place (the trainer sets it aside when it resumes); {later}",
                  flush=True)
    raise integrity.CorruptCheckpointError(
        f"no checkpoint in {location.checkpoint_dir} verifies (steps {', '.join(map(str, steps))}); pass "
        f"another run or checkpoint")
