"""A run's metrics: metrics.jsonl (one JSON object per logged step or evaluation, each once) and
TensorBoard's events beside it. metrics.jsonl is the record; the events are a view of it.
"""
import json
import os
from typing import Callable

from vitjax import rundir, storage


def read_metrics(run_dir: str) -> list[dict]:
    """The rows of metrics.jsonl, oldest first; a line cut short by a kill, or one that holds no JSON
    object (an edit), is skipped."""
    path = rundir.file_path(run_dir, rundir.METRICS)
    if not storage.exists(path):
        return []
    rows = []
    for line in storage.read_text(path).splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def keep_metrics(run_dir: str, keep: Callable[[dict], bool]) -> int:
    """Rewrites metrics.jsonl with only the rows `keep` accepts, whole or not at all, on process 0;
    returns how many rows were dropped. A line cut short by a kill goes too, so the next row appended
    starts a line of its own."""
    path = rundir.file_path(run_dir, rundir.METRICS)
    if not rundir.is_writer() or not storage.exists(path):
        return 0
    rows = read_metrics(run_dir)
    kept = [row for row in rows if keep(row)]
    text = "".join(json.dumps(row) + "\n" for row in kept)
    unchanged = storage.read_text(path) == text
    if not unchanged:
        rundir.replace_file(path, text)
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
        self._path = rundir.file_path(run_dir, rundir.METRICS)
        self._text = None  # in a bucket: the whole of metrics.jsonl, uploaded at each write
        self._events = None  # TensorFlow's summary writer, on the writing process when it can reach run_dir
        self._scalar = None  # tf.summary.scalar, held so that writing needs no import
        if not rundir.is_writer():
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
        if not rundir.is_writer():
            return
        scalars = {k: float(v) for k, v in scalars.items()}
        if self._events is not None:
            with self._events.as_default(step=step):
                for name, value in scalars.items():
                    self._scalar(name, value)
        line = json.dumps({"step": step, **scalars}) + "\n"
        if self._text is None:
            with os.fdopen(rundir.open_run_file(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a") as f:
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

