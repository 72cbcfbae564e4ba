"""The results table of a sweep: one row per run, read back from the runs' workdirs.

    DIR/results.csv    the columns below, one line per run (what the figures are drawn from)
    DIR/results.json   the same rows plus each run's full config, overrides and few-shot spreads
    DIR/summary.csv    the finished runs averaged over training seeds (aggregate.py), written with them
    DIR/summary.json   the same groups plus each group's config (seeds removed) and runs

Few-shot columns, one pair per probe and k: `fewshot_<k>shot` (the in-domain probe, fewshot.json) and
`transfer_<k>shot` (the transfer probe, transfer.json: e.g. classes the run never trained on), the mean
test accuracy over the probe's draws of the k-shot set, and `<probe>_<k>shot_std`, the std over draws.

`accuracy` is the one number the figures use: `test_accuracy_at_best` (test accuracy of the checkpoint
with the best validation accuracy) where the run had a validation split, else `test_accuracy` (the
final step's); `accuracy_from` says which ('best_val' or 'final'). `seed` is the config's training seed.

A row's status: 'finished' (results.json, and few-shot done where asked), 'failed' (failed.json: the
error and traceback of the stage that failed), 'running' (a process holds the run's sweep lock,
runlock.py), 'stale' (trained with another config than the sweep now gives it, stale.py: its row
shows the sweep's config and no results), 'interrupted' (started, not finished: re-running the sweep
resumes it) or 'pending' (not started).

The files are replaced atomically, each written to a temporary file of its own first, so concurrent
writers (a sweep's worker threads, two sweeps) never meet half a file or each other's temporary file.
"""
import contextlib
import csv
import io
import dataclasses
import json
import os
import re
import statistics
import threading
import uuid

from vitjax import metrics_log, rundir, storage
from vitjax.sweep import aggregate, runlock, stale

SWEEP = "sweep.json"  # the sweep's definition, written by the runner; lets `vitjax plot` list pending runs
CSV, JSON = "results.csv", "results.json"
SUMMARY_CSV, SUMMARY_JSON = "summary.csv", "summary.json"  # the runs averaged over seeds (aggregate.py)

COLUMNS = ["name", "status", "family", "model", "patch_size", "train_size", "params", "flops_per_step",
           "train_flops", "steps", "batch_size", "examples_seen", "wall_seconds", "core_hours", "img_per_sec", "cpu",
           "pair_key", "seed", "accuracy", "accuracy_from", "test_accuracy", "test_accuracy_at_best", "best_val_accuracy",
           "best_step", "test_loss"]

# One collect-and-write at a time in this process: the table written last is then the newest.
_UPDATE_LOCK = threading.Lock()


def stale_differences(run_dir: str, expected: dict | None) -> dict:
    """How the run's recorded config differs from `expected` (the sweep's config for it); {} when it
    does not, or when either is missing (a run not started, a directory the sweep does not list)."""
    recorded = rundir.read_json(run_dir, rundir.CONFIG)
    if recorded is None or expected is None:
        return {}
    return stale.differences(recorded, expected)


def run_status(run_dir: str, want_probes=(), expected: dict | None = None) -> str:
    """The run's status (see the module's docstring); `want_probes`: the few-shot probes ('fewshot',
    'transfer') a finished run has; `expected`: the config the sweep gives it."""
    if runlock.is_held(run_dir):
        return "running"
    if stale_differences(run_dir, expected):
        return "stale"
    if rundir.exists(run_dir, rundir.FAILED):
        return "failed"
    if rundir.exists(run_dir, rundir.RESULTS):
        if any(not rundir.exists(run_dir, rundir.PROBE_FILES[p][0]) for p in want_probes):
            return "interrupted"  # trained; a few-shot probe still has to run
        return "finished"
    if rundir.exists(run_dir, rundir.CONFIG):
        return "interrupted"
    return "pending"


