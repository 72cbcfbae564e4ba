"""A multi-slice mesh (config.mesh.dcn_data) on CPU: 2 processes x 4 devices, each process standing
for a TPU slice, train as one process on one device does.

    nice -n 19 python -m pytest tests/parallel/test_multislice.py -x -q

`vitjax train` runs three times at once on localhost: twice with jax.distributed, `dcn_data=2` and
`data=4` (an 8-way data axis whose outer half crosses the "DCN" between the processes), and once
on a single device as the reference; then `vitjax eval` on the 2 processes. The losses of the 6 steps, written by process 0 to
metrics.jsonl, must agree to 1e-5: the hybrid layout from mesh_utils.create_hybrid_device_mesh
must put each process's share of the batch on its own devices, or the losses would differ.
"""
import json
import subprocess
import sys

import pytest

from vitjax import parallel
from tests.parallel.processes import CONFIG, env, free_port, max_rel_diff
from tests.paths import ROOT

STEPS = 6
TIMEOUT = 600


def _command(workdir, *extra):
    return [sys.executable, "-m", "vitjax", "train", "--config", f"{CONFIG}:steps={STEPS}",
            "--workdir", str(workdir), *extra]


def _losses(workdir):
    rows = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    return [row["loss"] for row in rows if "loss" in row]


def _wait(procs, logs):
    """Waits for every process; asserts they all exited 0, showing the logs of those that did not."""
    try:
        codes = [proc.wait(timeout=TIMEOUT) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    outputs = [log.read_text() for log in logs]
    failed = [f"{log.name} exit {code}:\n{out[-3000:]}" for log, code, out in zip(logs, codes, outputs) if code]
    assert not failed, "\n".join(failed)
    return outputs


def test_two_slices_of_four_devices_train_like_one_device(tmp_path):
    address = f"localhost:{free_port()}"
    runs = [(_command(tmp_path / "one", "--config.mesh.data=1"), env(devices=1))]
    runs += [(_command(tmp_path / "slices", "--config.mesh.dcn_data=2", "--config.mesh.data=4",
                       "--coordinator_address", address, "--num_processes", "2", "--process_id", str(i)),
              env(devices=4)) for i in range(2)]
    logs = [tmp_path / name for name in ("one.log", "slice0.log", "slice1.log")]
    procs = []
    for (args, environ), log in zip(runs, logs):
        with open(log, "w") as f:
            procs.append(subprocess.Popen(args, cwd=ROOT, env=environ, stdout=f, stderr=subprocess.STDOUT))
    outputs = _wait(procs, logs)
    assert "mesh data=8 fsdp=1 model=1" in outputs[1], outputs[1][-2000:]
    assert "no topology-aware layout" not in outputs[1]  # create_hybrid_device_mesh's own layout
    for line in ("compiled the train step", "step 6/6 | loss", "finished:"):  # process 0 alone says them
        assert line in outputs[1] and line not in outputs[2], line
    reference, sliced = _losses(tmp_path / "one"), _losses(tmp_path / "slices")
    assert len(reference) == STEPS and len(sliced) == STEPS, (reference, sliced)
    assert max_rel_diff(sliced, reference) <= 1e-5, (sliced, reference)


    # `vitjax eval` takes train's multi-process flags: both processes restore the 2-slice checkpoint
    # together, and process 0 alone prints the result line (and writes eval.json).
    address = f"localhost:{free_port()}"
    logs = [tmp_path / f"eval{i}.log" for i in range(2)]
    procs = []
    for i, log in enumerate(logs):
        with open(log, "w") as f:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "vitjax", "eval", "--workdir", str(tmp_path / "slices"), "--coordinator_address",
                 address, "--num_processes", "2", "--process_id", str(i)],
                cwd=ROOT, env=env(devices=4), stdout=f, stderr=subprocess.STDOUT))
    outputs = _wait(procs, logs)
    assert f"step={STEPS} test_accuracy=" in outputs[0] and "test_accuracy=" not in outputs[1], outputs
    assert json.loads((tmp_path / "slices" / "eval.json").read_text())["step"] == STEPS


@pytest.mark.parametrize("sizes, phrase", [
    ({"data": -1, "dcn_data": 2}, "dcn_data=2 must equal the number of slices, and the devices are in 1 "
                                  "process(es), each standing for a slice; set config.mesh.dcn_data=1"),
    ({"data": 1, "dcn_data": 0}, "dcn_data must be a positive number of slices"),
])
def test_a_dcn_size_that_is_not_the_slice_count_names_the_fix(sizes, phrase):
    with pytest.raises(ValueError) as error:
        parallel.make_mesh(sizes)  # this process has one device, in one process: one "slice"
    assert phrase in str(error.value)
