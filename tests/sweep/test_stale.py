"""A run trained with another config than the sweep file now gives it is 'stale': never reused as
finished, never passed off in the table as the new override's result, redone with --redo_stale."""
import csv
import json
import os

import pytest

from tests.sweep.sweep_files import write_sweep_file
from vitjax import config as config_layer
from vitjax import rundir, xla_cpu
from vitjax.sweep import runner, spec, stale, table
from vitjax import config_compare

OLD = "def get_runs(arg=None):\n    return [('a', TINY, {'lr': 0.01}), ('b', TINY, {'lr': 0.05})]\n"
EDITED = "def get_runs(arg=None):\n    return [('a', TINY, {'lr': 0.02}), ('b', TINY, {'lr': 0.05})]\n"
NO_FEWSHOT = "FEWSHOT = None\n"


def _as_trained_on_a_cpu(run: spec.Run) -> dict:
    """The config.json `vitjax train` records for `run` on this CPU: its command line's config, which
    the CPU choices leave alone (vitjax/xla_cpu.py: they are the run's runtime)."""
    config = config_layer.load_config(run.config)
    command_line, _ = config_layer.overrides_from_argv(config_layer.override_flags(run.overrides))
    config_layer.apply_overrides(config, command_line)
    before = config_compare.config_to_dict(config)
    xla_cpu.choose(config)
    assert config_compare.config_to_dict(config) == before
    return before


def _finished(run_dir, recorded: dict, accuracy: float):
    os.makedirs(run_dir, exist_ok=True)
    for name, payload in ((rundir.CONFIG, recorded), (rundir.RESULTS, {"test_accuracy": accuracy, "steps": 30})):
        with open(os.path.join(run_dir, name), "w") as f:
            json.dump(payload, f)


@pytest.fixture
def trained_then_edited(tmp_path, monkeypatch):
    """Runs a and b trained (as on this CPU) from OLD; returns (the EDITED sweep, its directory)."""
    monkeypatch.setenv("VITJAX_CPU_DEVICES", "1")  # this process's JAX backend has started already
    monkeypatch.delenv(xla_cpu.ENV_DEFAULTS, raising=False)
    out = tmp_path / "out"
    old = spec.load(write_sweep_file(tmp_path, NO_FEWSHOT + OLD, "old.py"))
    for run, accuracy in zip(old.runs, (0.91, 0.87)):
        _finished(out / run.name, _as_trained_on_a_cpu(run), accuracy)
    return spec.load(write_sweep_file(tmp_path, NO_FEWSHOT + EDITED, "edited.py")), out


def _rows(out):
    with open(out / table.CSV) as f:
        return {row["name"]: row for row in csv.DictReader(f)}


def test_an_edited_override_makes_the_old_run_stale_not_finished(trained_then_edited, monkeypatch):
    sweep, out = trained_then_edited
    started = []
    monkeypatch.setattr(runner, "_stages", lambda *args: started.append(args) or "finished")
    lines = []
    assert runner.run_sweep(sweep, str(out), echo=lines.append) == 1
    assert started == []  # neither reused as finished nor resumed under the new config
    said = "\n".join(lines)
    assert "[1/2] a: left alone: stale:" in said and "lr: 0.01 -> 0.02" in said, said
    assert "--redo_stale" in said and f"delete {out / 'a'}" in said
    assert "[2/2] b: finished already, skipped" in said  # what the CPU trainer adds is no difference
    rows = _rows(out)
    assert rows["a"]["status"] == "stale" and rows["a"]["test_accuracy"] == ""  # not 0.91 beside lr=0.02
    assert json.loads(rows["a"]["overrides"]) == {"lr": 0.02} and "--redo_stale" in rows["a"]["error"]
    assert rows["b"]["status"] == "finished" and float(rows["b"]["test_accuracy"]) == 0.87
    assert "1 of 2 runs did not finish: a (stale)" in said


