"""One trainer per run: train.lock in the run directory, flock'ed by the trainer working on it."""
import fcntl
import json
import os
import socket
import time

from vitjax import rundir, storage


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
    path = rundir.file_path(run_dir, rundir.LOCK)
    fd = rundir.open_run_file(path, os.O_RDWR | os.O_CREAT)
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
    path = rundir.file_path(run_dir, rundir.LOCK)
    if storage.exists(path):
        print(f"WARNING: {path} names another trainer ({_described(storage.read_bytes(path))}): it may still be "
              f"working on this run, or have been killed; if it is running, stop one of them", flush=True)
    print(f"WARNING: {run_dir} is in an object store, which has no file locks: nothing stops a second "
          f"trainer on this workdir; {rundir.LOCK} only names this one", flush=True)
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
