"""Config values and workdirs no run can use are refused by name, with the fix, before anything is written."""
import os
import re
import subprocess
import sys

import pytest

from vitjax.train import checks, trainer
from tests.train import tiny_config

from tests.paths import ROOT, TINY


def _set(config, key, value):
    section, _, field = key.rpartition(".")
    (config[section] if section else config)[field] = value
    return config


@pytest.mark.parametrize("key, value, message", [
    ("batch_size", 0, "batch_size=0: use at least 1 example per step"),
    ("eval_batch_size", 0, "eval_batch_size=0: use at least 1 example per evaluation batch"),
    ("grad_accum_steps", 0, "grad_accum_steps=0: use 1 for no accumulation"),
    ("log_every_steps", 0, "log_every_steps=0: log every N >= 1 steps"),
    ("checkpoint_every_steps", 0, "checkpoint_every_steps=0: save every N >= 1 steps"),
    ("eval_every_steps", -1, "eval_every_steps=-1: use 0 to evaluate at the end only"),
    ("keep_checkpoints", 0, "keep_checkpoints=0: keep at least 1 checkpoint (the newest is needed to resume)"),
    ("keep_checkpoints", -1, "keep_checkpoints=-1: keep at least 1 checkpoint"),
    ("lr", -1.0, "lr=-1.0: use a learning rate > 0"),
    ("lr", 0.0, "lr=0.0: use a learning rate > 0"),
    ("end_lr", -1e-5, "end_lr=-1e-05: use an end learning rate >= 0"),
    ("weight_decay", -1e-4, "weight_decay=-0.0001: use 0 for no weight decay"),
    ("grad_clip_norm", -1.0, "grad_clip_norm=-1.0: use 0 for no clipping"),
    ("label_smoothing", 1.0, "label_smoothing=1.0: use a value in [0, 1)"),
    ("warmup_steps", -5, "warmup_steps must be >= 0"),
    ("schedule", "cosin", "schedule='cosin': choose 'cosine', 'linear', 'constant' or 'wsd'"),
    ("weight_decay_schedule", "linear", "weight_decay_schedule='linear': choose 'constant' or 'cosine'"),
    ("weight_decay_end", -0.4, "weight_decay_end=-0.4: use a rate >= 0"),
    ("optimizer.name", "adamm", "optimizer.name='adamm': choose 'adam', 'adamw' or 'sgd'"),
    ("optimizer.b2", 1.5, "optimizer.b2=1.5: use a decay rate in [0, 1)"),
    ("dtype", "float8", "dtype='float8': choose 'float32', 'bfloat16' or 'float16'"),
    ("nan_policy", "ignore", "nan_policy='ignore': nan_policy must be 'stop' or 'skip'"),
    ("data.mixup_alpha", -0.2, "mixup_alpha must be >= 0"),
])
def test_a_bad_value_is_refused_before_the_workdir_is_written(tmp_path, key, value, message):
    workdir = tmp_path / "w"
    with pytest.raises(ValueError, match=re.escape(message)):
        trainer.train(_set(tiny_config.get_config(), key, value), str(workdir))
    assert not workdir.exists()


def test_every_bad_value_is_named_at_once():
    config = _set(_set(tiny_config.get_config(), "batch_size", 0), "lr", 0.0)
    with pytest.raises(ValueError, match=r"config values no run can use:\n  batch_size=0: .*\n  lr=0.0: "):
        checks.config(config)


def test_a_workdir_that_is_a_file_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not a run")
    with pytest.raises(ValueError, match=re.escape(f"workdir {str(path)!r} is a file; pass a directory")):
        trainer.train(tiny_config.get_config(), str(path))
    with pytest.raises(ValueError, match=re.escape(f"lies below {str(path)!r}, a file")):
        trainer.train(tiny_config.get_config(), str(path / "run"))
    assert path.read_text() == "not a run"


@pytest.mark.parametrize("name", ["exp[1]", "exp*", "what?"])
def test_a_workdir_the_checkpoint_library_would_read_as_a_pattern_is_refused(tmp_path, name):
    with pytest.raises(ValueError, match=r"holds one of \[ \] \* \?, which the checkpoint library reads as a file pattern"):
        trainer.train(tiny_config.get_config(), str(tmp_path / name / "run"))
    assert not (tmp_path / name).exists()


def test_cli_refuses_a_bad_value_without_a_traceback(tmp_path):
    """The CPU runtime choices divide by grad_accum_steps before the trainer starts: checked before them."""
    run = subprocess.run([sys.executable, "-m", "vitjax", "train", "--config", TINY, "--workdir",
                          str(tmp_path / "w"), "--config.grad_accum_steps=0"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert run.returncode != 0
    assert "grad_accum_steps=0: use 1 for no accumulation" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "w").exists()


def test_every_accepted_name_builds():
    """checks.py lists the names without importing optimizer.py (JAX): both must agree."""
    import jax.numpy as jnp

    from vitjax import models
    from vitjax.train import optimizer

    config = tiny_config.get_config()
    for name in checks.SCHEDULES:
        config.schedule = name
        optimizer.learning_rate_schedule(config, total_steps=10, warmup_steps=2)
    for name in checks.OPTIMIZERS:
        config.optimizer.name = name
        optimizer.make_optimizer(config, optimizer.learning_rate_schedule(config, 10, 2))
    for name in checks.WEIGHT_DECAY_SCHEDULES:
        config.weight_decay_schedule = name
        optimizer.make_optimizer(config, optimizer.learning_rate_schedule(config, 10, 2), total_steps=10)
    for name in checks.DTYPES:
        assert models.build("vit", 4, dtype=name, **config.model).dtype == jnp.dtype(name)


def test_every_registered_objective_builds_from_its_module():
    from vitjax import objectives
    from vitjax.objectives.base import Objective

    for name in checks.OBJECTIVES:
        assert issubclass(objectives.objective_class(name), Objective)


def test_a_finished_run_is_reported_from_a_directory_this_user_cannot_write(tmp_path, monkeypatch):
    workdir = str(tmp_path / "w")
    trained = trainer.train(tiny_config.get_config("steps=5"), workdir)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if str(path).startswith(str(tmp_path)) else
                        real_access(path, mode))
    assert trainer.train(tiny_config.get_config("steps=5"), workdir) == trained
    with pytest.raises(ValueError, match="this user cannot write in"):
        trainer.train(tiny_config.get_config("steps=5"), str(tmp_path / "new"))


def test_an_os_error_of_the_run_directory_is_one_line(tmp_path):
    run = subprocess.run([sys.executable, "-m", "vitjax", "train", "--config", TINY, "--workdir", "/proc/no/run"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines()[-1] == ("vitjax train: error: /proc/no: No such file or directory "
                                                    "(errno ENOENT)")
