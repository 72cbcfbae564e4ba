"""Runs a check in a fresh Python process with N fake CPU devices.

JAX fixes its device count when it starts, and the test process has one device, on which a sharded
and a replicated array look the same. The check is Python source that prints one JSON object as its
last line; `run` returns it.
"""
import json
import os
import subprocess
import sys

from tests.paths import ROOT


def run(code: str, devices: int = 8, timeout: float = 300) -> dict:
    flags = os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={devices}"
    env = dict(os.environ, PYTHONPATH=ROOT, XLA_FLAGS=flags.strip(), JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["devices"] == devices, result
    return result