def _median_rate(run_dir):
    """Median training img/s over the logged windows (robust to the slow first window)."""
    rates = [row["img_per_sec"] for row in metrics_log.read_metrics(run_dir) if "img_per_sec" in row]
    return statistics.median(rates) if rates else None


def model_description(config: dict) -> tuple[str, str, int | None]:
    """(family, label, patch size) of a config: ('vit', 'ViT w64 d6 p4', 4), ('bit', 'BiT-R26x1 w8 small stem', None),
    ('deit', 'DeiT w64 d6 p4', 4), ('swin', 'Swin w32 d2-4 p2 win7', 2)."""
    name, model = config.get("model_name", "?"), config.get("model", {})
    if name == "vit":
        variant, patch = model.get("variant"), model.get("patch_size")
        if patch is None and variant and "/" in variant:
            patch = int(variant.split("/")[1])
        # A distillation token makes a DeiT student (Touvron et al. 2021): its own family in tables and plots.
        family = "hybrid" if model.get("resnet") else "deit" if model.get("distillation_token") else "vit"
        prefix = {"hybrid": f"{model.get('resnet')}+ViT", "deit": "DeiT", "vit": "ViT"}[family]
        if variant:  # the paper's names: ViT-B/16
            return family, f"{prefix}-{variant.split('/')[0]}/{patch}", patch
        return family, f"{prefix} w{model.get('width')} d{model.get('depth')} p{patch}", patch
    if name == "bit":
        stem, width = model.get("stem", "imagenet"), model.get("width")
        label = f"BiT-{model.get('variant')}" + (f" w{width}" if width else "")
        return "bit", label + ("" if stem == "imagenet" else f" {stem} stem"), None
    if name == "swin":
        variant, patch = model.get("variant"), model.get("patch_size") or 4
        if variant:
            return "swin", f"Swin-{variant}", patch
        depths = "-".join(str(d) for d in model.get("depths") or ())
        return "swin", f"Swin w{model.get('embed_dim')} d{depths} p{patch} win{model.get('window_size')}", patch
    return name, name, None


def headline_accuracy(results: dict) -> tuple[float | None, str | None]:
    """(accuracy, 'best_val' or 'final'): the test accuracy at the best validation step where the run
    had a validation split, else the final step's; (None, None) before the run has results."""
    if results.get("test_accuracy_at_best") is not None:
        return results["test_accuracy_at_best"], "best_val"
    if results.get("test_accuracy") is not None:
        return results["test_accuracy"], "final"
    return None, None


def run_row(name: str, run_dir: str, *, config: dict | None = None, config_file: str = "",
            overrides: dict | None = None, want_probes=()) -> dict:
    """One table row (all fields; COLUMNS and the few-shot columns are what the CSV keeps).

    `config`: the config the sweep gives the run; a run trained with another one is 'stale', and its
    row shows `config` and no results (they belong to the old config).
    """
    status = run_status(run_dir, want_probes, expected=config)
    recorded = _Recorded.of_stale_run(run_dir, config) if status == "stale" else _Recorded.read(run_dir)
    config = recorded.config or config or {}
    results = recorded.results
    family, label, patch = model_description(config)
    data = config.get("data", {})
    row = {
        "name": name, "status": status, "family": family, "model": label, "patch_size": patch,
        # The configured subset, else the split's size as the trainer saw it.
        "train_size": data.get("train_size") or results.get("num_train"),
        "batch_size": config.get("batch_size"),
        "img_per_sec": recorded.img_per_sec,
    }
    for key in ("params", "flops_per_step", "train_flops", "steps", "examples_seen", "wall_seconds",
                "core_hours", "test_accuracy", "test_accuracy_at_best", "best_val_accuracy", "best_step",
                "test_loss"):
        row[key] = results.get(key)
    row["seed"] = config.get("seed")
    row["accuracy"], row["accuracy_from"] = headline_accuracy(results)
    for probe, shots in recorded.probes.items():
        row.update({f"{probe}_{key}": value for key, value in shots.items() if re.fullmatch(r"\d+shot(_std)?", key)})
    row["image_shape"] = results.get("image_shape")
    row["cpu"] = (results.get("host") or {}).get("cpu")  # times compare only between runs of one cpu
    row["pair_key"] = pair_key(results) if results else None
    row["error"] = recorded.failed.get("error", "")
    row["failed_stage"] = recorded.failed.get("stage", "")
    row["config_file"] = config_file
    row["overrides"] = overrides or {}
    row["config"] = config
    return row


