"""A sweep file and the checks that run before anything trains.

A sweep file is a Python file that defines

    def get_runs(arg=None):
        return [("vit_n1000", "configs/fashion_mnist/vit.py", {"data.train_size": 1000}), ...]

and optionally `FEWSHOT = dict(shots=(1, 5, 10, 25), seeds=3, max_test_examples=None, data=None)`
(None turns the few-shot probe off; `data` changes the data config for the probe only; its results go to
each run's fewshot.json), optionally `FEWSHOT_TRANSFER`, a second probe with the same keys and a `data`
it cannot do without (results in transfer.json; off when absent), e.g. a model pre-trained on classes
0-4 (`data.classes`) probed on the other five beside the in-domain FEWSHOT:

    FEWSHOT = dict(shots=(1, 5, 10, 25), seeds=10, max_test_examples=None)
    FEWSHOT_TRANSFER = dict(shots=(1, 5, 10, 25), seeds=10, max_test_examples=None,
                            data={"classes": (5, 6, 7, 8, 9)})

Either may also be a function of the sweep file's `arg` returning the same (None or a dict): a file
made of parts whose runs want different probes (experiments/decide_seeds.py), and optionally
`BUDGET = "steps = max(1,200, 8 epochs), batch 128"` (the training budget's rule in words) and
`TITLE = "..."`: both go into DIR/sweep.json, and `vitjax plot` puts them in the figures' titles.
`arg` is what follows the colon in `experiments/x.py:arg`. An override's text may name the sweep's own
directory as `{sweep_dir}` (SWEEP_DIR), e.g. `{"branch_from": "{sweep_dir}/vit_long"}` for a run that
starts from another run of the sweep: `Sweep.in_dir` puts the --workdir's absolute path there. Config paths are tried relative to the
current directory, then to the sweep file's directory and its parent (the repository root for files
under experiments/).

`load` checks everything that can be checked without training: the file defines runs, names are unique
and usable as directory names, each config loads and each override names a field the config has, and the
exact `--config.k=v` command line each run will get is read the way `vitjax train` reads it
(vitjax/config.py) back to the same config. A bad sweep fails here, before the first run starts.
"""
import dataclasses
import json
import os
import re

from vitjax import config as config_layer
from vitjax import storage
from vitjax.config_compare import flatten
from vitjax.evaluate import fewshot

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
# Config keys naming what a run reads when it starts (a pre-trained run, a teacher): the runner checks
# they exist for every run it is about to train, before the first one starts.
INPUT_KEYS = ("init_from", "distillation.teacher")
SWEEP_DIR = "{sweep_dir}"


class SweepError(ValueError):
    """The sweep definition is unusable; the message names the run and the fix."""


@dataclasses.dataclass
class Run:
    name: str
    config: str  # absolute path[:arg]
    overrides: dict
    config_dict: dict  # the resolved config, as JSON-able dict (for the table of pending runs)

    def missing_inputs(self) -> list[str]:
        """'key=path' for each of the run's INPUT_KEYS that names a path that does not exist."""
        flat = flatten(self.config_dict)
        return [f"{key}={flat[key]}" for key in INPUT_KEYS if flat.get(key) and not storage.exists(flat[key])]

    def train_argv(self, workdir: str) -> list[str]:
        """Arguments after `python -m vitjax`."""
        return ["train", "--config", self.config, "--workdir", workdir,
                *config_layer.override_flags(self.overrides)]