def test_redo_stale_sets_the_old_run_aside_and_trains_afresh(trained_then_edited, monkeypatch):
    sweep, out = trained_then_edited
    started = []
    monkeypatch.setattr(runner, "_stages", lambda run, run_dir, action, *rest: started.append(
        (run.name, action, sorted(os.listdir(run_dir)))) or "interrupted")
    lines = []
    runner.run_sweep(sweep, str(out), redo_stale=True, echo=lines.append)
    assert started == [("a", "train", [rundir.SWEEP_LOCK])]  # a fresh directory: nothing of the old run
    (aside,) = os.listdir(out / stale.STALE_DIR)
    assert aside.startswith("a-") and f"moved the old run to {out / stale.STALE_DIR / aside}" in "\n".join(lines)
    assert json.loads((out / stale.STALE_DIR / aside / rundir.RESULTS).read_text())["test_accuracy"] == 0.91
    assert sorted(_rows(out)) == ["a", "b"]  # the set-aside run is no row of the table


def test_dry_run_shows_the_stale_run_and_what_redo_stale_would_do(trained_then_edited):
    sweep, out = trained_then_edited
    lines = []
    runner.run_sweep(sweep, str(out), dry_run=True, echo=lines.append)
    assert lines[0] == "a: stale -> left alone (--redo_stale: move it to DIR/_stale/ and train afresh)"
    lines = []
    runner.run_sweep(sweep, str(out), dry_run=True, redo_stale=True, echo=lines.append)
    assert lines[0] == f"a: stale (moved to {out / stale.STALE_DIR}/ first) -> train" and "--config.lr=0.02" in lines[1]


def test_only_what_an_older_trainer_filled_in_on_a_cpu_is_excused():
    """Until 2026-12-03 the CPU choices were written into config.json: such a run is still current."""
    expected = {"lr": 0.01, "model": {"width": 8}, "compiler_options": {}}
    cpu = {"lr": 0.01, "model": {"width": 8, "kernels": list(xla_cpu.MODEL_KERNELS)},
           "compiler_options": dict(xla_cpu.COMPILER_OPTIONS)}
    assert stale.differences(cpu, expected) == {}
    assert stale.differences({**expected, "model": {"width": 8}}, expected) == {}  # an accelerator run
    other_kernels = {**cpu, "model": {"width": 8, "kernels": ["layernorm_vjp"]}}
    assert stale.differences(other_kernels, expected) == {"model.kernels": (["layernorm_vjp"], config_compare.ABSENT)}
    # The sweep asks for no kernels: a run trained with the CPU's kernels is not that run.
    no_kernels = {**expected, "model": {"width": 8, "kernels": []}}
    assert list(stale.differences(cpu, no_kernels)) == ["model.kernels"]
    assert list(stale.differences({**cpu, "lr": 0.02}, expected)) == ["lr"]


def test_a_nan_override_equals_itself():
    assert stale.differences({"lr": float("nan")}, {"lr": float("nan")}) == {}


def test_a_key_vitjax_gained_since_is_its_default_not_a_difference():
    """A run recorded before `data.val_size` existed ran without a validation split: the same as the
    sweep asking for the default, but not as the sweep asking for a split."""
    recorded = {"lr": 0.01, "data": {"name": "synthetic"}}
    assert stale.differences(recorded, {"lr": 0.01, "data": {"name": "synthetic", "val_size": 0}}) == {}
    assert stale.differences(recorded, {"lr": 0.01, "data": {"name": "synthetic", "val_size": 500}}) == {
        "data.val_size": (config_compare.ABSENT, 500)}
    # Either way round, and for the trainer's own check when it resumes a workdir.
    assert config_compare.config_changes({"lr": 0.01, "data": {"name": "synthetic", "classes": []}}, recorded) == []
    assert config_compare.config_changes({"lr": 0.01, "data": {"name": "synthetic", "classes": [1, 2]}}, recorded) == [
        "data.classes: [1, 2] -> '<absent>'"]
    # A key the schema does not have (a model field) is compared as absent.
    assert list(stale.differences({"model": {"width": 8}}, {"model": {"width": 8, "depth": 2}})) == ["model.depth"]
