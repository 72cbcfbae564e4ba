"""End to end: a tiny DeiT-style student distils from a tiny teacher run made here, resumes bit-exactly
after an interruption, evaluates the mean of its two heads; bad distillation configs fail in plan,
before anything is compiled or written."""
import os
import re
import shlex
import shutil

import jax
import numpy as np
import pytest

from tests.train import tiny_config
from vitjax import cli, metrics_log, rundir
from vitjax import config as config_layer
from vitjax.checkpoints import locations, reader
from vitjax.interop import npz
from vitjax.train import reevaluate, trainer


@pytest.fixture(scope="module")
def teacher_run(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("teacher"))
    trainer.train(tiny_config.get_config("steps=6"), workdir)
    return workdir


def _student_config(teacher, steps=10):
    config = tiny_config.get_config(f"steps={steps}")
    config.objective = "distillation"
    config.model.distillation_token = True
    config.distillation.teacher = teacher
    config.checkpoint_every_steps = 5
    return config


def _losses(workdir):
    return [(r["step"], r["loss"], r["loss_distillation"]) for r in metrics_log.read_metrics(workdir) if "loss" in r]


def test_student_trains_resumes_bit_exactly_and_evaluates_the_mean_of_its_heads(teacher_run, tmp_path, capsys):
    workdir = str(tmp_path / "student")
    results = trainer.train(_student_config(teacher_run), workdir)
    assert [s for s, _, _ in _losses(workdir)] == [5, 10]

    # The teacher in the student's checkpoint is the teacher run's, unchanged by training.
    state = reader.read_params(workdir)  # the student's parameters
    assert "head_dist" in state and "dist" in state
    teacher = reader.read_params(teacher_run)
    saved = _saved_extra(workdir)
    for (path, want), got in zip(jax.tree_util.tree_flatten_with_path(teacher)[0], jax.tree.leaves(saved)):
        np.testing.assert_array_equal(got, want, err_msg=str(path))

    # Interrupted after step 5's checkpoint: the resumed run ends exactly where the first one did.
    copy = str(tmp_path / "copy")
    shutil.copytree(workdir, copy)
    os.remove(rundir.file_path(copy, rundir.RESULTS))
    shutil.rmtree(locations.step_dir(locations.checkpoint_dir(copy), 10))
    resumed = trainer.train(_student_config(teacher_run), copy)
    assert "resuming from step 5" in capsys.readouterr().out
    assert _losses(copy) == _losses(workdir)
    assert (resumed["test_accuracy"], resumed["test_loss"]) == (results["test_accuracy"], results["test_loss"])
    for got, want in zip(jax.tree.leaves(reader.read_params(copy)), jax.tree.leaves(state)):
        np.testing.assert_array_equal(got, want)

    # Evaluation scores the mean of the two heads (the model at inference), as `vitjax eval` does too.
    p = trainer.plan(_student_config(teacher_run))
    images = np.random.default_rng(0).normal(size=(4, 16, 16, 3)).astype(np.float32)
    cls, dist = p.model.apply({"params": state}, images, train=True)
    np.testing.assert_allclose(p.objective.eval_logits(state, images), (cls + dist) / 2, rtol=1e-6, atol=1e-6)


def test_a_student_resumes_and_evaluates_after_its_teacher_moved(teacher_run, tmp_path, capsys):
    """The teacher's parameters are in every checkpoint and its model in teacher.json: its files may go."""
    teacher = str(tmp_path / "teacher")
    shutil.copytree(teacher_run, teacher)
    workdir = str(tmp_path / "student")
    finished = trainer.train(_student_config(teacher), workdir)
    evaluated = reevaluate.evaluate_workdir(workdir)
    shutil.move(teacher, str(tmp_path / "moved"))

    os.remove(rundir.file_path(workdir, rundir.RESULTS))
    shutil.rmtree(locations.step_dir(locations.checkpoint_dir(workdir), 10))
    capsys.readouterr()
    resumed = trainer.train(_student_config(teacher), workdir)
    out = capsys.readouterr().out
    assert f"the teacher {teacher} is gone" in out and "resuming from step 5" in out
    assert (resumed["test_accuracy"], resumed["test_loss"]) == (finished["test_accuracy"], finished["test_loss"])
    assert reevaluate.evaluate_workdir(workdir) == evaluated
    # A new student cannot start from a teacher that is gone: its parameters are nowhere.
    with pytest.raises(FileNotFoundError, match="does not exist"):
        trainer.train(_student_config(teacher), str(tmp_path / "new"))


