"""A run's directory (its workdir): the layout, finding its checkpoints, reading and writing its files.

    config.json           the full config the run was started with (`claim`); written only when it
                          is new or changed
    metrics.jsonl         one JSON object per logged step or evaluation, each once (`MetricsLog`)
    events.*              TensorBoard summaries (`MetricsLog`, through TensorFlow's summary writer)
    checkpoints/<step>/   orbax checkpoints (vitjax/train/checkpoint.py), the newest `keep_checkpoints`
                          kept; each step holds the items state/ (the train state) and meta/
    checkpoint_best/<step>/  with a validation split (data.has_validation), the parameters of the step with
                          the best validation accuracy so far, the one step kept (vitjax/train/best.py)
    corrupt_checkpoints/  steps that could not be read or failed their checksums, moved aside by the
                          trainer (`set_aside`), never deleted; corrupt_checkpoint_best/ likewise
    results.json          final metrics; its presence marks the run as finished
    eval.json             `vitjax eval`'s re-evaluation of a checkpoint
    fewshot.json          the few-shot probe's accuracies (`vitjax eval --fewshot`)
    analysis/             `vitjax analyze`'s figures and tables, unless given --out
    train.lock            locked (fcntl.flock) by the one trainer working on the run, whose pid and
                          host it names; the lock, not the file, counts (`lock`)
    history/<UTC time>/   what `vitjax train --force` replaced: the previous config.json, and the
                          results.json, eval.json and fewshot.json that described the previous run
                          (`keep_history`); never deleted
    train.log, fewshot.log, sweep.lock, failed.json   a sweep's logs, lock and failure (vitjax/sweep)

The JSON files are written whole or not at all (`write_json`, `replace_file`: a temporary file
beside the file, flushed and fsynced, renamed over it), so a full disk or a crash leaves the previous
version or the new one, and a damaged one is reported with its fix (`read_json`). metrics.jsonl is
appended to; a line cut short is skipped when read and dropped when a run resumes, which also drops
the rows the resumed run writes again (`keep_metrics`).

Every path inside a run directory is made here, and every file of a run is read and written
through vitjax/storage.py, so a run directory may be local or in a bucket (--workdir gs://bucket/run):
there JSON files are single uploads (whole or not at all without a temporary file), metrics.jsonl is
written whole at each write (objects cannot be appended to), set-aside and history moves copy and then
delete, and train.lock is advisory (`lock`). A command that reads a run takes it as the user
names it, a workdir, its checkpoints/ directory or one checkpoints/<step> directory, and `locate`
turns any of them into a `Location`.

This module sits low in the package graph (it imports only vitjax/checkpoint_integrity.py, vitjax/storage.py
and the config schema, vitjax/config.py, which import no vitjax module), so train, evaluate, analysis and sweep can all read runs through it.
"""
import dataclasses
import fcntl
import functools
import itertools
import json
import os
import secrets
import socket
import time
from typing import Callable

import jax
import ml_collections

from vitjax import config as config_layer
from vitjax import storage, xla_cpu

CONFIG = "config.json"
METRICS = "metrics.jsonl"
RESULTS = "results.json"
EVAL = "eval.json"
FEWSHOT = "fewshot.json"
TRANSFER = "transfer.json"  # the second few-shot probe (on other data: `vitjax eval --probe transfer`)
KNN = "knn.json"  # the weighted k-NN classifier on frozen features (`vitjax eval --knn`)


def knn_file(train_size: int | None = None, subset_seed: int = 0) -> str:
    """Where `vitjax eval --knn` writes: knn.json for the whole train split as the memory bank,
    knn_n<N>_s<S>.json for the protocol's subset of N images drawn with subset seed S."""
    return KNN if train_size is None else f"knn_n{train_size}_s{subset_seed}.json"
