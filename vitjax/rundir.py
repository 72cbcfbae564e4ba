"""A run's directory (its workdir): the names of its files, and reading and writing them whole.

    config.json           the full config the run was started with (`claim`); written only when it
                          is new or changed
    metrics.jsonl, events.*   the metrics log and TensorBoard's view of it (vitjax/metrics_log.py)
    checkpoints/, checkpoint_best/, corrupt_checkpoints/   the run's checkpoints (vitjax/checkpoints/)
    results.json          final metrics; its presence marks the run as finished
    eval.json             `vitjax eval`'s re-evaluation of a checkpoint
    fewshot.json          the few-shot probe's accuracies (`vitjax eval --fewshot`)
    analysis/             `vitjax analyze`'s figures and tables, unless given --out
    train.lock            the one trainer working on the run (vitjax/train_lock.py)
    teacher.json          a distilled run's teacher model, for resuming once its files moved
                          (vitjax/objectives/teacher.py)
    history/<UTC time>/   what `vitjax train --force` replaced: the previous config.json, and the
                          results.json, eval.json and fewshot.json that described the previous run
                          (`keep_history`); never deleted
    train.log, fewshot.log, sweep.lock, failed.json   a sweep's logs, lock and failure (vitjax/sweep)

The JSON files are written whole or not at all (`write_json`, `replace_file`: a temporary file
beside the file, flushed and fsynced, renamed over it), so a full disk or a crash leaves the previous
version or the new one, and a damaged one is reported with its fix (`read_json`).

Every file of a run is read and written through vitjax/storage.py, so a run directory may be local
or in a bucket (--workdir gs://bucket/run): there JSON files are single uploads, whole or not at all
without a temporary file, and history moves copy and then delete.

This module sits low in the package graph (it imports vitjax/storage.py and vitjax/config_compare.py),
so train, evaluate, analysis and sweep can all read runs through it.
"""
import errno
import itertools
import json
import os
import secrets
import time

import jax
import ml_collections

from vitjax import storage
from vitjax.config_compare import config_changes, config_to_dict

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
ANALYSIS = "analysis"
TRAIN_LOG, FEWSHOT_LOG, TRANSFER_LOG = "train.log", "fewshot.log", "transfer.log"
# Each few-shot probe of a run (vitjax/evaluate/fewshot.py): its result file and its log in a sweep.
PROBE_FILES = {"fewshot": (FEWSHOT, FEWSHOT_LOG), "transfer": (TRANSFER, TRANSFER_LOG)}
LOCK = "train.lock"
HISTORY = "history"
SWEEP_LOCK = "sweep.lock"  # flock'ed while a sweep works on the run (vitjax/sweep/runlock.py)
FAILED = "failed.json"  # the error and traceback of the sweep stage that failed


# --- Paths ----------------------------------------------------------------------------------------

def file_path(run_dir: str, name: str) -> str:
    """The path of the file or directory `name` (one of this module's constants) in a run."""
    return storage.join(run_dir, name)


def exists(run_dir: str, name: str) -> bool:
    return storage.exists(file_path(run_dir, name))


# --- The run's files ------------------------------------------------------------------------------

def is_writer() -> bool:
    """Only process 0 writes logs and summary files; every process takes part in checkpointing."""
    return jax.process_index() == 0

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
    """The JSON object in the file `name` of a run (or of a sweep's directory, which holds runs), or None
    if absent.

    Raises DamagedFileError naming the file and how to get it back when it is empty, not JSON, or JSON
    that is not an object (`[]`, `null`).
    """
    path = file_path(run_dir, name)
    if not storage.exists(path):
        return None
    raw = storage.read_bytes(path)
    try:
        found = json.loads(raw)
    except ValueError as error:  # JSONDecodeError, and UnicodeDecodeError for bytes that are no text
        what = "it is empty" if not raw.strip() else f"it is not JSON ({error})"
        what += ", probably cut short by a full disk or a crash while it was written"
    else:
        if isinstance(found, dict):
            return found
        what = f"it holds {json.dumps(found)[:40]}, JSON but not an object"
    raise DamagedFileError(f"{path} is damaged: {what}. Fix: {_REPAIRS.get(name, 'delete it or restore a copy')}")


def open_run_file(path: str, flags: int) -> int:
    """os.open of a run's file (a lock, a log appended to) that never follows a symbolic link: opened
    through one, a lock's truncation or a log's append would change whatever file the link names.
    Raises OSError (ELOOP) naming the path and the fix."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW, 0o644)
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        raise OSError(errno.ELOOP, "a symbolic link, which vitjax never writes through (it would change the file "
                                   "it points to); remove the link", path) from None


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

