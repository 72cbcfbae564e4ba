"""XLA flags under which the test session compiles: its one source.

XLA's CPU backend at optimisation level 0, without LLVM's expensive passes, compiles a tiny program in
about half the CPU time (tests/models/test_kernels.py, test_step.py and test_mae_objective.py: 239 ->
127 s of CPU, measured 2026-12-02 on 2 idle cores). The tests compile hundreds of small programs and run
each for a few steps, so compilation is most of their time. Every comparison in the session is made
under the same flags: tests/conftest.py sets them for the test process, whose subprocesses inherit them,
and the multi-device tests pass them to theirs explicitly.
"""
FLAGS = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def with_fast_compile(xla_flags: str) -> str:
    """`xla_flags` with FLAGS in front, unless it chooses an optimisation level itself."""
    if "--xla_backend_optimization_level" in xla_flags:
        return xla_flags
    return f"{FLAGS} {xla_flags}".strip()
