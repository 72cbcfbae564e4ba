"""Best-validation selection: the validation split picks the step, the test split only reports it."""
import contextlib
import os
import shutil

import jax
import numpy as np
import pytest

from vitjax.data import sources
from vitjax.evaluate.evaluator import Evaluator
from vitjax.train import best, trainer
from vitjax.train.preemption import Preempted
from vitjax.checkpoints import locations, reader
from vitjax import cli, metrics_log, rundir
from tests.train import tiny_config

BEST_KEYS = {"best_val_accuracy", "best_val_loss", "best_step", "test_accuracy_at_best", "test_loss_at_best",
             "val_size"}


# Validation accuracy by step for the runs of the first three tests (the loss stays measured): the
# best comes first at step 12, step 18 ties it and the last step is below it, on every host. The
# measured curve of the tiny run differs between hosts (float arithmetic) and can end on a tie.
SCRIPTED_ACCURACY = {3: .50, 6: .60, 9: .80, 12: .90, 15: .70, 18: .90, 21: .85, 24: .80, 27: .75, 30: .70}


@contextlib.contextmanager
def _scripted_validation_accuracy():
    """Makes every BestValidation report SCRIPTED_ACCURACY[step] as its validation accuracy; all
    else (the evaluation itself, the saving, the restoring, the test at the best step) is real."""
    measure = best.BestValidation.__call__

    def scripted(self, step, params, log):
        evaluate = self._evaluate
        self._evaluate = lambda p: {**evaluate(p), "accuracy": SCRIPTED_ACCURACY[step]}
        try:
            measure(self, step, params, log)
        finally:
            self._evaluate = evaluate

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(best.BestValidation, "__call__", scripted)
        yield


def _config(**changes):
    """The tiny run with a validation split and a constant, high learning rate (the parameters at
    the best step and at the last differ in test accuracy)."""
    c = tiny_config.get_config()
    c.data.val_size = 64
    c.eval_every_steps = 3
    c.lr = 0.1
    c.schedule = "constant"
    for key, value in changes.items():
        setattr(c, key, value)
    return c


def _validation_curve(workdir):
    return [(r["step"], r["val_accuracy"]) for r in metrics_log.read_metrics(workdir) if "val_accuracy" in r]


@pytest.fixture(scope="module")
def validated(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("val"))
    with _scripted_validation_accuracy():
        return workdir, trainer.train(_config(), workdir)


def test_the_best_step_is_the_first_with_the_highest_validation_accuracy(validated):
    workdir, results = validated
    assert BEST_KEYS <= results.keys() and results["val_size"] == 64 and results["num_train"] == 512 - 64
    curve = _validation_curve(workdir)
    assert curve == sorted(SCRIPTED_ACCURACY.items())  # every eval_every_steps, and the last step
    assert results["best_step"] == 12 and results["best_val_accuracy"] == .90  # the first of the tie
    # Selection never looked at the test split: the only test evaluation is the final one.
    assert [r["step"] for r in metrics_log.read_metrics(workdir) if "test_accuracy" in r] == [30]


def test_test_accuracy_at_best_is_the_saved_best_parameters_on_test(validated):
    workdir, results = validated
    best_dir = locations.best_checkpoint_dir(workdir)
    assert locations.checkpoint_steps(best_dir) == [results["best_step"]]  # the one step kept
    params = reader.read_params(best_dir)
    config = _config()
    p = trainer.plan(config)
    spec = trainer.state_spec(config, p)
    with jax.set_mesh(p.mesh):
        evaluator = Evaluator(p.objective.eval_sums, config.data, batch_size=config.eval_batch_size, mesh=p.mesh,
                              params_sharding=spec.shardings.params)
        test = evaluator(jax.device_put(params, spec.shardings.params))
    assert results["test_accuracy_at_best"] == pytest.approx(test["accuracy"], abs=1e-6)
    assert results["test_loss_at_best"] == pytest.approx(test["loss"], rel=1e-5)
    assert results["test_accuracy_at_best"] != results["test_accuracy"]  # not the final parameters