def pair_key(results: dict) -> str:
    """What two runs must share to be paired (vitjax/host.py says why): the cpu, its instruction sets,
    the XLA device count, the digest of the vitjax code that ran, XLA_FLAGS and the libraries' versions
    (_key); 'unrecorded' for what a run from before these were recorded lacks. A run whose attempts
    (results' `trained_on`, one per start of its trainer) ran on different hosts or code gets a key
    naming them all, which no single-host run shares: its steps mixed two arithmetics."""
    attempts = {_key(a.get("host") or {}, a.get("code") or {}, a.get("devices", "?"))
                for a in results.get("trained_on") or []}
    if len(attempts) > 1:
        return "mixed: " + " / ".join(sorted(attempts))
    return _key(results.get("host") or {}, results.get("code") or {}, results.get("devices", "?"))


# XLA_FLAGS that change no arithmetic: the device count is keyed on its own, the collective timeout only
# decides when a stuck step aborts. Any other flag (e.g. --xla_cpu_max_isa) may round differently.
_NEUTRAL_XLA_FLAGS = ("--xla_force_host_platform_device_count", "--xla_cpu_collective_call_terminate_timeout_seconds")


def _key(host: dict, code: dict, devices) -> str:
    """cpu | isa | devices | code digest, then the XLA_FLAGS that may change arithmetic and the library
    versions where a run recorded them (a run that recorded neither keeps the key it always had)."""
    isa = host.get("isa")
    parts = [host.get("cpu") or "unrecorded", "+".join(isa) if isa is not None else "unrecorded",
             f"{devices} devices", (code.get("source_sha256") or "unrecorded")[:12]]
    flags = sorted(flag for flag in (host.get("xla_flags") or "").split()
                   if not flag.startswith(_NEUTRAL_XLA_FLAGS))
    if flags:
        parts.append("XLA_FLAGS " + " ".join(flags))
    if code.get("libraries"):
        parts.append(" ".join(f"{name} {version}" for name, version in sorted(code["libraries"].items())))
    return " | ".join(parts)


@dataclasses.dataclass
class _Recorded:
    """What a run directory holds for its row."""
    config: dict | None = None
    results: dict = dataclasses.field(default_factory=dict)
    probes: dict = dataclasses.field(default_factory=dict)  # {probe: its fewshot.json or transfer.json}
    failed: dict = dataclasses.field(default_factory=dict)
    img_per_sec: float | None = None

    @classmethod
    def read(cls, run_dir):
        return cls(config=rundir.read_json(run_dir, rundir.CONFIG), results=rundir.read_results(run_dir) or {},
                   probes={probe: rundir.read_json(run_dir, files[0]) or {}
                           for probe, files in rundir.PROBE_FILES.items()},
                   failed=rundir.read_json(run_dir, rundir.FAILED) or {}, img_per_sec=_median_rate(run_dir))

    @classmethod
    def of_stale_run(cls, run_dir, expected):
        """Nothing of the old run but why it does not count."""
        return cls(failed={"error": stale.advice(run_dir, stale_differences(run_dir, expected))})


def csv_columns(rows) -> list[str]:
    shots = [c for column in aggregate.shot_columns(rows) for c in (column, f"{column}_std")]
    return COLUMNS + shots + ["error", "config_file", "overrides"]


