"""A run's sweep lock: an OS lock (flock) on DIR/<name>/sweep.lock while a sweep works on the run.

The kernel drops the lock when the last process holding its file closes it or dies, so a killed
sweep, a reboot, a reused pid or a new container hostname can never leave a run locked for good
(the pid files this replaces could). The sweep passes the lock's descriptor to the run's trainer and
few-shot subprocesses too, so the lock outlives a sweep that is killed while its child still trains:
another sweep leaves that run alone until the child has exited.

The file's text names the holder (pid, host, command) for messages only; whether a run is locked is
always asked of the kernel. The trainer's own workdir lock (vitjax/train_lock.py) is another file.
"""
import fcntl
import json
import os
import time

from vitjax import rundir

# A reader's probe (`is_held`) holds a shared lock for microseconds; an acquire that meets one tries
# again for this long before it concludes that another sweep holds the run.
_ACQUIRE_PATIENCE_SECONDS = 1.0


def acquire(run_dir: str) -> int | None:
    """Takes the run's lock; returns its file descriptor (keep it open while working on the run, then
    `release` it), or None when another process holds it. Creates the run directory."""
    os.makedirs(run_dir, exist_ok=True)
    fd = rundir.open_run_file(rundir.file_path(run_dir, rundir.SWEEP_LOCK), os.O_RDWR | os.O_CREAT)
    deadline = time.monotonic() + _ACQUIRE_PATIENCE_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.ftruncate(fd, 0)  # a former holder's description no longer applies
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.02)


def describe(fd: int, **holder) -> None:
    """Writes who holds the lock (pid, host, command, ...) into its file, for other sweeps' messages."""
    text = json.dumps({**holder, "since": time.strftime("%Y-%m-%d %H:%M:%S")}).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, text, 0)


def release(fd: int) -> None:
    """Drops the lock (unless a subprocess that inherited it still runs) and closes the descriptor."""
    os.close(fd)


def is_held(run_dir: str) -> bool:
    """Whether a process holds the run's lock now: a non-blocking shared flock, released at once."""
    try:
        fd = os.open(rundir.file_path(run_dir, rundir.SWEEP_LOCK), os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the shared lock if it was taken


def holder(run_dir: str) -> dict:
    """What the holder wrote about itself ({} when the file is missing, empty or being rewritten)."""
    try:
        with open(rundir.file_path(run_dir, rundir.SWEEP_LOCK)) as f:
            return json.loads(f.read() or "{}")
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