def test_vitjax_eval_of_the_best_checkpoint_gives_the_test_accuracy_at_best(validated, tmp_path, capsys):
    """`vitjax eval --checkpoint RUN/checkpoint_best`, as the study files tell users to run it: the best
    step's parameters alone (no train state) on test, the numbers results.json holds at best."""
    workdir, results = validated
    copy = str(tmp_path / "run")  # eval writes eval.json into the run; the module's run stays as trained
    shutil.copytree(workdir, copy)
    cli.main(["eval", "--workdir", copy, "--checkpoint", locations.best_checkpoint_dir(copy)])
    assert f"step={results['best_step']} " in capsys.readouterr().out
    scores = rundir.read_json(copy, rundir.EVAL)
    assert scores["step"] == results["best_step"]
    assert scores["test_accuracy"] == pytest.approx(results["test_accuracy_at_best"], abs=1e-6)
    assert scores["test_loss"] == pytest.approx(results["test_loss_at_best"], rel=1e-5)


def test_a_preempted_run_resumes_with_its_best_so_far(validated, tmp_path, monkeypatch):
    """Preempted one step after the best step: no later evaluation beats it, so a resumed run that
    forgot it would report a later, worse step as its best."""
    _, uninterrupted = validated
    stop = uninterrupted["best_step"] + 1
    workdir = str(tmp_path / "w")
    monkeypatch.setattr(trainer._StopFlag, "check",
                        lambda self, step: setattr(self, "raised", "SIGTERM" if step == stop else None))
    with _scripted_validation_accuracy(), pytest.raises(Preempted, match=f"SIGTERM at step {stop}"):
        trainer.train(_config(), workdir)
    monkeypatch.undo()
    assert locations.checkpoint_steps(locations.checkpoint_dir(workdir))[-1] == stop
    with _scripted_validation_accuracy():
        resumed = trainer.train(_config(), workdir)
    for key in BEST_KEYS | {"test_accuracy", "test_loss"}:
        assert resumed[key] == pytest.approx(uninterrupted[key], abs=1e-6), key
    assert _validation_curve(workdir) == _validation_curve(validated[0])


def test_without_scheduled_evaluations_the_last_step_is_the_best(tmp_path, capsys):
    results = trainer.train(_config(eval_every_steps=0, total_steps=10), str(tmp_path / "w"))
    assert "but eval_every_steps=0: only the last step is evaluated" in capsys.readouterr().out
    assert results["best_step"] == 10
    assert results["test_accuracy_at_best"] == results["test_accuracy"]
    assert results["test_loss_at_best"] == pytest.approx(results["test_loss"], rel=1e-6)


class _Log:
    def __init__(self):
        self.rows = []

    def write(self, step, scalars):
        self.rows.append((step, scalars))


def test_only_a_strict_improvement_is_saved(tmp_path):
    accuracies = iter([0.5, 0.7, 0.7, 0.6, 0.71])
    saved = []
    tracker = best.BestValidation(str(tmp_path), lambda params: {"accuracy": next(accuracies), "loss": 1.0},
                                  None, val_size=8, config={},
                                  save=lambda ckpt, step, tree, meta: saved.append((step, meta["val_accuracy"])))
    log = _Log()
    for step in (1, 2, 3, 4):
        tracker(step, params=None, log=log)
    assert saved == [(1, 0.5), (2, 0.7)] and tracker.best == best.Best(2, {"accuracy": 0.7, "loss": 1.0})  # the tie kept step 2
    tracker(5, params=None, log=log)
    assert saved[-1] == (5, 0.71) and [s for s, _ in log.rows] == [1, 2, 3, 4, 5]
    tracker.close()
    assert os.path.isdir(locations.best_checkpoint_dir(str(tmp_path)))


def test_a_named_validation_split_is_tracked_like_a_held_out_one(tmp_path):
    """data.val_split (how streamed datasets get one) turns best-validation selection on as val_size does."""
    make = lambda split, n: sources.make_synthetic(split, n, n, (16, 16, 3), 4, 0)
    arrays = {"train": make("train", 512), "dev": make("test", 64), "test": make("test", 128)}
    np.savez(tmp_path / "d.npz", **{f"{s}_{k}": a for s, pair in arrays.items()
                                    for k, a in zip(("images", "labels"), pair)})
    c = _config(eval_every_steps=3, total_steps=6)
    c.data.val_size, c.data.val_split, c.data.name = 0, "dev", f"npz:{tmp_path / 'd.npz'}"
    results = trainer.train(c, str(tmp_path / "w"))
    assert BEST_KEYS <= results.keys() and results["num_train"] == 512
    assert (results["val_size"], results["val_split"]) == (64, "dev")
    assert [s for s, _ in _validation_curve(str(tmp_path / "w"))] == [3, 6]
