"""A checkpoint only one process of a multi-process run can read is corrupt for all of them.

Two `vitjax train` processes on localhost (jax.distributed) with the parameters split between them
(FSDP over 2 devices, one each), so that each process reads its own shards. Removing process 1's
array files of the newest step makes the read fail there and succeed on process 0: the processes
must agree that the step is corrupt, process 0 alone must move it aside, and both must resume from
the same earlier step. Two multi-process runs, about 80 s on 2 CPU cores.
"""
import os
import pathlib
import subprocess
import sys


from vitjax import rundir
from vitjax.checkpoints import locations
from tests.parallel.processes import CONFIG, env, free_port
from tests.paths import ROOT

TIMEOUT = 600


def _train(workdir, log_dir, name):
    address = f"localhost:{free_port()}"
    logs = [open(log_dir / f"{name}{i}.log", "w") for i in range(2)]
    procs = [subprocess.Popen(
        [sys.executable, "-m", "vitjax", "train", "--config", f"{CONFIG}:steps=6", "--workdir", str(workdir),
         "--config.checkpoint_every_steps=3", "--config.mesh.data=1", "--config.mesh.fsdp=-1",
         "--config.sharding=fsdp", "--coordinator_address", address, "--num_processes", "2",
         "--process_id", str(i)], cwd=ROOT, env=env(devices=1), stdout=logs[i], stderr=subprocess.STDOUT)
        for i in range(2)]
    try:
        codes = [p.wait(timeout=TIMEOUT) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        for f in logs:
            f.close()
    outputs = [(log_dir / f"{name}{i}.log").read_text() for i in range(2)]
    assert codes == [0, 0], "\n".join(f"process {i} exit {c}:\n{o[-3000:]}" for i, (c, o) in
                                      enumerate(zip(codes, outputs)))
    return outputs


def test_a_step_one_process_cannot_read_is_set_aside_once_and_all_resume_together(tmp_path):
    workdir = tmp_path / "run"
    _train(workdir, tmp_path, "first")
    checkpoints = locations.checkpoint_dir(workdir)
    assert locations.checkpoint_steps(checkpoints) == [3, 6]
    os.remove(rundir.file_path(workdir, rundir.RESULTS))
    state = pathlib.Path(locations.step_dir(checkpoints, 6)) / locations.STATE
    process_1_data = [p for p in (state / "ocdbt.process_1").rglob("*") if p.is_file() and p.parent.name == "d"]
    assert process_1_data, sorted(str(p.relative_to(state)) for p in state.rglob("*"))
    for path in process_1_data:
        path.unlink()

    outputs = _train(workdir, tmp_path, "again")
    for output in outputs:
        assert "checkpoint step 6 is corrupt" in output, output[-3000:]
        assert "resuming from step 3" in output, output[-3000:]
    assert "cannot be read by another process" in outputs[0]  # process 0's own read succeeded
    moved = os.listdir(locations.corrupt_dir(checkpoints))
    assert len(moved) == 1 and moved[0].startswith("6-"), moved
    assert locations.checkpoint_steps(checkpoints) == [3, 6]  # step 6 trained and saved again
    assert rundir.exists(workdir, rundir.RESULTS)
