"""A failed checkpoint read reported once, not with dozens of tracebacks after it.

When one array of a step cannot be read, orbax's restore raises and closes its event loop while
tensorstore still finishes the step's other reads; each of those then calls back into the closed loop,
and Python prints that RuntimeError as an unraisable exception, once per pending read, after the
CorruptCheckpointError that already named the step (vitjax/checkpoints/integrity.py). `quiet()` drops
exactly that error, process-wide: a choice for the whole process, so the CLI makes it, once. Imports
nothing heavy, so the CLI can call it before any command loads JAX.
"""
import sys

CLOSED_LOOP = "Event loop is closed"  # asyncio's words for a callback scheduled on a loop already closed


def quiet() -> None:
    """Installs the filter in front of the current sys.unraisablehook; every other unraisable exception
    goes on to that hook. Calling it again changes nothing."""
    previous = sys.unraisablehook
    if getattr(previous, "drops_closed_loop_callbacks", False):
        return

    def hook(unraisable):
        if not (isinstance(unraisable.exc_value, RuntimeError) and str(unraisable.exc_value) == CLOSED_LOOP):
            previous(unraisable)
    hook.drops_closed_loop_callbacks = True
    sys.unraisablehook = hook
