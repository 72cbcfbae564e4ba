"""Where a run's checkpoints live, and reading a run's parameters however the run is named."""
import os
import shutil

import numpy as np
import pytest

from vitjax import rundir
from vitjax.checkpoints import locations, reader


def _run_dir(run_dir, steps=()):
    """A run directory as the trainer leaves it, with empty step directories (state/ and meta/)."""
    run_dir.mkdir(parents=True)
    (run_dir / rundir.CONFIG).write_text("{}")
    for step in steps:
        for item in (locations.STATE, locations.META):
            (run_dir / locations.CHECKPOINTS / str(step) / item).mkdir(parents=True)
    return run_dir


def test_locate_a_workdir(tmp_path):
    run_dir = _run_dir(tmp_path / "run", [10])
    assert locations.locate(str(run_dir)) == locations.Location(str(run_dir), str(run_dir / "checkpoints"), None)


def test_locate_a_workdir_without_checkpoints_yet(tmp_path):
    run_dir = _run_dir(tmp_path / "run")
    assert locations.locate(str(run_dir)).checkpoint_dir == str(run_dir / "checkpoints")


def test_locate_a_checkpoints_directory(tmp_path):
    run_dir = _run_dir(tmp_path / "run", [10])
    location = locations.locate(str(run_dir / "checkpoints") + os.sep)  # a trailing slash, as shells complete it
    assert location == locations.Location(str(run_dir), str(run_dir / "checkpoints"), None)


def test_locate_a_step_directory(tmp_path):
    run_dir = _run_dir(tmp_path / "run", [10, 20])
    assert locations.locate(str(run_dir / "checkpoints" / "10")) == locations.Location(
        str(run_dir), str(run_dir / "checkpoints"), 10)


def test_locate_gives_absolute_paths_for_a_relative_one(tmp_path, monkeypatch):
    run_dir = _run_dir(tmp_path / "run", [10])
    monkeypatch.chdir(tmp_path)
    assert locations.locate(os.path.join("run", "checkpoints", "10")).run_dir == str(run_dir)


def test_locate_names_what_to_pass(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"'.*nowhere' does not exist; pass a vitjax workdir \(it holds "
                                                r"config.json\), its checkpoints/ directory or one "
                                                r"checkpoints/<step> directory"):
        locations.locate(str(tmp_path / "nowhere"))
    (tmp_path / "photos").mkdir()
    with pytest.raises(FileNotFoundError, match=r"photos' is not a vitjax run or checkpoint; pass a vitjax workdir"):
        locations.locate(str(tmp_path / "photos"))


def test_steps_are_the_finalised_ones_oldest_first(tmp_path):
    run_dir = _run_dir(tmp_path / "run", [100, 20, 3])
    checkpoints = run_dir / "checkpoints"
    (checkpoints / "200.orbax-checkpoint-tmp-1712345678").mkdir()  # a save still in progress, or cut short
    (checkpoints / "300").write_text("")  # not a directory
    assert locations.checkpoint_steps(str(checkpoints)) == [3, 20, 100]
    assert locations.checkpoint_steps(str(tmp_path / "absent")) == []


def test_chosen_step_is_the_named_one_else_the_newest(tmp_path):
    run_dir = _run_dir(tmp_path / "run", [10, 20])
    assert locations.chosen_step(locations.locate(str(run_dir))) == 20
    assert locations.chosen_step(locations.locate(str(run_dir / "checkpoints" / "10"))) == 10
    empty = _run_dir(tmp_path / "untrained")
    with pytest.raises(FileNotFoundError, match=r"no checkpoint in .*untrained/checkpoints: the run has not"):
        locations.chosen_step(locations.locate(str(empty)))


def test_set_aside_moves_a_step_beside_the_checkpoints(tmp_path):
    run_dir = _run_dir(tmp_path / "run", [10, 20])
    moved = locations.set_aside(str(run_dir / "checkpoints"), 20)
    assert os.path.dirname(moved) == str(run_dir / "corrupt_checkpoints")
    assert os.path.basename(moved).startswith("20-") and os.path.isdir(os.path.join(moved, locations.STATE))
    assert locations.checkpoint_steps(str(run_dir / "checkpoints")) == [10]

def test_checkpoint_params_from_each_way_of_naming_a_run(tmp_path):
    """Written by the trainer's Checkpointer, read back as numpy whichever way the run is named."""
    from vitjax.checkpoints.checkpointer import Checkpointer

    run_dir = _run_dir(tmp_path / "run")
    ckpt = Checkpointer(locations.checkpoint_dir(str(run_dir)), async_save=False)
    for step in (3, 7):
        ckpt.save(step, {"step": np.int32(step), "params": {"w": np.full((2,), step, np.float32)}}, {})
    ckpt.close()
    checkpoints = run_dir / "checkpoints"
    (checkpoints / "9.orbax-checkpoint-tmp-1712345678").mkdir()
    for path, step in ((run_dir, 7), (checkpoints, 7), (checkpoints / "3", 3)):
        params = reader.read_params(str(path))
        assert isinstance(params["w"], np.ndarray)
        np.testing.assert_array_equal(params["w"], [step, step])



def test_a_run_whose_checkpoints_were_deleted_is_named_so_not_as_untrained(trained_tiny_run, tmp_path):
    from vitjax import cli

    run_dir = str(tmp_path / "run")
    shutil.copytree(trained_tiny_run, run_dir)
    shutil.rmtree(locations.checkpoint_dir(run_dir))
    with pytest.raises(SystemExit, match=r"though the run trained to step 2 .*deleted or moved. Fix: put them back"):
        cli.main(["eval", "--workdir", run_dir])
    with pytest.raises(FileNotFoundError, match="deleted or moved"):
        reader.read_params(run_dir)
    untrained = _run_dir(tmp_path / "untrained")
    with pytest.raises(FileNotFoundError, match="has not saved one yet; train it further"):
        reader.read_params(str(untrained))
