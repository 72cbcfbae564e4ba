"""A warmup-stable-decay ladder: a shorter budget branched off a longer run's checkpoint is the same
run as that budget trained from step 0, and a branch that would not be is refused before it starts."""
import os

import numpy as np
import pytest

from vitjax.train import checks, trainer
from vitjax.checkpoints import locations, reader
from vitjax import metrics_log
from tests.train import tiny_config

TRUNK_STEPS, RUNG_STEPS = 40, 20  # cooldown 0.25: the trunk holds its rate to step 30, the rung to 15


def _wsd(steps, **values):
    c = tiny_config.get_config(f"steps={steps}")
    c.schedule, c.cooldown_fraction, c.checkpoint_every_steps = "wsd", 0.25, 100
    for key, value in values.items():
        setattr(c, key, value)
    return c


@pytest.fixture(scope="module")
def trunk(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("trunk"))
    trainer.train(_wsd(TRUNK_STEPS, keep_checkpoint_steps=(15,)), workdir)
    return workdir


def test_the_trunk_keeps_its_branch_step_beside_its_newest(trunk):
    assert locations.checkpoint_steps(locations.checkpoint_dir(trunk)) == [15, TRUNK_STEPS]


def test_a_branch_is_the_shorter_run_from_step_zero(trunk, tmp_path, capsys):
    branched = trainer.train(_wsd(RUNG_STEPS, branch_from=trunk), str(tmp_path / "branch"))
    assert "branching from step 15 of" in capsys.readouterr().out
    scratch = trainer.train(_wsd(RUNG_STEPS), str(tmp_path / "scratch"))
    a = reader.read_params(str(tmp_path / "branch"))
    b = reader.read_params(str(tmp_path / "scratch"))
    for x, y in zip(_leaves(a), _leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert branched["test_accuracy"] == scratch["test_accuracy"]
    # The branch trained only its cooldown: its log starts after the branch step.
    logged = [row["step"] for row in metrics_log.read_metrics(str(tmp_path / "branch")) if "loss" in row]
    assert logged[0] == 20 and min(logged) > 15


def _leaves(tree):
    for _, value in sorted(tree.items()):
        yield from (_leaves(value) if isinstance(value, dict) else [value])


def test_a_branch_of_another_config_is_refused_naming_the_keys(trunk, tmp_path):
    with pytest.raises(ValueError, match=r"another config.*\n  lr: 0\.003 \(trunk\) -> 0\.01"):
        trainer.train(_wsd(RUNG_STEPS, branch_from=trunk, lr=1e-2), str(tmp_path / "b"))
    assert not os.path.exists(tmp_path / "b")  # refused before the workdir was claimed


def test_a_branch_longer_than_its_trunk_is_refused(trunk, tmp_path):
    with pytest.raises(ValueError, match=r"cooldown starts at step 38, after the trunk's own \(step 30 of 40\)"):
        trainer.train(_wsd(50, branch_from=trunk), str(tmp_path / "b"))


def test_a_branch_step_the_trunk_did_not_keep_is_refused_naming_the_key(trunk, tmp_path):
    with pytest.raises(ValueError, match=r"no checkpoint at step 22 \(it has \[15, 40\]\).*keep_checkpoint_steps"):
        trainer.train(_wsd(30, branch_from=trunk), str(tmp_path / "b"))  # cooldown round(7.5) = 8 steps
    assert not os.path.exists(tmp_path / "b")


def test_branching_needs_the_wsd_schedule():
    c = _wsd(RUNG_STEPS, branch_from="somewhere")
    c.schedule = "cosine"
    with pytest.raises(ValueError, match=r"branch_from='somewhere' needs schedule='wsd'"):
        checks.config(c)