CHECKPOINTS = "checkpoints"
BEST_CHECKPOINT = "checkpoint_best"  # {'params': ...} of the best validation step, beside checkpoints/
_CORRUPT = "corrupt_"  # corrupt_<checkpoints directory>/ holds that directory's steps set aside
CORRUPT_CHECKPOINTS = _CORRUPT + CHECKPOINTS
STATE, META = "state", "meta"  # the two orbax items of a checkpoint step
# The meta key naming the state's evaluated network ('params', or 'extra/teacher' for DINO: Objective.evaluated);
# absent in a best-validation checkpoint ({'params': the evaluated network}) and in runs from before it.
EVALUATED = "evaluated_params"
ANALYSIS = "analysis"
TRAIN_LOG, FEWSHOT_LOG, TRANSFER_LOG = "train.log", "fewshot.log", "transfer.log"
# Each few-shot probe of a run (vitjax/evaluate/fewshot.py): its result file and its log in a sweep.
PROBE_FILES = {"fewshot": (FEWSHOT, FEWSHOT_LOG), "transfer": (TRANSFER, TRANSFER_LOG)}
LOCK = "train.lock"
HISTORY = "history"
SWEEP_LOCK = "sweep.lock"  # flock'ed while a sweep works on the run (vitjax/sweep/runlock.py)
FAILED = "failed.json"  # the error and traceback of the sweep stage that failed

_WHAT_TO_PASS = (f"pass a vitjax workdir (it holds {CONFIG}), its {CHECKPOINTS}/ directory or one "
                 f"{CHECKPOINTS}/<step> directory")


# --- Paths ----------------------------------------------------------------------------------------

def file_path(run_dir: str, name: str) -> str:
    """The path of the file or directory `name` (one of this module's constants) in a run."""
    return storage.join(run_dir, name)


def exists(run_dir: str, name: str) -> bool:
    return storage.exists(file_path(run_dir, name))


def checkpoint_dir(run_dir: str) -> str:
    return file_path(run_dir, CHECKPOINTS)


def best_checkpoint_dir(run_dir: str) -> str:
    return file_path(run_dir, BEST_CHECKPOINT)


def step_dir(directory: str, step: int) -> str:
    """One step's directory in a checkpoints directory."""
    return storage.join(directory, str(step))


def checkpoint_steps(directory: str) -> list[int]:
    """The finalised steps in a checkpoints directory, oldest first.

    Orbax writes a step under a temporary name (`<step>.orbax-checkpoint-tmp-...`) and renames it to
    `<step>` when complete, so only all-digit names count. On an object store, which cannot rename,
    orbax writes `<step>/` in place and marks it complete last with `<step>/commit_success.txt`: there
    a step counts only with that file.
    """
    if not storage.isdir(directory):
        return []
    steps = [name for name in storage.listdir(directory)
             if name.isdigit() and storage.isdir(storage.join(directory, name))]
    if storage.is_remote(directory):
        steps = [name for name in steps if storage.exists(storage.join(directory, name, _COMMITTED))]
    return sorted(map(int, steps))


_COMMITTED = "commit_success.txt"  # orbax's marker of a finished step on an object store


def corrupt_dir(directory: str) -> str:
    """The corrupt_<name>/ directory beside a checkpoints directory <name> (corrupt_checkpoints/ beside
    checkpoints/): each checkpoints directory of a run sets its steps aside apart from the others'."""
    absolute = storage.absolute(directory)
    return storage.join(storage.dirname(absolute), _CORRUPT + storage.basename(absolute))


def set_aside(directory: str, step: int) -> str:
    """Moves a corrupt step out of a checkpoints directory to corrupt_checkpoints/<step>-<unix time>
    beside it, where it is kept for inspection; returns the new path.

    A rename on a disk; on an object store a copy of every object and then the originals' deletion
    (storage.move: not atomic there, but a step is never lost: a crash between the two leaves it in
    both places, and the trainer finds it corrupt again and sets it aside again)."""
    target = storage.join(corrupt_dir(directory), f"{step}-{int(time.time())}")
    storage.makedirs(storage.dirname(target))
    source = step_dir(directory, step)
    if storage.exists(source):
        storage.move(source, target)
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
    if not storage.exists(path):
        raise FileNotFoundError(f"{path!r} does not exist; {_WHAT_TO_PASS}")
    absolute = storage.absolute(path)
    name, parent = storage.basename(absolute), storage.dirname(absolute)
    if name.isdigit() and storage.isdir(storage.join(absolute, STATE)):
        return Location(storage.dirname(parent), parent, int(name))
    if storage.exists(storage.join(absolute, CONFIG)) or storage.isdir(checkpoint_dir(absolute)):
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


