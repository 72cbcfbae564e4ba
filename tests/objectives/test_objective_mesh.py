"""The label-free objectives under the FSDP mesh: on 8 fake CPU devices (data 2 x fsdp 4, parameters, the
DINO teacher and optimiser state split) the tiny runs' losses, and DINO's centre, equal those on one device.
MAE's per-example masks come from the step's key, so the 8-device run must draw the same ones."""
import json
import subprocess
import sys

import numpy as np
import pytest

from tests.paths import ROOT


def _run(model, devices, sharding):
    command = [sys.executable, "-m", "tests.objectives.objective_mesh_worker", model, str(devices), sharding]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("model", ["mae", "dino"])
def test_fsdp_on_eight_devices_matches_one_device(model):
    one, eight = _run(model, 1, "data"), _run(model, 8, "fsdp")
    assert len(one["losses"]) == 3 and len(set(one["losses"])) == 3  # three distinct steps, all compared
    np.testing.assert_allclose(eight["losses"], one["losses"], rtol=2e-5, atol=1e-6)
    if model == "dino":
        np.testing.assert_allclose(eight["centre"], one["centre"], rtol=2e-4, atol=1e-6)
    else:
        assert one["centre"] is None
