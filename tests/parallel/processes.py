"""What the multi-process and fake-device tests of tests/parallel share: the tiny config they train, the
environment of a child process (fast compilation, N fake CPU devices), a free port for the coordinator,
and the relative difference their losses are compared by."""
import os
import socket

import numpy as np

from tests import fast_compile
from tests.paths import ROOT

CONFIG = os.path.join(ROOT, "tests", "parallel", "tiny_config.py")


def env(devices=None):
    flags = fast_compile.FLAGS + (f" --xla_force_host_platform_device_count={devices}" if devices else "")
    return dict(os.environ, PYTHONPATH=ROOT, XLA_FLAGS=flags, TF_CPP_MIN_LOG_LEVEL="2")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def max_rel_diff(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    return float(np.max(np.abs(a - b) / np.abs(b)))
