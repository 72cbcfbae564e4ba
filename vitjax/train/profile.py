"""A profiler window during training: `--config.profile_steps=START:STOP` traces steps START+1 .. STOP.

    vitjax train --config ... --workdir W --config.profile_steps=100:105
    tensorboard --logdir W/profile        # the Profile tab (tensorboard-plugin-profile), or XProf

`jax.profiler.start_trace` begins before step START+1 is dispatched and `stop_trace` ends once step
STOP has finished on the devices, so the trace holds whole steps after compilation and warm-up (the
first steps of a run are slower and not what one wants to see). Each process traces its own host
into WORKDIR/profile (on a pod, one file per host). A run resumed past START traces nothing: the
window is for a fresh stretch of steps, not a guess. Off by default ('').
"""
import jax

from vitjax import storage

DIRECTORY = "profile"


def parse(text: str) -> tuple[int, int] | None:
    """'START:STOP' -> (START, STOP); '' -> None. ValueError naming the fix for anything else."""
    text = (text or "").strip()
    if not text:
        return None
    start, colon, stop = text.partition(":")
    try:
        window = (int(start), int(stop)) if colon else None
    except ValueError:
        window = None
    if window is None or not 0 <= window[0] < window[1]:
        raise ValueError(f"profile_steps={text!r}: use 'START:STOP' with 0 <= START < STOP (steps START+1 to STOP "
                         f"are traced), e.g. '100:105', or '' for no profile")
    return window


def check(text: str, total_steps: int) -> None:
    """ValueError when the window of `text` ends after the run's last step."""
    window = parse(text)
    if window is not None and window[1] > total_steps:
        raise ValueError(f"profile_steps={text!r} ends after the run's last step {total_steps}; choose a window "
                         f"inside 0:{total_steps}")


class Window:
    """Starts and stops the trace around the loop's steps; `close` stops a trace still running."""

    def __init__(self, text: str, workdir: str, first_step: int):
        window = parse(text)
        self.window = window if window is not None and first_step <= window[0] else None
        self.directory = storage.join(workdir, DIRECTORY)
        self.tracing = False

    def before(self, step: int) -> None:
        """Called before step index `step` (0-based) is dispatched."""
        if self.window is not None and step == self.window[0]:
            jax.profiler.start_trace(self.directory)
            self.tracing = True

    def after(self, done: int, state) -> None:
        """Called after step `done` (1-based) was dispatched; waits for it before stopping the trace."""
        if self.tracing and done == self.window[1]:
            jax.block_until_ready(state)
            self.close()
            if jax.process_index() == 0:
                print(f"profiled steps {self.window[0] + 1}-{done} into {self.directory}", flush=True)

    def close(self) -> None:
        if self.tracing:
            jax.profiler.stop_trace()
            self.tracing = False