@dataclasses.dataclass
class Sweep:
    path: str
    arg: str | None
    runs: list[Run]
    fewshot: dict | None  # {'shots': (...), 'seeds': n, 'max_test_examples': n or None, 'data'}; None: off
    transfer: dict | None = None  # the FEWSHOT_TRANSFER probe, same keys; None: off
    budget: str | None = None  # the sweep file's BUDGET: the training budget's rule in words
    title: str | None = None  # the sweep file's TITLE

    def describe(self) -> dict:
        return {"sweep_file": self.path, "arg": self.arg, "fewshot": self.fewshot, "transfer": self.transfer,
                "budget": self.budget, "title": self.title,
                "runs": [{"name": r.name, "config": r.config, "overrides": r.overrides, "config_dict": r.config_dict}
                         for r in self.runs]}

    def in_dir(self, sweep_dir: str) -> "Sweep":
        """This sweep with SWEEP_DIR in its runs' overrides (and resolved configs) made `sweep_dir`."""
        where = os.path.abspath(sweep_dir)

        def put(value):
            if isinstance(value, str):
                return value.replace(SWEEP_DIR, where)
            if isinstance(value, dict):
                return {k: put(v) for k, v in value.items()}
            return type(value)(put(v) for v in value) if isinstance(value, (list, tuple)) else value
        return dataclasses.replace(self, runs=[dataclasses.replace(r, overrides=put(r.overrides),
                                                                   config_dict=put(r.config_dict)) for r in self.runs])

    def select(self, only) -> list[Run]:
        """The runs `only` names (names given space- or comma-separated), in the sweep's order; all without it."""
        if not only:
            return list(self.runs)
        only = [name for item in only for name in item.split(",") if name]
        known = {r.name for r in self.runs}
        unknown = [name for name in only if name not in known]
        if unknown:
            raise SweepError(f"--only names runs the sweep does not define: {', '.join(unknown)}; "
                             f"its runs are: {', '.join(r.name for r in self.runs)}")
        return [r for r in self.runs if r.name in set(only)]


def load(path_with_arg: str) -> Sweep:
    path, arg = config_layer.split_path(path_with_arg)
    if not os.path.isfile(path):
        raise SweepError(f"sweep file {path!r} does not exist")
    try:
        module = config_layer.load_module(path, name="vitjax_sweep_file")
    except Exception as error:  # a syntax or import error in the user's file
        raise SweepError(f"could not import sweep file {path}: {type(error).__name__}: {error}") from error
    if not callable(getattr(module, "get_runs", None)):
        raise SweepError(f"sweep file {path} defines no get_runs(arg=None) function")
    try:
        raw = module.get_runs(arg) if arg is not None else module.get_runs()
    except Exception as error:  # e.g. the sweep's own check of its argument
        raise SweepError(f"{path}: get_runs({arg!r}) failed: {type(error).__name__}: {error}") from error
    if not raw:
        raise SweepError(f"sweep file {path}{f':{arg}' if arg else ''} defines no runs (get_runs returned "
                         f"{raw!r}); return a list of (name, config_path[:arg], overrides dict)")
    base_dirs = [os.getcwd(), os.path.dirname(os.path.abspath(path)),
                 os.path.dirname(os.path.dirname(os.path.abspath(path)))]
    entries = [_entry(item, i, path) for i, item in enumerate(raw)]
    _check_names([name for name, _, _ in entries], path)
    runs = [_resolve(name, config, overrides, base_dirs) for name, config, overrides in entries]
    return Sweep(path=os.path.abspath(path), arg=arg, runs=runs, fewshot=_fewshot_settings(module, path, arg=arg),
                 transfer=_fewshot_settings(module, path, "FEWSHOT_TRANSFER", arg),
                 budget=_text(module, "BUDGET", path), title=_text(module, "TITLE", path))


def _text(module, name, path) -> str | None:
    """The sweep file's module-level string `name` (BUDGET, TITLE), or None where it has none."""
    value = getattr(module, name, None)
    if value is not None and not isinstance(value, str):
        raise SweepError(f"{path}: {name} must be a string (it goes into the figures' titles), got {value!r}")
    return value


def _entry(item, index, path):
    if not (isinstance(item, (tuple, list)) and len(item) in (2, 3)):
        raise SweepError(f"{path}: run #{index} is {item!r}; each run must be (name, config_path[:arg], "
                         f"overrides dict)")
    name, config, overrides = (*item, {}) if len(item) == 2 else item
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise SweepError(f"{path}: run #{index} has name {name!r}; names become directory names: use "
                         f"letters, digits and _ . + - only")
    if not isinstance(config, str):
        raise SweepError(f"{path}: run {name!r}: the config must be a path string, got {config!r}")
    if overrides is None:
        overrides = {}
    if not isinstance(overrides, dict) or not all(isinstance(k, str) for k in overrides):
        raise SweepError(f"{path}: run {name!r}: overrides must be a dict of 'dotted.key': value, "
                         f"got {overrides!r}")
    return name, config, dict(overrides)