def write(sweep_dir: str, rows: list[dict]) -> tuple[str, str]:
    """Writes results.csv and results.json, and their summary over seeds summary.csv and summary.json
    (each file atomically); returns the paths of results.csv and results.json."""
    csv_rows = [{**row, "overrides": json.dumps(row["overrides"], sort_keys=True),
                 "error": row["error"].splitlines()[-1] if row["error"] else ""} for row in rows]
    paths = _write_pair(sweep_dir, CSV, JSON, csv_columns(rows), csv_rows, {"runs": rows})
    groups = aggregate.groups(rows)
    _write_pair(sweep_dir, SUMMARY_CSV, SUMMARY_JSON, aggregate.columns(groups),
                [aggregate.csv_row(g) for g in groups], {"groups": groups})
    return paths


def _write_pair(sweep_dir, csv_name, json_name, columns, csv_rows, payload) -> tuple[str, str]:
    """DIR/csv_name with `columns` of `csv_rows`, and DIR/json_name with {'columns', **payload}."""
    csv_path, json_path = storage.join(sweep_dir, csv_name), storage.join(sweep_dir, json_name)
    with _replacing(csv_path, newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(csv_rows)
    with _replacing(json_path) as f:
        # allow_nan: the std of a one-run group is NaN (JSON's NaN, which Python's json reads back).
        json.dump({"columns": columns, **payload}, f, indent=1, sort_keys=False)
    return csv_path, json_path


def update(sweep_dir: str) -> tuple[list[dict], str]:
    """Collects the rows and writes them, one caller at a time in this process; returns (rows, CSV path)."""
    with _UPDATE_LOCK:
        rows = collect(sweep_dir)
        csv_path, _ = write(sweep_dir, rows)
    return rows, csv_path


def write_definition(sweep_dir: str, definition: dict) -> None:
    """Writes DIR/sweep.json (atomically): the runs `collect` lists, pending ones too."""
    with _replacing(storage.join(sweep_dir, SWEEP)) as f:
        json.dump(definition, f, indent=1)


@contextlib.contextmanager
def _replacing(path: str, newline=None):
    """A text file to write that replaces `path` when the block ends without an error. It is a
    temporary file of its own beside `path` (same filesystem: the rename is atomic), removed on error;
    made with O_EXCL rather than tempfile.mkstemp so that it gets the umask's mode, not 0600. In a
    bucket (gs://) the text is kept in memory and uploaded whole (an upload is whole or nothing)."""
    if storage.is_remote(path):
        buffer = io.StringIO()
        yield buffer
        storage.write_text(path, buffer.getvalue())
        return
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "x", newline=newline) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def collect(sweep_dir: str) -> list[dict]:
    """Rows of every run of a sweep directory: those sweep.json lists (pending ones too), then any other
    sub-directory that holds a run."""
    definition = rundir.read_json(sweep_dir, SWEEP) or {"runs": []}
    want_probes = tuple(p for p in rundir.PROBE_FILES if definition.get(p) is not None and definition["runs"])
    rows, listed = [], set()
    for run in definition["runs"]:
        rows.append(run_row(run["name"], storage.join(sweep_dir, run["name"]), config=run.get("config_dict"),
                            config_file=run.get("config", ""), overrides=run.get("overrides"),
                            want_probes=want_probes))
        listed.add(run["name"])
    for entry in sorted(storage.listdir(sweep_dir)) if storage.isdir(sweep_dir) else []:
        run_dir = storage.join(sweep_dir, entry)
        if entry not in listed and any(rundir.exists(run_dir, f) for f in (rundir.CONFIG, rundir.FAILED)):
            rows.append(run_row(entry, run_dir))
    return rows


def read(sweep_dir: str) -> list[dict]:
    """The rows of DIR/results.json, or collected from the run directories when it is missing. A table
    written before the `seed` and `accuracy` columns existed gets them from its rows' own results."""
    saved = rundir.read_json(sweep_dir, JSON)
    if not saved:
        return collect(sweep_dir)
    for row in saved["runs"]:
        if "accuracy" not in row:
            row["accuracy"], row["accuracy_from"] = headline_accuracy(row)
            row["seed"] = (row.get("config") or {}).get("seed")
    return saved["runs"]
