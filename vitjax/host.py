"""Which processor a measurement ran on, recorded beside every wall time and img/s figure.

Sessions of this project land on hosts whose CPUs differ (the same ViT configuration trained at ~1,700
img/s on one 2-vCPU host and ~500 on another), so a time is only comparable with times of the same
`cpu` string: run results.json files and `vitjax bench` JSON carry it.
"""
import os
import platform


def cpu() -> str:
    """'AMD EPYC (family 25, model 17, avx512f)': the model name, the CPU generation and whether AVX-512
    is there (XLA:CPU's kernels differ with it); platform.processor() where /proc/cpuinfo is missing."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
                if not line.strip():
                    break  # the first processor's block describes them all
    except OSError:
        return platform.processor() or platform.machine()
    details = [f"family {fields[k]}" if k == "cpu family" else f"model {fields[k]}"
               for k in ("cpu family", "model") if k in fields]
    if "avx512f" in fields.get("flags", "").split():
        details.append("avx512f")
    name = fields.get("model name") or platform.processor() or platform.machine()
    return f"{name} ({', '.join(details)})" if details else name


def describe() -> dict:
    """The host as a run's results record it."""
    return {"cpu": cpu(), "cpu_count": os.cpu_count()}