ABSENT = "<absent>"


def same_value(a, b) -> bool:
    """Equal as JSON: config.json holds lists where a config has tuples, and NaN (an override of a run
    meant to fail) must equal itself."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# Config keys that say how a run executes, not what it computes: they may change between attempts of
# one run (add a compilation cache or a profiler window to resume with) and are never a difference.
RUNTIME_KEYS = ("compilation_cache_dir", "profile_steps", "keep_checkpoint_steps")


def differing_keys(old: dict, new: dict) -> dict[str, tuple]:
    """{flattened key: (old value, new value)} for each key whose value differs between two configs.

    A key that one side lacks counts as its default in the schema (vitjax/config.py): a run recorded
    before vitjax gained a key ran as that key's default does (keys are added with the old behaviour
    as their default), so a new key does not make every earlier run a different config. RUNTIME_KEYS
    are not compared.
    """
    old, new = flatten(old), flatten(new)
    defaults = _schema_defaults()
    found = {}
    for key in sorted((old.keys() | new.keys()) - set(RUNTIME_KEYS)):
        was, wanted = old.get(key, defaults.get(key, ABSENT)), new.get(key, defaults.get(key, ABSENT))
        if not same_value(was, wanted) and not _legacy_fill(key, was, wanted):
            found[key] = (old.get(key, ABSENT), new.get(key, ABSENT))
    return found


def _legacy_fill(key: str, was, wanted) -> bool:
    """Whether one side holds what an older vitjax wrote into a CPU run's config.json as a runtime
    choice (xla_cpu.LEGACY_CONFIG_FILLS) and the other has no value for it."""
    fill = xla_cpu.LEGACY_CONFIG_FILLS.get(key, ABSENT)
    return fill is not ABSENT and ABSENT in (was, wanted) and (same_value(was, fill) or same_value(wanted, fill))


def with_schema_defaults(flat: dict) -> dict:
    """A flattened config with the schema's default for each key it lacks: `differing_keys`' rule, for
    code that compares configs by value (the sweep's seed groups)."""
    return {**_schema_defaults(), **flat}


@functools.cache
def _schema_defaults_cached() -> str:
    return json.dumps(flatten(config_to_dict(config_layer.base())))


def _schema_defaults() -> dict:
    return json.loads(_schema_defaults_cached())


def config_changes(old: dict, new: dict) -> list[str]:
    """'key: old -> new' for each key `differing_keys` finds."""
    return [f"{key}: {was!r} -> {wanted!r}" for key, (was, wanted) in differing_keys(old, new).items()]


def config_to_dict(config: ml_collections.ConfigDict) -> dict:
    return json.loads(config.to_json_best_effort(sort_keys=True))


class DamagedFileError(ValueError):
    """A run's JSON file that exists but cannot be read (cut short or garbled); names the file and the fix."""


# How to get each file of a run back once it is damaged (cut short by an older vitjax, which did not
# sync a file before renaming it, edited by hand, or on a failing disk).
_REPAIRS = {
    CONFIG: f"re-run `vitjax train` on this workdir with its config and --force, which writes it again and keeps "
            f"the damaged one in {HISTORY}/; or copy a good config.json from {HISTORY}/",
    RESULTS: "delete it and re-run the same `vitjax train` command, which evaluates the final checkpoint again",
    EVAL: "delete it and re-run `vitjax eval`",
    FEWSHOT: "delete it and re-run `vitjax eval --fewshot`",
    TRANSFER: "delete it and re-run `vitjax eval --fewshot --probe transfer` with the probe's --fewshot_data",
}


def read_json(run_dir: str, name: str) -> dict | None:
    """The JSON file `name` of a run (or of a sweep's directory, which holds runs), or None if absent.

    Raises DamagedFileError naming the file and how to get it back when it is empty or not JSON.
    """
    path = file_path(run_dir, name)
    if not storage.exists(path):
        return None
    raw = storage.read_bytes(path)
    try:
        return json.loads(raw)
    except ValueError as error:  # JSONDecodeError, and UnicodeDecodeError for bytes that are no text
        what = "it is empty" if not raw.strip() else f"it is not JSON ({error})"
        raise DamagedFileError(f"{path} is damaged: {what}, probably cut short by a full disk or a crash "
                               f"while it was written. Fix: {_REPAIRS.get(name, 'delete it or restore a copy')}"
                               ) from None


def replace_file(path: str, text: str) -> None:
    """Writes `path` whole or not at all: a temporary file beside it, flushed and fsynced, renamed over it.

    A reader sees the previous file or the new one, never a part, and so does the next run after a
    crash or power loss: the data reach the disk before the rename, the rename before this returns.
    On an object store one upload is already whole or nothing (storage.write_text).
    """
    if storage.is_remote(path):
        storage.write_text(path, text)
        return
    directory = os.path.dirname(os.path.abspath(path))
    # A name of its own per writer (two processes replacing one file must not share a temporary), made
    # with open(): unlike tempfile's, it gets the umask's permissions, as the file itself would.
    tmp = f"{path}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
    try:
        with open(tmp, "x") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory: str) -> None:
    """Makes a rename in `directory` durable; a no-op where the filesystem cannot fsync a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_json(run_dir: str, name: str, payload: dict) -> None:
    """Writes the JSON file `name` (on process 0 only), whole or not at all (`replace_file`)."""
    if not is_writer():
        return
    text = json.dumps(payload, indent=2, sort_keys=True)  # before any file is touched: it may fail
    replace_file(file_path(run_dir, name), text)


def write_report(run_dir: str, name: str, payload: dict) -> bool:
    """`write_json` for a reader's report of a run (eval.json, fewshot.json, knn_*.json): a run
    directory this user cannot write (read-only, another owner's, a full disk) keeps the report
    printed only, with one line saying why, instead of losing it to an error. Returns whether it was written."""
    try:
        write_json(run_dir, name, payload)
    except OSError as error:
        print(f"WARNING: could not write {file_path(run_dir, name)} ({error.strerror or error}); "
              f"the results are only printed", flush=True)
        return False
    return True


def read_results(run_dir: str) -> dict | None:
    """results.json of a finished run; None while it is not finished."""
    return read_json(run_dir, RESULTS)


def load_config(run_dir: str) -> ml_collections.ConfigDict:
    config = read_json(run_dir, CONFIG)
    if config is None:
        raise FileNotFoundError(f"{file_path(run_dir, CONFIG)} not found: {run_dir} is not a vitjax run directory "
                                f"(train one with `vitjax train --config ... --workdir {run_dir}`)")
    return ml_collections.ConfigDict(config)


def check_config(run_dir: str, config: ml_collections.ConfigDict, *, finished: bool = False) -> None:
    """Raises ValueError naming every differing key when the run in `run_dir` was started with another
    config (`finished`: the run is finished, which the message says); passes when there is no run yet."""
    previous = read_json(run_dir, CONFIG)
    if previous is None:
        return
    differing = config_changes(previous, config_to_dict(config))
    if not differing:
        return
    lines = "\n".join(f"  {change}" for change in differing)
    what, then = (("a finished run", "redo it under the new config from its newest checkpoint") if finished
                  else ("a run", "resume this run under the new config"))
    raise ValueError(f"{run_dir} holds {what} started with a different config; differing keys:\n{lines}\n"
                     f"Use a new --workdir, or pass --force to {then} (the previous config and results are "
                     f"kept in {HISTORY}/).")


def claim(run_dir: str, config: ml_collections.ConfigDict, *, force: bool) -> str | None:
    """Records the config in config.json, or checks that the run there was started with the same one.

    With `force`, a different or damaged config.json is replaced, and a finished run is redone: what
    described the run before is kept in history/ first (`keep_history`). Returns that history
    directory, or None when nothing was kept.
    """
    replaced = False
    try:
        check_config(run_dir, config)
    except ValueError:  # another config, or a damaged config.json (DamagedFileError)
        if not force:
            raise
        replaced = True
    if not is_writer():
        return None
    kept = keep_history(run_dir) if force and (replaced or exists(run_dir, RESULTS)) else None
    if replaced or not exists(run_dir, CONFIG):
        storage.makedirs(run_dir)
        write_json(run_dir, CONFIG, config_to_dict(config))
    return kept


def keep_history(run_dir: str) -> str | None:
    """Keeps what describes the run as it is in history/<UTC time>/: a copy of config.json, and
    results.json, eval.json, fewshot.json and transfer.json moved there (the run they describe is being redone).
    Returns that directory; None when the run has none of these files."""
    present = [name for name in (CONFIG, RESULTS, EVAL, FEWSHOT, TRANSFER) if exists(run_dir, name)]
    if not present:
        return None
    target = _new_history_dir(run_dir)
    for name in present:  # config.json first: it must stay in place until the new one replaces it
        move = storage.copy_file if name == CONFIG else storage.move
        move(file_path(run_dir, name), storage.join(target, name))
    return target


def _new_history_dir(run_dir: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for attempt in itertools.count():
        target = storage.join(file_path(run_dir, HISTORY), stamp + (f"-{attempt}" if attempt else ""))
        if storage.is_remote(target):  # no directories to make there: a new name is enough
            if not storage.exists(target):
                return target
            continue
        try:
            os.makedirs(target)
            return target
        except FileExistsError:  # a second --force within the same second
            continue


def read_metrics(run_dir: str) -> list[dict]:
    """The rows of metrics.jsonl, oldest first; a line cut short by a kill is skipped."""
    path = file_path(run_dir, METRICS)
    if not storage.exists(path):
        return []
    rows = []
    for line in storage.read_text(path).splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def keep_metrics(run_dir: str, keep: Callable[[dict], bool]) -> int:
    """Rewrites metrics.jsonl with only the rows `keep` accepts, whole or not at all, on process 0;
    returns how many rows were dropped. A line cut short by a kill goes too, so the next row appended
    starts a line of its own."""
    path = file_path(run_dir, METRICS)
    if not is_writer() or not storage.exists(path):
        return 0
    rows = read_metrics(run_dir)
    kept = [row for row in rows if keep(row)]
    text = "".join(json.dumps(row) + "\n" for row in kept)
    unchanged = storage.read_text(path) == text
    if not unchanged:
        replace_file(path, text)
    return len(rows) - len(kept)


class MetricsLog:
    """Appends one JSON object per line to metrics.jsonl and mirrors scalars to TensorBoard.

    A resumed run first drops the rows it will write again (`keep_metrics`, called by the trainer),
    so metrics.jsonl holds each step once. TensorBoard's events files are not rewritten: each attempt
    writes its own, and the steps an interrupted attempt logged after its last checkpoint appear
    there twice (TensorBoard plots both); metrics.jsonl is the record.

    In a bucket, where an object cannot be appended to, the log keeps the file's text and uploads it
    whole at each write (each upload whole or not at all); TensorBoard's events go through
    TensorFlow's own GCS client, or are skipped with a printed reason where that cannot reach the
    bucket (`tensorboard_unreachable`).
    """

    def __init__(self, run_dir: str):
        self._path = file_path(run_dir, METRICS)
        self._text = None  # in a bucket: the whole of metrics.jsonl, uploaded at each write
        self._events = None  # TensorFlow's summary writer, on the writing process when it can reach run_dir
        self._scalar = None  # tf.summary.scalar, held so that writing needs no import
        if not is_writer():
            return
        if storage.is_remote(run_dir):
            self._text = storage.read_text(self._path) if storage.exists(self._path) else ""
        skipped = tensorboard_unreachable(run_dir)
        if skipped:
            print(f"WARNING: TensorBoard events are not written: {skipped}; metrics.jsonl has every value",
                  flush=True)
        else:
            import tensorflow as tf  # here: the run-directory layer needs no TensorFlow until a run logs
            self._events = tf.summary.create_file_writer(run_dir)
            self._scalar = tf.summary.scalar

    def write(self, step: int, scalars: dict) -> None:
        if not is_writer():
            return
        scalars = {k: float(v) for k, v in scalars.items()}
        if self._events is not None:
            with self._events.as_default(step=step):
                for name, value in scalars.items():
                    self._scalar(name, value)
        line = json.dumps({"step": step, **scalars}) + "\n"
        if self._text is None:
            with open(self._path, "a") as f:
                f.write(line)
        else:
            self._text += line
            storage.write_text(self._path, self._text)

    def close(self) -> None:
        if self._events is not None:
            self._events.close()  # flushes


def tensorboard_unreachable(run_dir: str) -> str | None:
    """Why TensorFlow's summary writer cannot write into `run_dir`, or None when it can.

    TensorFlow writes gs:// paths with its own GCS client, whose endpoints are built in
    (storage.googleapis.com): unlike orbax's tensorstore and etils' gcsfs, it does not read
    STORAGE_EMULATOR_HOST, so with that set (a GCS emulator, as in the tests and docs/scaling.md)
    it would write to real GCS or hang without network.
    """
    if storage.is_remote(run_dir) and os.environ.get("STORAGE_EMULATOR_HOST"):
        return ("STORAGE_EMULATOR_HOST is set, and TensorFlow's GCS client (which writes TensorBoard's "
                "gs:// events) has no emulator endpoint setting")
    return None


# --- One trainer per run --------------------------------------------------------------------------

class WorkdirInUse(RuntimeError):
    """Another trainer holds the run directory's lock; the message names the directory and the holder."""


class Lock:
    """The lock `lock` took on a run directory; held until `release` or the end of the process."""

    def __init__(self, path: str, fd: int | None, *, advisory: bool = False):
        self.path = path
        self._fd = fd  # None: the filesystem cannot lock, and the run goes on unlocked (`lock` warned)
        self._advisory = advisory  # in a bucket: train.lock only names this trainer (`_advisory_lock`)

    def release(self) -> None:
        if self._advisory:
            self._advisory = False
            if storage.exists(self.path):
                storage.remove(self.path)
        if self._fd is None:
            return
        os.ftruncate(self._fd, 0)  # the holder's name goes with the lock
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.release()


def lock(run_dir: str) -> Lock:
    """Locks `run_dir` (creating it) for this process, or raises WorkdirInUse naming the holder.

    The lock is fcntl.flock on the run's train.lock, which then names its holder (pid, host, since
    when). The kernel drops it when the holding process ends, however it ends (SIGKILL, a crash, a
    reboot; on NFS, a dead host's locks once the server's lease on it runs out): nothing stale is
    left to clean up. The file stays; what it says counts only while it is locked. Two opens of the
    file exclude each other even within one process.

    A multi-process run locks from process 0 alone (the trainer's `_lock`), which tells the others
    whether it could. All processes of a run share one workdir: one lock file taken by each would
    exclude the run's own processes, and per-process files (train.<i>.lock) would catch a second run
    only where its process numbering overlaps the first's, whereas every run has a process 0. On NFS
    (v4, or v3 with lockd) Linux carries out flock as an NFS lock every client sees, so a second run
    is refused whichever host its process 0 is on; filesystems that keep locks on one host (gcsfuse,
    NFS mounted with -o nolock) refuse it only when its process 0 shares the first one's host, as when
    the same command is started again. Where the filesystem cannot lock at all, this warns and returns
    a Lock that holds nothing, and in a bucket (gs://) `_advisory_lock` names the trainer without locking.
    """
    if storage.is_remote(run_dir):
        return _advisory_lock(run_dir)
    os.makedirs(run_dir, exist_ok=True)
    path = file_path(run_dir, LOCK)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise WorkdirInUse(f"{os.path.abspath(run_dir)} is in use by another vitjax train ({holder}); one "
                           f"trainer works on a workdir at a time. Wait for it to finish, stop it (SIGTERM, "
                           f"e.g. `kill PID` on its host, saves a checkpoint), or pass another --workdir") from None
    except OSError as error:  # ENOLCK, EOPNOTSUPP: a filesystem without locks
        os.close(fd)
        print(f"WARNING: cannot lock {path} ({error}); nothing stops a second trainer on this workdir",
              flush=True)
        return Lock(path, None)
    holder = {"pid": os.getpid(), "host": socket.gethostname(),
              "since": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(holder).encode(), 0)
    return Lock(path, fd)


def _advisory_lock(run_dir: str) -> Lock:
    """In a bucket, train.lock names the trainer (pid, host, since when) and is deleted when it ends,
    but it excludes nobody, and this says so.

    An object store has no flock, and the kernel that drops a dead process's lock is not there to
    drop a lease: a trainer killed by SIGKILL or a preemption would leave its train.lock behind, and
    a lock that refused on it would stop every restart of a preempted run until someone deleted it.
    So nothing is refused: a train.lock left by another trainer is reported (it may still be running,
    or have been killed) and replaced. Running one trainer per workdir is the user's job here; the
    trainers of a job sharing one workdir (one per host) lock nothing either way (only process 0 calls this).
    """
    path = file_path(run_dir, LOCK)
    if storage.exists(path):
        print(f"WARNING: {path} names another trainer ({_described(storage.read_bytes(path))}): it may still be "
              f"working on this run, or have been killed; if it is running, stop one of them", flush=True)
    print(f"WARNING: {run_dir} is in an object store, which has no file locks: nothing stops a second "
          f"trainer on this workdir; {LOCK} only names this one", flush=True)
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    storage.write_text(path, json.dumps(holder))
    return Lock(path, None, advisory=True)


def _holder(fd: int) -> str:
    """The holder a locked train.lock names, in words."""
    try:
        return _described(os.pread(fd, 4096, 0))
    except OSError:
        return "its pid is not written yet"


def _described(raw: bytes) -> str:
    """A train.lock's holder in words."""
    try:
        holder = json.loads(raw)
        return f"pid {holder['pid']} on host {holder['host']}, since {holder['since']}"
    except (ValueError, KeyError, TypeError):
        return "its pid is not written yet"


def read_checkpoint_params(path: str) -> dict:
    """The evaluated network's parameters in a checkpoint (its meta's EVALUATED subtree: `params` unless
    the objective evaluates another, as DINO its teacher), as host numpy arrays whatever mesh saved it.

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
            tree = integrity.read_verified(storage.join(directory, STATE), storage.join(directory, META),
                                           f"checkpoint step {step} in {location.checkpoint_dir}")
            for key in integrity.read_meta(storage.join(directory, META)).get(EVALUATED, "params").split("/"):
                tree = tree[key]
            return tree
        except integrity.CorruptCheckpointError as error:
            if location.step is not None:
                raise
            later = f"reading step {steps[index + 1]}" if index + 1 < len(steps) else "no earlier checkpoint"
            print(f"WARNING: {error}; left in place (the trainer sets it aside when it resumes); {later}",
                  flush=True)
    raise integrity.CorruptCheckpointError(
        f"no checkpoint in {location.checkpoint_dir} verifies (steps {', '.join(map(str, steps))}); pass "
        f"another run or checkpoint")
