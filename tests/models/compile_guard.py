"""A context manager that fails the test if XLA compiles anything inside it, or asks the persistent
compilation cache for a program (the test session turns that cache on: a program compiled earlier in the
session would be loaded from it without a backend compile)."""
import contextlib

import jax

CACHE_REQUEST = "/jax/compilation_cache/compile_requests_use_cache"


@contextlib.contextmanager
def no_compilation():
    compiled = []

    def listener(event, duration, **kwargs):
        if event.endswith("backend_compile_duration"):
            compiled.append(event)

    def cache_listener(event, **kwargs):
        if event == CACHE_REQUEST:
            compiled.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    jax.monitoring.register_event_listener(cache_listener)
    try:
        yield compiled
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
        jax.monitoring.unregister_event_listener(cache_listener)
    assert not compiled, "the error must come before anything is compiled"
