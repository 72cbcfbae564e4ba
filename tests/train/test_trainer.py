"""End to end: a tiny model trains, writes every workdir file, resumes, and refuses bad input."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from vitjax import host, rundir
from vitjax.sweep import table
from vitjax.train import trainer
from vitjax.checkpoints import locations, reader
from vitjax import metrics_log
from vitjax import train_lock
from tests.train import tiny_config

from tests.paths import ROOT, TINY


def _losses(workdir):
    return [(r["step"], r["loss"]) for r in metrics_log.read_metrics(workdir) if "loss" in r]


def _tensorboard_scalars(workdir: str, tag: str) -> list:
    """(step, value) pairs of one scalar as TensorBoard reads them back from the run's event files."""
    import tensorflow as tf
    from tensorboard.backend.event_processing import event_accumulator

    events = event_accumulator.EventAccumulator(workdir, size_guidance={event_accumulator.TENSORS: 0})
    events.Reload()
    return [(e.step, float(tf.make_ndarray(e.tensor_proto))) for e in events.Tensors(tag)]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("run"))
    results = trainer.train(tiny_config.get_config(), workdir)
    return workdir, results


def test_loss_falls_and_workdir_is_complete(trained):
    workdir, results = trained
    losses = _losses(workdir)
    assert [s for s, _ in losses] == [5, 10, 15, 20, 25, 30]
    assert losses[-1][1] < 0.7 * losses[0][1], losses
    for name in (rundir.CONFIG, rundir.METRICS, rundir.RESULTS):
        assert os.path.getsize(rundir.file_path(workdir, name)) > 0
    board = _tensorboard_scalars(workdir, "loss")  # the same series as metrics.jsonl, step by step
    assert [s for s, _ in board] == [s for s, _ in losses]
    assert [v for _, v in board] == pytest.approx([v for _, v in losses], rel=1e-6)
    assert locations.checkpoint_steps(locations.checkpoint_dir(workdir)) == [10, 20, 30]
    for key in ("test_accuracy", "steps", "examples_seen", "wall_seconds", "train_flops", "params"):
        assert key in results, key
    assert results["steps"] == 30 and results["examples_seen"] == 30 * 32
    assert results["train_flops"] > 0 and results["params"] > 0
    assert results["host"] == host.describe()  # its times compare only with runs on the same cpu
    assert results["code"] == host.code() and len(results["code"]["source_sha256"]) == 64
    assert results["test_accuracy"] > 0.5  # 4 learnable classes: chance is 0.25
    # Without a validation split (data.val_size=0) there is no best step to report or keep.
    assert not {"best_step", "test_accuracy_at_best", "val_size"} & results.keys()
    assert not os.path.exists(locations.best_checkpoint_dir(workdir))


def test_finished_run_is_not_redone(trained, capsys):
    workdir, results = trained
    before = _losses(workdir)
    again = trainer.train(tiny_config.get_config(), workdir)
    assert again == results
    assert _losses(workdir) == before
    assert "is finished" in capsys.readouterr().out


def test_interrupted_run_resumes_from_its_last_checkpoint(trained, tmp_path, capsys):
    source, results = trained
    workdir = str(tmp_path / "copy")
    shutil.copytree(source, workdir)
    os.remove(rundir.file_path(workdir, rundir.RESULTS))
    shutil.rmtree(locations.step_dir(locations.checkpoint_dir(workdir), 30))
    resumed = trainer.train(tiny_config.get_config(), workdir)
    assert "resuming from step 20" in capsys.readouterr().out
    assert [s for s, _ in _losses(workdir)][-2:] == [25, 30]
    # Same data order and dropout keys from step 20 on: the same final model.
    assert resumed["test_accuracy"] == pytest.approx(results["test_accuracy"], abs=1e-6)


def test_a_run_resumed_on_another_host_records_both_and_pairs_with_none(trained, tmp_path, monkeypatch):
    """results.json's host is the finishing attempt's; `trained_on` keeps every attempt's, so a run
    resumed elsewhere cannot pass for a run of its last host (sweep.table.pair_key)."""
    source, results = trained
    workdir = str(tmp_path / "copy")
    shutil.copytree(source, workdir)
    os.remove(rundir.file_path(workdir, rundir.RESULTS))
    shutil.rmtree(locations.step_dir(locations.checkpoint_dir(workdir), 30))
    here = host.describe()
    monkeypatch.setattr(host, "describe", lambda: {**here, "cpu": "another cpu"})
    resumed = trainer.train(tiny_config.get_config(), workdir)
    assert [a["from_step"] for a in results["trained_on"]] == [0]
    assert [(a["from_step"], a["host"]["cpu"]) for a in resumed["trained_on"]] == [(0, here["cpu"]),
                                                                                   (20, "another cpu")]
    assert table.pair_key(results) != table.pair_key(resumed)
    assert table.pair_key(resumed).startswith("mixed: ")


def test_checkpoint_params_read_through_a_relative_workdir_path(trained, monkeypatch):
    """As a sweep passes them (`--workdir runs/x`): orbax itself refuses relative paths."""
    workdir, _ = trained
    monkeypatch.chdir(os.path.dirname(workdir))
    params = reader.read_params(os.path.basename(workdir))
    assert "head" in params and params["head"]["kernel"].shape[-1] == 4


