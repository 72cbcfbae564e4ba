"""End to end through `vitjax train`: a tiny DINO run logs a finite loss and its collapse monitors every
log step, checkpoints its teacher and centre, evaluates label-free, and resumes bit for bit after losing
its last checkpoint (teacher, centre and schedules included). Every evaluation reads the teacher, as the
official DINO evaluations do: the best-validation checkpoint, the checkpoint's evaluated parameters
(k-NN, few-shot, analyze) and init_from."""
import math
import os
import shutil

import jax
import numpy as np
import pytest

from vitjax import cli, models, rundir
from vitjax.interop import pretrained
from vitjax.checkpoints import integrity, locations, reader
from vitjax import metrics_log
from tests.objectives.dino_tiny import train

MONITORS = ("teacher_entropy", "teacher_kl_to_centre", "teacher_student_kl", "embedding_std",
            "teacher_temperature", "teacher_momentum")


def _saved_state(workdir, step=None):
    location = locations.locate(workdir)
    step = locations.step_dir(location.checkpoint_dir, step or locations.chosen_step(location))
    return integrity.read_verified(os.path.join(step, locations.STATE), os.path.join(step, locations.META), "test")


def _assert_same(got, want):
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_array_equal(a, b)


def _train_rows(workdir):
    """The logged train metrics, less the wall-clock ones (img/s), which no two runs share."""
    timing = {"img_per_sec", "gflops_per_sec"}
    rows = metrics_log.read_metrics(workdir)
    return [{k: v for k, v in row.items() if k not in timing} for row in rows if "loss" in row]


def test_dino_trains_through_the_cli_logs_its_monitors_and_resumes_bit_exactly(trained_tiny_dino_run, tmp_path,
                                                                               capsys):
    workdir = trained_tiny_dino_run  # trained by train() below, shared with tests/evaluate/test_knn.py
    rows = _train_rows(workdir)
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    for row in rows:
        assert all(math.isfinite(row[k]) for k in ("loss", *MONITORS)), row
        assert 0 <= row["teacher_entropy"] <= math.log(64) + 1e-4
    results = rundir.read_results(workdir)
    assert {"test_view_agreement", "test_view_cross_entropy"} <= set(results)

    state = _saved_state(workdir)
    assert set(state["extra"]) == {"teacher", "centre"} and np.shape(state["extra"]["centre"]) == (1, 64)
    assert float(np.abs(state["extra"]["centre"]).max()) > 0
    # The teacher is the student's EMA, not the student: close to it, but not equal.
    teacher, student = jax.tree.leaves(state["extra"]["teacher"]), jax.tree.leaves(state["params"])
    assert any(not np.array_equal(t, s) for t, s in zip(teacher, student))

    # Interrupted after step 2's checkpoint: the resumed run repeats the rest exactly.
    copy = str(tmp_path / "copy")
    shutil.copytree(workdir, copy)
    os.remove(rundir.file_path(copy, rundir.RESULTS))
    shutil.rmtree(locations.step_dir(locations.checkpoint_dir(copy), 4))
    capsys.readouterr()
    train(copy)
    assert "resuming from step 2" in capsys.readouterr().out
    assert _train_rows(copy) == rows
    for got, want in zip(jax.tree.leaves(_saved_state(copy)), jax.tree.leaves(state)):
        np.testing.assert_array_equal(got, want)
    assert rundir.read_results(copy)["test_view_agreement"] == results["test_view_agreement"]

    # What reads the run's parameters gets the teacher: the checkpoint's evaluated network, the best
    # validation step's checkpoint (the view metrics were the teacher's), and init_from, which loads its
    # backbone into the ViT classifier of the same dimensions, the head afresh.
    teacher = state["extra"]["teacher"]
    _assert_same(reader.read_params(workdir), teacher)
    best = rundir.read_results(workdir)["best_step"]
    _assert_same(reader.read_params(locations.best_checkpoint_dir(workdir)),
                 _saved_state(workdir, best)["extra"]["teacher"])
    vit = models.build("vit", 4, patch_size=4, width=32, depth=1, num_heads=2, mlp_dim=64)
    loaded = pretrained.load(workdir, vit, (16, 16, 3))
    _assert_same(loaded["Transformer"], teacher["Transformer"])
    assert not np.array_equal(teacher["embedding"]["kernel"], state["params"]["embedding"]["kernel"])
    np.testing.assert_array_equal(loaded["embedding"]["kernel"], teacher["embedding"]["kernel"])
    assert "dino_head" not in loaded and float(np.abs(loaded["head"]["kernel"]).max()) == 0


def test_vitjax_eval_reads_the_teacher_as_the_trainer_did(trained_tiny_dino_run, tmp_path):
    """`vitjax eval` of the newest checkpoint repeats the trainer's final test metrics, which were the
    teacher's; of checkpoint_best, the trainer's metrics at the best step. (The student would score
    otherwise: it is not the teacher, the test above shows.)"""
    copy = str(tmp_path / "run")  # eval writes eval.json into the run; the shared run stays as trained
    shutil.copytree(trained_tiny_dino_run, copy)
    results = rundir.read_results(copy)
    for checkpoint, suffix in ((None, ""), (locations.best_checkpoint_dir(copy), "_at_best")):
        cli.main(["eval", "--workdir", copy] + (["--checkpoint", checkpoint] if checkpoint else []))
        scores = rundir.read_json(copy, rundir.EVAL)
        for name in ("view_agreement", "view_cross_entropy"):
            assert scores[f"test_{name}"] == pytest.approx(results[f"test_{name}{suffix}"], rel=1e-5), (name, suffix)


def test_an_exported_dino_run_loads_as_the_run_does(trained_tiny_dino_run, tmp_path, capsys):
    """`vitjax export` of a DINO run writes its teacher; that .npz (which outlives the run directory)
    gives init_from the same backbone as the run."""
    out = str(tmp_path / "dino.npz")
    cli.main(["export", trained_tiny_dino_run, "--out", out])
    assert f"--config.init_from={out}" in capsys.readouterr().out
    vit = models.build("vit", 4, patch_size=4, width=32, depth=1, num_heads=2, mlp_dim=64)
    _assert_same(pretrained.load(out, vit, (16, 16, 3)), pretrained.load(trained_tiny_dino_run, vit, (16, 16, 3)))
