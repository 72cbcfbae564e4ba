"""A checkpoint failure reported once, by vitjax, not again by the checkpoint library's threads.

Two failures make orbax and tensorstore print dozens of tracebacks after the one clear error vitjax
gives (vitjax/checkpoints/checkpointer.py):
- an unreadable step: orbax's restore raises and closes its event loop while tensorstore still finishes
  the step's other reads; each then calls back into the closed loop, and Python prints that
  RuntimeError as an unraisable exception, once per pending read;
- a full disk: each of orbax's save threads logs the write's failure with its traceback, at ERROR,
  before the save is awaited and vitjax raises its own error naming the directory and the fix; a
  write's future nobody awaited is logged by asyncio at exit.
`quiet()` drops exactly those, process-wide: a choice for the whole process, so the CLI makes it, once.
Imports nothing heavy, so the CLI can call it before any command loads JAX.
"""
import logging
import sys

CLOSED_LOOP = "Event loop is closed"  # asyncio's words for a callback scheduled on a loop already closed
FULL_DISK = "No space left on device"  # strerror(ENOSPC), which tensorstore's write errors quote


def is_full_disk(error: BaseException | None) -> bool:
    """Whether an error (or the one it was raised from) is a write that found the disk full: an
    OSError(ENOSPC), or tensorstore's ValueError quoting it."""
    while error is not None:
        if FULL_DISK in str(error) or getattr(error, "strerror", None) == FULL_DISK:
            return True
        error = error.__cause__ or error.__context__
    return False


def quiet() -> None:
    """Installs the filters: in front of the current sys.unraisablehook (every other unraisable
    exception goes on to it), and on the loggers of absl (which orbax writes to) and asyncio. Calling
    it again changes nothing."""
    previous = sys.unraisablehook
    if getattr(previous, "drops_closed_loop_callbacks", False):
        return

    def hook(unraisable):
        if not (isinstance(unraisable.exc_value, RuntimeError) and str(unraisable.exc_value) == CLOSED_LOOP):
            previous(unraisable)
    hook.drops_closed_loop_callbacks = True
    sys.unraisablehook = hook
    for logger in ("absl", "asyncio"):
        logging.getLogger(logger).addFilter(_not_a_full_disk)


def _not_a_full_disk(record: logging.LogRecord) -> bool:
    """False for a save thread's report of a full disk (in its message or its traceback's error)."""
    if record.levelno < logging.ERROR:
        return True
    failure = record.exc_info[1] if record.exc_info else None
    return not (FULL_DISK in record.getMessage() or is_full_disk(failure))
