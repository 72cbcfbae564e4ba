"""Faults a long run meets: SIGKILL mid-save, preemption notices, rotten checkpoints, NaNs, bad configs.

The kill and corruption tests run the real CLI in a subprocess on the tiny synthetic config and check
that nothing is lost: a resumed run ends bitwise equal to an uninterrupted one. The NaN tests need no
process of their own and run the trainer in this one.
"""
import os
import pathlib
import random
import re
import signal

import numpy as np
import pytest

from vitjax import rundir
from vitjax.train import preemption, trainer
from vitjax.checkpoints import locations, reader
from vitjax import metrics_log
from tests.train import tiny_config
from tests.train.kill_and_resume import (KILL_SEED, STEPS, assert_bitwise_equal, final_params, flatten,
                                         run_vitjax_train, start_and_wait)


@pytest.fixture(scope="module")
def uninterrupted(uninterrupted_faults_run):
    return uninterrupted_faults_run  # tests/conftest.py: shared with tests/gcs, which resumes the same run


def test_sigkill_at_a_random_step_then_resume_is_bitwise_exact(uninterrupted, tmp_path):
    # Checkpoints every step, asynchronously: a kill at a random step often lands inside a save.
    kill_at = random.Random(KILL_SEED).randint(5, STEPS - 10)  # seeded: a failure reproduces
    process = start_and_wait(tmp_path, kill_at)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not rundir.exists(tmp_path, rundir.RESULTS)
    run = run_vitjax_train(tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "resuming from step" in run.stdout
    assert_bitwise_equal(final_params(tmp_path), final_params(uninterrupted))


@pytest.mark.parametrize("model", ["mae", "dino"])
def test_the_label_free_objectives_resume_bitwise_after_sigkill(tmp_path, model):
    """Their extra state (DINO's teacher, centre and schedules; MAE's masks come from the step's key) is
    in the checkpoint: a run killed mid-way and resumed logs the same losses and ends with the same
    parameters as one never stopped."""
    whole = run_vitjax_train(tmp_path / "whole", model=model)
    assert whole.returncode == 0, whole.stderr[-3000:]
    killed = tmp_path / "killed"
    kill_at = random.Random(KILL_SEED).randint(5, STEPS - 10)
    process = start_and_wait(killed, kill_at, model=model)
    process.send_signal(signal.SIGKILL)
    process.wait()
    run = run_vitjax_train(killed, model=model)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "resuming from step" in run.stdout
    assert _losses_by_step(killed) == _losses_by_step(tmp_path / "whole")  # every step, before and after
    assert_bitwise_equal(final_params(killed), final_params(tmp_path / "whole"))


def _losses_by_step(workdir) -> dict:
    return {row["step"]: row["loss"] for row in metrics_log.read_metrics(workdir) if "loss" in row}


@pytest.mark.parametrize("sig,name", [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "Ctrl-C")])
def test_sigterm_or_a_first_ctrl_c_saves_the_current_step_and_exits_preempted(uninterrupted, tmp_path, sig, name):
    process = start_and_wait(tmp_path, 8)
    process.send_signal(sig)
    output = process.communicate(timeout=300)[0]
    assert process.returncode == preemption.PREEMPTED_EXIT_CODE, output[-3000:]
    saved = locations.checkpoint_steps(locations.checkpoint_dir(tmp_path))[-1]
    assert f"{name} at step {saved}" in output and "Traceback" not in output
    run = run_vitjax_train(tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"resuming from step {saved}" in run.stdout
    assert_bitwise_equal(final_params(tmp_path), final_params(uninterrupted))


def _two_steps():
    config = tiny_config.get_config("steps=2")
    config.warmup_steps = 1
    return config


def test_a_stop_signal_while_compiling_ends_at_the_first_step_boundary_as_preempted(tmp_path, monkeypatch):
    compile_for_real = trainer._compile_and_describe

    def interrupted(*args):
        os.kill(os.getpid(), signal.SIGTERM)  # the handler is installed before the trainer compiles
        return compile_for_real(*args)

    monkeypatch.setattr(trainer, "_compile_and_describe", interrupted)
    with pytest.raises(preemption.Preempted, match="SIGTERM before step 1; nothing new to save"):
        trainer.train(_two_steps(), str(tmp_path))
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is gone with the run
    assert not locations.checkpoint_steps(locations.checkpoint_dir(str(tmp_path)))


def test_a_stop_signal_during_the_final_evaluation_lets_the_run_finish(tmp_path, monkeypatch, capsys):
    evaluate_for_real = trainer._final_evaluations

    def interrupted(*args):
        os.kill(os.getpid(), signal.SIGTERM)
        return evaluate_for_real(*args)

    monkeypatch.setattr(trainer, "_final_evaluations", interrupted)
    results = trainer.train(_two_steps(), str(tmp_path))
    assert results["steps"] == 2 and rundir.read_json(str(tmp_path), rundir.RESULTS) == results
    assert "SIGTERM during the final evaluation: the last step is saved; finishing" in capsys.readouterr().out


def test_a_second_ctrl_c_stops_at_once():
    """In this process: two SIGINTs sent back to back reach Python's handler as one, so the subprocess
    tests above cannot time a second one."""
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN, not Python's handler, in a suite started with nohup
    flag = trainer._StopFlag()
    try:
        os.kill(os.getpid(), signal.SIGINT)
        assert flag.raised == "Ctrl-C"
        with pytest.raises(KeyboardInterrupt, match="second Ctrl-C"):
            os.kill(os.getpid(), signal.SIGINT)
    finally:
        flag.restore()
    assert signal.getsignal(signal.SIGINT) is before


def _corrupt_latest(workdir, how):
    steps = locations.checkpoint_steps(locations.checkpoint_dir(workdir))
    latest = pathlib.Path(locations.step_dir(locations.checkpoint_dir(workdir), steps[-1]))
    files = sorted(p for p in latest.rglob("*") if p.is_file() and p.stat().st_size > 64 and locations.STATE in p.parts)
    if how == "flip":
        # Every array-data file (OCDBT's d/ folders): which one holds which array, and which bytes of it
        # the database still reads, is orbax's business (after a 4-device save, flipping the middle of the
        # largest file changed nothing that was restored).
        for victim in (p for p in files if p.parent.name == "d"):
            data = bytearray(victim.read_bytes())
            for i in range(len(data) // 2, len(data) // 2 + 8):
                data[i] ^= 0xFF
            victim.write_bytes(bytes(data))
    else:
        max(files, key=lambda p: p.stat().st_size).unlink()
    return steps


@pytest.mark.parametrize("how", ["flip", "remove"])
def test_corrupt_latest_checkpoint_falls_back_to_the_previous_one(uninterrupted, tmp_path, how):
    workdir = tmp_path / "run"
    import shutil
    shutil.copytree(uninterrupted, workdir)
    os.remove(rundir.file_path(workdir, rundir.RESULTS))
    steps = _corrupt_latest(workdir, how)
    run = run_vitjax_train(workdir)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"checkpoint step {steps[-1]} is corrupt" in run.stdout
    assert f"resuming from step {steps[-2]}" in run.stdout
    # The bad checkpoint was moved aside, not deleted, and the run still ends where it should.
    assert os.listdir(workdir / "corrupt_checkpoints")
    assert_bitwise_equal(final_params(workdir), final_params(uninterrupted))


def _diverging_config(**changes):
    """The subprocess runs' settings with a learning rate that overflows within a few steps."""
    config = tiny_config.get_config(f"steps={STEPS}")
    config.checkpoint_every_steps, config.keep_checkpoints = 1, 2
    config.lr, config.grad_clip_norm = 1e30, 0.0
    for key, value in changes.items():
        setattr(config, key, value)
    return config


def test_nan_stops_naming_a_checkpoint_from_before_the_first_bad_step_and_none_after_it(tmp_path):
    # Checkpoints every step, logs (and so reads the metrics at once) every 5th: the save of the first
    # bad step must wait for the check that reads it one step late.
    with pytest.raises(trainer.NonFiniteLoss) as stopped:
        trainer.train(_diverging_config(log_every_steps=5), str(tmp_path))
    bad = int(re.search(r"non-finite loss or gradient at step (\d+)", str(stopped.value)).group(1))
    good = int(re.search(r"Last good checkpoint: step (\d+)", str(stopped.value)).group(1))
    saved = locations.checkpoint_steps(locations.checkpoint_dir(tmp_path))
    assert good < bad and saved and max(saved) == good, (bad, good, saved)
    for step in saved:
        params = reader.read_params(locations.step_dir(locations.checkpoint_dir(tmp_path), step))
        assert all(np.isfinite(v).all() for v in flatten(params).values()), step


def test_nan_skip_policy_counts_skipped_updates(tmp_path):
    results = trainer.train(_diverging_config(log_every_steps=1, nan_policy="skip"), str(tmp_path))
    assert results["skipped_updates"] > 0
    assert all(np.isfinite(v).all() for v in flatten(final_params(tmp_path)).values())


@pytest.mark.parametrize("key, value, message", [
    ("warmup_steps", 100, f"warmup (100 steps) is longer than training ({STEPS} steps)"),
    ("nan_policy", "ignore", "nan_policy must be 'stop' or 'skip'"),
    ("total_epochs", 3.0, "set only one of total_steps, total_epochs"),
])
def test_bad_configs_are_rejected_at_start_up(tmp_path, key, value, message):
    config = tiny_config.get_config(f"steps={STEPS}")
    config[key] = value
    with pytest.raises(ValueError, match=re.escape(message)):
        trainer.train(config, str(tmp_path))
    assert not rundir.exists(tmp_path, rundir.METRICS)


def test_a_value_of_the_wrong_type_is_rejected():
    config = tiny_config.get_config()
    with pytest.raises(TypeError, match="batch_size"):
        config.batch_size = "abc"


def test_force_resumes_a_workdir_with_a_different_config(tmp_path):
    config = tiny_config.get_config("steps=10")
    trainer.train(config, str(tmp_path))
    os.remove(rundir.file_path(tmp_path, rundir.RESULTS))
    config.log_every_steps = 2
    with pytest.raises(ValueError, match="log_every_steps"):
        trainer.train(config, str(tmp_path))
    results = trainer.train(config, str(tmp_path), force=True)
    assert results["steps"] == 10