def _check_names(names, path):
    seen, duplicates = set(), []
    for name in names:
        if name in seen and name not in duplicates:
            duplicates.append(name)
        seen.add(name)
    if duplicates:
        raise SweepError(f"{path}: duplicate run names {', '.join(duplicates)}: each run needs its own name "
                         f"(it is the run's sub-workdir)")


def _resolve(name, config, overrides, base_dirs) -> Run:
    file, arg = config_layer.split_path(config)
    candidates = [file] if os.path.isabs(file) else [os.path.join(d, file) for d in base_dirs]
    found = next((c for c in candidates if os.path.isfile(c)), None)
    if found is None:
        raise SweepError(f"run {name!r}: config file {file!r} not found (looked in: {', '.join(candidates)})")
    absolute = os.path.abspath(found) + (f":{arg}" if arg is not None else "")
    try:
        in_process = _resolved(absolute, overrides)
    except (KeyError, ValueError, TypeError) as error:
        raise SweepError(f"run {name!r} ({config}): {error}") from None
    except Exception as error:  # noqa: BLE001  (get_config itself failed)
        raise SweepError(f"run {name!r}: loading {config} failed: {type(error).__name__}: {error}") from None
    _check_command_line(name, absolute, overrides, in_process)
    return Run(name=name, config=absolute, overrides=overrides, config_dict=in_process)


def _resolved(config: str, overrides: dict) -> dict:
    """The config file with the overrides applied, as a JSON-able dict."""
    resolved = config_layer.load_config(config)
    config_layer.apply_overrides(resolved, overrides)
    return json.loads(resolved.to_json_best_effort(sort_keys=True))


def _check_command_line(name, config, overrides, expected):
    """The run's `--config.k=v` flags, read the way `vitjax train` will, must give the same config."""
    text, _ = config_layer.overrides_from_argv(config_layer.override_flags(overrides))
    try:
        parsed = _resolved(config, text)
    except ValueError as error:
        raise SweepError(f"run {name!r}: its command line would be refused by `vitjax train`: {error}") from None
    if parsed != expected:
        different = sorted(k for k in flatten(parsed).keys() | flatten(expected).keys()
                           if flatten(parsed).get(k) != flatten(expected).get(k))
        raise SweepError(f"run {name!r}: overrides do not survive the command line unchanged ({', '.join(different)}); "
                         f"use plain numbers, strings, bools or tuples")


def _fewshot_settings(module, path, name="FEWSHOT", arg=None):
    """The probe settings the sweep file's FEWSHOT (default: on, defaults) or FEWSHOT_TRANSFER (default: off;
    needs `data`) give, for its argument `arg` where it is a function of it; None: that probe is off."""
    settings = getattr(module, name, {} if name == "FEWSHOT" else None)
    if callable(settings):
        settings = settings(arg)
    if settings is None:
        return None
    known = {"shots", "seeds", "max_test_examples", "data"}
    if not isinstance(settings, dict) or set(settings) - known:
        raise SweepError(f"{path}: {name} must be None or a dict with keys {sorted(known)}, got {settings!r}")
    out = {"shots": list(settings.get("shots", fewshot.DEFAULT_SHOTS)),
           "seeds": int(settings.get("seeds", fewshot.DEFAULT_SEEDS)),
           "max_test_examples": settings.get("max_test_examples"), "data": settings.get("data")}
    if out["data"] is not None and not isinstance(out["data"], dict):
        raise SweepError(f"{path}: {name}['data'] must be a dict of data-config changes, got {out['data']!r}")
    unknown = sorted(set(out["data"] or {}) - set(config_layer.data_defaults().keys()))
    if unknown:
        raise SweepError(f"{path}: {name}['data'] names no data-config field {', '.join(map(repr, unknown))}; "
                         f"the fields: {sorted(config_layer.data_defaults().keys())}")
    if name != "FEWSHOT" and not out["data"]:
        raise SweepError(f"{path}: {name} needs 'data', the data it probes, e.g. {{'classes': (5, 6, 7, 8, 9)}}")
    if not out["shots"] or min(out["shots"]) < 1 or out["seeds"] < 1:
        raise SweepError(f"{path}: {name} needs shots >= 1 and seeds >= 1, got {settings!r}")
    if out["data"]:
        out["data"] = {k: list(v) if isinstance(v, tuple) else v for k, v in out["data"].items()}
    return out
