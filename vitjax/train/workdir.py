"""What a run leaves in its workdir, and the guard against resuming it with another config.

    config.json     the full config the run was started with
    metrics.jsonl   one JSON object per logged step or evaluation
    events.*        TensorBoard summaries (clu metric writers)
    checkpoints/    orbax checkpoints, the newest `keep_checkpoints` kept
    results.json    final metrics; its presence marks the run as finished
"""
import json
import os

import jax
import ml_collections

CONFIG = "config.json"
METRICS = "metrics.jsonl"
RESULTS = "results.json"
CHECKPOINTS = "checkpoints"


def is_writer() -> bool:
    """Only process 0 writes logs and summary files; every process takes part in checkpointing."""
    return jax.process_index() == 0


def flatten(tree: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def config_to_dict(config: ml_collections.ConfigDict) -> dict:
    return json.loads(config.to_json_best_effort(sort_keys=True))


def load_config(workdir: str) -> ml_collections.ConfigDict:
    path = os.path.join(workdir, CONFIG)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found: {workdir} is not a vitjax run directory "
                                f"(train one with `vitjax train --config ... --workdir {workdir}`)")
    with open(path) as f:
        return ml_collections.ConfigDict(json.load(f))


def claim(workdir: str, config: ml_collections.ConfigDict, *, force: bool) -> None:
    """Records the config, or checks that an existing run was started with the same one."""
    path = os.path.join(workdir, CONFIG)
    current = config_to_dict(config)
    if os.path.exists(path):
        with open(path) as f:
            previous = json.load(f)
        old, new = flatten(previous), flatten(current)
        differing = sorted(k for k in old.keys() | new.keys() if old.get(k, "<absent>") != new.get(k, "<absent>"))
        if differing and not force:
            lines = "\n".join(f"  {k}: {old.get(k, '<absent>')!r} -> {new.get(k, '<absent>')!r}" for k in differing)
            raise ValueError(
                f"{workdir} holds a run started with a different config; differing keys:\n{lines}\n"
                f"Use a new --workdir, or pass --force to resume this run with the new config.")
    if is_writer():
        os.makedirs(workdir, exist_ok=True)
        with open(path, "w") as f:
            json.dump(current, f, indent=2, sort_keys=True)


def read_results(workdir: str) -> dict | None:
    path = os.path.join(workdir, RESULTS)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def write_json(workdir: str, name: str, payload: dict) -> None:
    if not is_writer():
        return
    path = os.path.join(workdir, name)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(payload, f, indent=2, sort_keys=True)
    os.replace(tmp, path)  # atomic: a reader never sees half a file


class MetricsLog:
    """Appends one JSON object per line to metrics.jsonl and mirrors scalars to TensorBoard."""

    def __init__(self, workdir: str):
        from clu import metric_writers  # imported here: pulls in TensorFlow's summary ops
        self._path = os.path.join(workdir, METRICS)
        self._writer = metric_writers.create_default_writer(workdir, just_logging=not is_writer())

    def write(self, step: int, scalars: dict) -> None:
        scalars = {k: float(v) for k, v in scalars.items()}
        self._writer.write_scalars(step, scalars)
        if is_writer():
            with open(self._path, "a") as f:
                f.write(json.dumps({"step": step, **scalars}) + "\n")

    def close(self) -> None:
        self._writer.flush()
        self._writer.close()