def test_resume_with_a_different_config_is_refused(trained):
    workdir, _ = trained
    os.rename(rundir.file_path(workdir, rundir.RESULTS), os.path.join(workdir, "results.bak"))
    try:
        config = tiny_config.get_config()
        config.lr = 0.1
        with pytest.raises(ValueError, match=r"lr: 0.003 -> 0.1"):
            trainer.train(config, workdir)
    finally:
        os.rename(os.path.join(workdir, "results.bak"), rundir.file_path(workdir, rundir.RESULTS))


def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "vitjax", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_cli_rejects_a_config_typo_before_training(tmp_path):
    run = _cli("train", "--config", TINY, "--workdir", str(tmp_path / "w"), "--config.batchsize=8")
    assert run.returncode != 0
    assert "did you mean 'batch_size'?" in run.stderr
    assert not (tmp_path / "w").exists()


def test_steps_flag_makes_a_short_run_of_any_config_in_one_flag(tmp_path, capsys):
    from vitjax import cli

    workdir = str(tmp_path / "smoke")  # the tiny config's own 30 steps have a 5-step warmup: too long for 3
    cli.main(["train", "--config", TINY, "--workdir", workdir, "--steps", "3", "--config.eval_every_steps=0"])
    assert "after 3 steps" in capsys.readouterr().out
    config = rundir.load_config(workdir)
    assert (config.total_steps, config.total_epochs, config.warmup_steps) == (3, 0.0, 0)
    with pytest.raises(SystemExit, match="--steps must be at least 1"):
        cli.main(["train", "--config", TINY, "--workdir", str(tmp_path / "none"), "--steps", "0"])


@pytest.mark.parametrize("key, value, message", [
    ("model.patch_size", 5, "not divisible by patch_size=5"),
    ("model.num_heads", 3, "not divisible by num_heads=3"),
    ("grad_accum_steps", 3, "not divisible by grad_accum_steps"),
    ("data.name", "no_such_dataset", "no_such_dataset"),
])
def test_bad_values_are_rejected_before_training(tmp_path, key, value, message):
    config = tiny_config.get_config()
    section, _, field = key.rpartition(".")
    (config[section] if section else config)[field] = value
    with pytest.raises(ValueError, match=re.escape(message)):
        trainer.train(config, str(tmp_path / "w"))
    assert not rundir.exists(tmp_path / "w", rundir.METRICS)


def _copy_of(trained, tmp_path):
    source, _ = trained
    workdir = str(tmp_path / "copy")
    shutil.copytree(source, workdir)
    return workdir


def _final_evaluations(workdir):
    return [r["step"] for r in metrics_log.read_metrics(workdir) if "test_accuracy" in r]


def test_resumed_run_logs_each_step_once(trained, tmp_path):
    # As a SIGKILL at step 30 leaves it: steps 21..30 logged, step 30's checkpoint never written.
    workdir = _copy_of(trained, tmp_path)
    os.remove(rundir.file_path(workdir, rundir.RESULTS))
    shutil.rmtree(locations.step_dir(locations.checkpoint_dir(workdir), 30))
    trainer.train(tiny_config.get_config(), workdir)
    assert [s for s, _ in _losses(workdir)] == [5, 10, 15, 20, 25, 30]
    assert _final_evaluations(workdir) == [30]


def test_finished_run_with_another_config_is_refused(trained):
    workdir, results = trained
    config = tiny_config.get_config()
    config.lr = 0.5
    config.model.width = 64
    with pytest.raises(ValueError, match=r"holds a finished run started with a different config; differing keys:\n"
                                         r"  lr: 0.003 -> 0.5\n  model.width: 32 -> 64\n.*--force"):
        trainer.train(config, workdir)
    assert rundir.read_results(workdir) == results


def test_force_redoes_a_finished_run_and_keeps_its_history(trained, tmp_path, capsys):
    workdir = _copy_of(trained, tmp_path)
    config = tiny_config.get_config()
    config.log_every_steps = 10
    trainer.train(config, workdir, force=True)
    kept = re.search(r"kept the previous config.json, results.json in (\S+)", capsys.readouterr().out).group(1)
    assert os.path.dirname(kept) == rundir.file_path(workdir, rundir.HISTORY)
    assert rundir.read_json(kept, rundir.CONFIG)["log_every_steps"] == 5
    assert rundir.read_json(kept, rundir.RESULTS) == trained[1]
    assert rundir.load_config(workdir).log_every_steps == 10
    assert rundir.read_results(workdir)["steps"] == 30
    assert _final_evaluations(workdir) == [30]  # the redone final evaluation replaces the first


def test_a_workdir_in_use_is_refused_before_anything_is_written(tmp_path):
    """A second `vitjax train` on a workdir another trainer holds (this test process) fails at once."""
    workdir = tmp_path / "w"
    with train_lock.lock(str(workdir)):
        run = _cli("train", "--config", TINY, "--workdir", str(workdir))
    assert run.returncode == 1, run.stderr[-3000:]
    assert f"{workdir} is in use by another vitjax train (pid {os.getpid()} on host" in run.stderr
    assert os.listdir(workdir) == [rundir.LOCK]
