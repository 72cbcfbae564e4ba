"""Runs in a bucket: `vitjax train --workdir gs://...` against the GCS emulator of tests/gcs/conftest.py.

    nice -n 19 python -m pytest tests/gcs -x -q

The same checks as tests/train/test_faults.py, on an object store, where orbax writes steps in place
(no rename) and vitjax's own files are single uploads: a run killed with SIGKILL mid-run resumes to
parameters bitwise equal to an uninterrupted local run's; a corrupt step in the bucket is found and
copied aside (an object store cannot rename); init_from reads a gs:// .npz; `vitjax plot` reads a sweep
table in a bucket and writes its figures there.
"""
import json
import random
import signal

import pytest

from tests.train import kill_and_resume, tiny_config
from vitjax import rundir, storage
from vitjax.interop import npz
from vitjax.sweep import plots, table
from vitjax.train import trainer
from vitjax.interop.pretrained import load as load_pretrained
from vitjax.checkpoints import locations, reader


@pytest.fixture(scope="module")
def uninterrupted(uninterrupted_faults_run):
    """The reference: the same tiny run, uninterrupted, in a local workdir (tests/conftest.py; the one
    tests/train/test_faults.py compares against too)."""
    return uninterrupted_faults_run


@pytest.fixture(scope="module")
def resumed(gcs, uninterrupted):
    """A run in gs://.../killed, killed with SIGKILL at a seeded random step and run again to its end."""
    workdir = f"{gcs}/killed"
    kill_at = random.Random(kill_and_resume.KILL_SEED).randint(5, kill_and_resume.STEPS - 10)
    process = kill_and_resume.start_and_wait(workdir, kill_at)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not rundir.exists(workdir, rundir.RESULTS)
    run = kill_and_resume.run_vitjax_train(workdir)
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir, run


def test_sigkill_in_a_bucket_then_resume_is_bitwise_exact(resumed, uninterrupted):
    workdir, run = resumed
    assert "resuming from step" in run.stdout
    assert "TensorBoard events are not written" in run.stdout  # TensorFlow's GCS client has no emulator setting
    assert {rundir.CONFIG, rundir.METRICS, rundir.RESULTS, locations.CHECKPOINTS} <= set(storage.listdir(workdir))
    # No lock in a bucket, said plainly; the killed trainer's train.lock was reported, replaced, and deleted
    # by the trainer that finished.
    assert "has no file locks: nothing stops a second trainer" in run.stdout
    assert "train.lock names another trainer" in run.stdout
    assert not rundir.exists(workdir, rundir.LOCK)
    kill_and_resume.assert_bitwise_equal(kill_and_resume.final_params(workdir), kill_and_resume.final_params(uninterrupted))


def test_a_corrupt_step_in_a_bucket_is_set_aside_and_the_previous_one_resumed(resumed, uninterrupted):
    workdir, _ = resumed
    storage.remove(rundir.file_path(workdir, rundir.RESULTS))
    steps = locations.checkpoint_steps(locations.checkpoint_dir(workdir))
    state = storage.as_path(locations.step_dir(locations.checkpoint_dir(workdir), steps[-1])) / locations.STATE
    largest = max(storage.files_below(state), key=lambda p: p.stat().length)
    largest.unlink()
    run = kill_and_resume.run_vitjax_train(workdir)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"checkpoint step {steps[-1]} is corrupt" in run.stdout
    assert f"resuming from step {steps[-2]}" in run.stdout
    aside = storage.listdir(locations.corrupt_dir(locations.checkpoint_dir(workdir)))
    assert [name.split("-")[0] for name in aside] == [str(steps[-1])]
    kill_and_resume.assert_bitwise_equal(kill_and_resume.final_params(workdir), kill_and_resume.final_params(uninterrupted))


def test_init_from_a_gs_npz_reads_the_same_parameters_as_a_local_one(gcs, trained_tiny_run, tmp_path):
    params = reader.read_params(trained_tiny_run)
    local, remote = npz.save(str(tmp_path / "tiny.npz"), params), npz.save(f"{gcs}/weights/tiny", params)
    assert remote == f"{gcs}/weights/tiny.npz" and storage.exists(remote)
    model = trainer.plan(tiny_config.get_config()).model
    from_local, from_bucket = (load_pretrained(path, model, (16, 16, 3)) for path in (local, remote))
    kill_and_resume.assert_bitwise_equal(from_bucket, from_local)


def _row(family, size, seed, accuracy):
    return {"name": f"{family}_n{size}_s{seed}", "status": "finished", "family": family, "model": family,
            "train_size": size, "seed": seed, "accuracy": accuracy, "accuracy_from": "final",
            "config": {"model_name": family, "seed": seed, "data": {"train_size": size}}}


def test_plot_reads_a_sweep_table_in_a_bucket_and_writes_its_figures_there(gcs):
    sweep = f"{gcs}/sweep"
    rows = [_row(family, size, 0, acc) for family, size, acc in
            (("vit", 100, 0.6), ("bit", 100, 0.7), ("vit", 1000, 0.8), ("bit", 1000, 0.81))]
    rundir.replace_file(rundir.file_path(sweep, table.JSON), json.dumps({"runs": rows}))
    result = plots.plot(sweep)
    assert result["out"] == f"{sweep}/figures" and "family_gap" in result["written"], result
    written = set(storage.listdir(result["out"]))
    assert {"family_gap.png", "family_gap.csv"} <= written
    assert storage.read_bytes(f"{sweep}/figures/family_gap.png").startswith(b"\x89PNG")
    assert len(storage.read_text(f"{sweep}/figures/family_gap.csv").splitlines()) == 3  # a header, two sizes
