"""Which processor and which code a run or a measurement ran on, recorded beside its numbers.

Sessions of this project land on hosts whose CPUs differ (the same ViT configuration trained at ~1,700
img/s on one 2-vCPU host and ~500 on another), and the same config and seed end up to 0.6 points of
test accuracy apart on two of them (XLA:CPU compiles for the host's instruction set, so reductions
round differently; one host repeats itself bit for bit). A time is only comparable with times of the
same `cpu` string, and two runs are only paired where `cpu`, the device split and `code` match: run
results.json files and `vitjax bench` JSON carry all three.
"""
import functools
import hashlib
import importlib.metadata
import os
import pathlib
import platform
import subprocess

# Instruction-set extensions that change which code XLA:CPU and its kernel libraries run.
_ISA_FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx512_fp16", "amx_bf16", "amx_tile")
_PACKAGE = pathlib.Path(__file__).resolve().parent
# The libraries whose versions can change a run's numbers: XLA and its kernels (jaxlib), the programs traced
# (jax, flax, optax), the input pipeline's ops (tensorflow, under either distribution name) and numpy.
_LIBRARIES = {"jax": ("jax",), "jaxlib": ("jaxlib",), "flax": ("flax",), "optax": ("optax",), "numpy": ("numpy",),
              "tensorflow": ("tensorflow", "tensorflow-cpu")}


def _cpuinfo() -> dict:
    """The first processor's block of /proc/cpuinfo (it describes them all); {} where it is missing."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
                if not line.strip():
                    break
    except OSError:
        pass
    return fields


def cpu() -> str:
    """'AMD EPYC (family 25, model 17, avx512f)': the model name, the CPU generation and whether AVX-512
    is there (XLA:CPU's kernels differ with it); platform.processor() where /proc/cpuinfo is missing."""
    fields = _cpuinfo()
    if not fields:
        return platform.processor() or platform.machine()
    details = [f"family {fields[k]}" if k == "cpu family" else f"model {fields[k]}"
               for k in ("cpu family", "model") if k in fields]
    if "avx512f" in fields.get("flags", "").split():
        details.append("avx512f")
    name = fields.get("model name") or platform.processor() or platform.machine()
    return f"{name} ({', '.join(details)})" if details else name


def isa() -> list[str]:
    """The instruction-set extensions of _ISA_FLAGS this CPU has, in that order."""
    flags = set(_cpuinfo().get("flags", "").split())
    return [flag for flag in _ISA_FLAGS if flag in flags]


@functools.cache
def code() -> dict:
    """The code that ran: {'commit', 'dirty', 'source_sha256', 'libraries'}. `commit` and `dirty` (tracked
    files changed since it) come from git when the package lies in a checkout, else None; `source_sha256`
    digests every .py file of the package, so two runs of identical vitjax code match whatever was
    committed in between (experiments, READMEs); `libraries` the installed versions of _LIBRARIES."""
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        digest.update(str(path.relative_to(_PACKAGE)).encode() + b"\0" + path.read_bytes() + b"\0")
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": None if status is None else bool(status), "source_sha256": digest.hexdigest(),
            "libraries": libraries()}


def libraries() -> dict:
    """{library: installed version, or None where it is not installed} for _LIBRARIES."""
    found = {}
    for name, distributions in _LIBRARIES.items():
        found[name] = None
        for distribution in distributions:
            try:
                found[name] = importlib.metadata.version(distribution)
                break
            except importlib.metadata.PackageNotFoundError:
                continue
    return found


def _git(*args) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(_PACKAGE), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def describe() -> dict:
    """The host as a run's results record it: processor, its instruction sets, cores, XLA_FLAGS."""
    return {"cpu": cpu(), "isa": isa(), "cpu_count": os.cpu_count(), "xla_flags": os.environ.get("XLA_FLAGS", "")}
