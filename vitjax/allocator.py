"""Runs the `vitjax` command under tcmalloc where the system has it: about 1.7x faster CPU training.

XLA:CPU allocates each step's temporary buffers afresh. glibc's malloc serves blocks that large with
mmap() and hands them back with munmap() on free, so every step page-faults its whole working set in
again: for the default Fashion-MNIST ViT (batch 128) 70,000 faults and 0.15 s of kernel time per step,
a third of its CPU time. tcmalloc keeps freed memory for reuse: 35 faults per step, and the train step
ran at 877 img/s against 419-555 under glibc in back-to-back runs on the project's 2-core machines
(jemalloc with its default decay, and glibc's mmap_max/trim_threshold tunables, did not help; the
figures and the command are in experiments/results/bench/README.md).

The allocator must be in place before the process starts, so the command re-executes itself once
with LD_PRELOAD naming tcmalloc (Debian/Ubuntu package libtcmalloc-minimal4, which `make` installs).
It does nothing when VITJAX_TCMALLOC=0, when LD_PRELOAD is already set (your choice wins), when no
tcmalloc library is found, or off Linux.
"""
import glob
import os
import sys

_LIBRARY_PATTERNS = ("/usr/lib/*-linux-gnu/libtcmalloc_minimal.so.4", "/usr/lib64/libtcmalloc_minimal.so.4",
                     "/usr/lib/libtcmalloc_minimal.so.4")
_MARK = "VITJAX_TCMALLOC_ACTIVE"  # set in the re-executed process, so it never re-executes again


def find_tcmalloc() -> str | None:
    for pattern in _LIBRARY_PATTERNS:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    return None


def preload_env(environ: dict, library: str | None) -> dict | None:
    """The environment to re-execute with, or None when the process should run as it is."""
    if (not sys.platform.startswith("linux") or library is None or environ.get("VITJAX_TCMALLOC", "1") == "0"
            or environ.get("LD_PRELOAD") or environ.get(_MARK)):
        return None
    # tcmalloc reports every allocation above 1 GiB on stderr by default; large models make many.
    return {**environ, "LD_PRELOAD": library, _MARK: "1",
            "TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD": environ.get("TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD",
                                                                 str(1 << 40))}


def reexec_under_tcmalloc() -> None:
    """Replaces this process by the same command under tcmalloc when that applies; returns otherwise."""
    env = preload_env(dict(os.environ), find_tcmalloc())
    if env is None:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
