"""A context manager that fails the test if XLA compiles anything inside it."""
import contextlib

import jax


@contextlib.contextmanager
def no_compilation():
    compiled = []

    def listener(event, duration, **kwargs):
        if event.endswith("backend_compile_duration"):
            compiled.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield compiled
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert not compiled, "the error must come before anything is compiled"