def _saved_extra(workdir):
    """The extra state (the teacher's parameters) of the run's newest checkpoint, as host arrays."""
    from vitjax.checkpoints import integrity

    location = locations.locate(workdir)
    step = locations.step_dir(location.checkpoint_dir, locations.chosen_step(location))
    tree = integrity.read_verified(os.path.join(step, locations.STATE), os.path.join(step, locations.META), "test")
    return tree["extra"]["teacher"]


@pytest.mark.parametrize("change, message", [
    (lambda c, t: setattr(c.distillation, "teacher", ""), "objective='distillation' needs a teacher"),
    (lambda c, t: setattr(c.distillation, "teacher", t + "/nowhere"), "does not exist"),
    (lambda c, t: setattr(c.model, "distillation_token", False), "needs --config.model.distillation_token=true"),
    (lambda c, t: setattr(c.data.synthetic, "num_classes", 6), "predicts 4 classes but the student's data has 6"),
    (lambda c, t: setattr(c.distillation, "type", "medium"), "distillation.type='medium': choose 'hard' or 'soft'"),
    (lambda c, t: setattr(c.distillation, "temperature", 0.0), "use a temperature > 0"),
    (lambda c, t: setattr(c.distillation, "model_name", "vit"), "leave distillation.model_name empty"),
    (lambda c, t: setattr(c, "objective", "supervised"), "model.distillation_token=true needs objective='distillation'"),
    (lambda c, t: setattr(c, "objective", "byol"),
     "objective='byol': choose 'supervised', 'distillation', 'mae', 'dino', 'sam' or 'contrastive'"),
])
def test_bad_distillation_configs_fail_before_compiling(teacher_run, tmp_path, change, message):
    config = _student_config(teacher_run)
    change(config, teacher_run)
    with pytest.raises((ValueError, FileNotFoundError), match=re.escape(message)):
        trainer.train(config, str(tmp_path / "w"))
    assert not rundir.exists(str(tmp_path / "w"), rundir.CONFIG)


def test_npz_teacher_needs_its_model_and_loads_with_it(teacher_run, tmp_path):
    path = npz.save(tmp_path / "teacher.npz", reader.read_params(teacher_run))
    config = _student_config(path)
    with pytest.raises(ValueError, match=re.escape("set distillation.model_name ('vit' or 'bit')")):
        trainer.plan(config)
    config.distillation.model_name = "vit"
    with config.distillation.model.unlocked():
        config.distillation.model.update(dict(tiny_config.get_config().model))
    objective = trainer.plan(config).objective
    loaded = objective.loaded_extra()["teacher"]
    for got, want in zip(jax.tree.leaves(loaded), jax.tree.leaves(reader.read_params(teacher_run))):
        np.testing.assert_array_equal(got, want)


def test_vitjax_export_writes_a_teacher_that_its_printed_flags_load(teacher_run, tmp_path, capsys):
    """`vitjax export` -> .npz, and the printed --config flags (quoted for a shell: the path has a space)
    make it a teacher equal to the run's network."""
    out = str(tmp_path / "exported teacher")
    cli.main(["export", teacher_run, "--out", out])
    printed = capsys.readouterr().out
    assert printed.startswith(f"wrote {out}.npz") and os.path.isfile(out + ".npz")
    overrides, rest = config_layer.overrides_from_argv(shlex.split(printed.split(": ", 1)[1]))
    assert overrides["distillation.teacher"] == out + ".npz"
    assert rest == [] and overrides["distillation.model_name"] == "vit"
    config = _student_config("")
    config_layer.apply_overrides(config, overrides)
    loaded = trainer.plan(config).objective.loaded_extra()["teacher"]
    for got, want in zip(jax.tree.leaves(loaded), jax.tree.leaves(reader.read_params(teacher_run))):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(SystemExit, match="vitjax export: error: .* is not a vitjax run"):
        cli.main(["export", str(tmp_path), "--out", out])
    missing = str(tmp_path / "no such folder" / "t.npz")  # refused before the (missing) checkpoint is read
    with pytest.raises(SystemExit, match=re.escape(f"--out {missing!r}: its directory {os.path.dirname(missing)} "
                                                   f"does not exist")):
        cli.main(["export", str(tmp_path / "no run"), "--out", missing])
