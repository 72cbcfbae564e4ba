"""DINO under the FSDP mesh: on 8 fake CPU devices (data 2 x fsdp 4, parameters, teacher and optimiser
state split) the tiny run's losses and centre equal those on one device."""
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(devices, sharding):
    out = subprocess.run([sys.executable, "-m", "tests.objectives.dino_mesh_worker", str(devices), sharding],
                         cwd=ROOT, capture_output=True, text=True, timeout=900, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_fsdp_on_eight_devices_matches_one_device():
    one, eight = _run(1, "data"), _run(8, "fsdp")
    assert len(one["losses"]) == 3
    np.testing.assert_allclose(eight["losses"], one["losses"], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(eight["centre"], one["centre"], rtol=2e-4, atol=1e-6)
