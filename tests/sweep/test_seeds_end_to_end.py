"""End to end with seeds: `vitjax sweep` on a tiny ViT x 2 training-set sizes x 2 seeds (4 runs of 4 steps on
synthetic data, no few-shot probe), then `vitjax plot`: the summary averages each setting over its two seeds
(runs differing in `seed` and `data.subset_seed` share a group, runs differing in `data.train_size` do not),
the paired difference pairs runs by seed, and the figures are drawn from the summary. (That a model override
splits a group too is tests/sweep/test_aggregate.py's; one model here halves the sweep's subprocesses.)"""
import csv
import json
import statistics

import pytest

from tests.paths import TINY
from tests.sweep.sweep_files import run_sweep_file, run_vitjax
from vitjax.sweep import aggregate, table

SWEEP = f'''
TINY = {TINY!r}
FEWSHOT = None
BUDGET = "4 steps of batch 32, every run"
TITLE = "A tiny ViT, two seeds"


def get_runs(arg=None):
    budget = {{"total_steps": 4, "warmup_steps": 1, "log_every_steps": 2, "checkpoint_every_steps": 4}}
    return [(f"vit_n{{size}}_s{{seed}}", TINY, {{**budget, "data.train_size": size, "seed": seed,
                                              "data.subset_seed": seed}})
            for size in (128, 256) for seed in (0, 1)]
'''


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VITJAX_CPU_DEVICES", "1")  # one XLA device: these runs compile and start in half the time
        _, out, run = run_sweep_file(tmp_path_factory.mktemp("seeds"), SWEEP)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return out


def _csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_the_summary_averages_each_setting_over_its_two_seeds(swept):
    runs = {r["name"]: r for r in _csv(swept / table.CSV)}
    assert len(runs) == 4 and {r["seed"] for r in runs.values()} == {"0", "1"}
    summary = _csv(swept / table.SUMMARY_CSV)
    assert len(summary) == 2
    for group in summary:
        names = group["runs"].split()
        assert group["n"] == "2" and group["seeds"] == "0 1" and len(names) == 2
        accuracies = [float(runs[name]["accuracy"]) for name in names]
        assert float(group["accuracy_mean"]) == pytest.approx(statistics.fmean(accuracies), abs=1e-9)
        assert float(group["accuracy_std"]) == pytest.approx(statistics.stdev(accuracies), abs=1e-9)
        assert {runs[name]["train_size"] for name in names} == {group["train_size"]}
        assert group["accuracy_from"] == "final"  # no validation split in these runs


def test_paired_difference_on_the_swept_runs(swept):
    rows = table.read(str(swept))
    large = [r for r in rows if r["name"].startswith("vit_n256")]
    small = [r for r in rows if r["name"].startswith("vit_n128")]
    diff = aggregate.paired_difference(large, small)
    by_seed = {r["seed"]: r["accuracy"] for r in large}, {r["seed"]: r["accuracy"] for r in small}
    assert diff["seeds"] == [0, 1] and diff["n"] == 2
    assert diff["mean"] == pytest.approx(statistics.fmean(by_seed[0][s] - by_seed[1][s] for s in (0, 1)))


def test_plot_draws_means_over_seeds(swept, tmp_path):
    figures = tmp_path / "figures"
    run = run_vitjax("plot", str(swept), "--out", str(figures))
    assert run.returncode == 0, run.stderr[-3000:]
    for name in ("data_scaling", "compute"):
        assert (figures / f"{name}.png").stat().st_size > 10_000, name
    assert "patch_size: skipped" in run.stdout
    summary = {g["runs"]: g for g in _csv(swept / table.SUMMARY_CSV)}
    drawn = _csv(figures / "data_scaling.csv")
    assert len(drawn) == 2 and {r["n"] for r in drawn} == {"2"}
    for row in drawn:  # the figure's table is the summary's numbers
        assert row["accuracy_mean"] == summary[row["runs"]]["accuracy_mean"]
    assert len(_csv(figures / "compute.csv")) == 2
    definition = json.loads((swept / table.SWEEP).read_text())
    assert definition["budget"] == "4 steps of batch 32, every run" and definition["title"].startswith("A tiny ViT")
