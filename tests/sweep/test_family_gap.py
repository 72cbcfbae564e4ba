"""The family-gap figure: BiT minus ViT at each size, paired by seed, from a sweep's table rows."""
import csv

import pytest

from vitjax.sweep import plots


def _row(family, size, seed, accuracy):
    return {"name": f"{family}_n{size}_s{seed}", "status": "finished", "family": family, "model": family,
            "train_size": size, "seed": seed, "accuracy": accuracy, "accuracy_from": "best_val",
            "config": {"model_name": family, "seed": seed, "data": {"train_size": size, "subset_seed": seed}}}


def test_the_gap_is_paired_by_seed_and_written_with_its_table(tmp_path):
    rows = [_row("vit", 100, 0, 0.60), _row("bit", 100, 0, 0.70), _row("vit", 100, 1, 0.62),
            _row("bit", 100, 1, 0.68), _row("bit", 100, 2, 0.99),  # no ViT seed 2: left out
            _row("vit", 1000, 0, 0.80), _row("bit", 1000, 0, 0.81)]
    png, table = plots.family_gap(rows, str(tmp_path), {"title": "t", "budget": "b"})
    with open(table) as f:
        lines = list(csv.DictReader(f))
    assert [int(r["train_size"]) for r in lines] == [100, 1000]
    assert float(lines[0]["mean"]) == pytest.approx(0.08) and lines[0]["seeds"] == "0 1"
    assert float(lines[0]["std"]) == pytest.approx(0.0282843, rel=1e-4)  # stdev(0.10, 0.06)
    assert lines[1]["std"] == "" and float(lines[1]["mean"]) == pytest.approx(0.01)
    assert (tmp_path / "family_gap.png").stat().st_size > 0


def test_one_family_or_one_size_is_skipped(tmp_path):
    with pytest.raises(plots.Skipped):
        plots.family_gap([_row("vit", 100, 0, 0.6), _row("vit", 1000, 0, 0.7)], str(tmp_path))
    with pytest.raises(plots.Skipped):
        plots.family_gap([_row("vit", 100, 0, 0.6), _row("bit", 100, 0, 0.7)], str(tmp_path))


def test_a_budget_that_grows_with_the_data_stays_on_one_curve(tmp_path):
    """Runs whose total_steps grow with train_size (sweep/budget.py) are one line per family, not a line
    of the small sizes with the large size dropped for differing in its budget."""
    rows = []
    for size, steps in ((100, 50), (1000, 50), (10_000, 400)):
        for family in ("vit", "bit"):
            row = _row(family, size, 0, 0.5 + size / 1e5)
            row["config"]["total_steps"] = steps
            rows.append(row)
    _, table = plots.data_scaling(rows, str(tmp_path))
    with open(table) as f:
        lines = list(csv.DictReader(f))
    assert sorted((r["line"], int(r["train_size"])) for r in lines) == sorted(
        (family, size) for family in ("vit", "bit") for size in (100, 1000, 10_000))


def test_a_ladders_rungs_at_one_size_get_a_line_each_by_their_budget(tmp_path):
    """A budget ladder (experiments/convergence.py) trains 1x, 2x and 4x at every size: each rung is its own
    line, named by its budget; one line through all of them would pass through one rung at random."""
    rows = []
    for size, base in ((100, 50), (1000, 400)):
        for multiple in (1, 2, 4):
            row = _row("vit", size, 0, 0.5 + multiple / 100 + size / 1e5)
            row["name"] = f"vit_n{size}_s0_x{multiple}"
            row["config"]["total_steps"] = base * multiple
            row["examples_seen"] = 128 * base * multiple
            rows.append(row)
    _, table = plots.data_scaling(rows, str(tmp_path))
    with open(table) as f:
        drawn = {(r["line"], int(r["train_size"])): float(r["accuracy_mean"]) for r in csv.DictReader(f)}
    assert drawn == {(f"vit, {m}x budget", n): pytest.approx(0.5 + m / 100 + n / 1e5)
                     for m in (1, 2, 4) for n in (100, 1000)}
    # One budget at one size asked for two ways (steps, examples): two groups the figure cannot tell apart.
    twin = {**rows[0], "name": "vit_n100_s0_x1_other",
            "config": {**rows[0]["config"], "total_steps": 0, "total_examples": 128 * 50}}
    with pytest.raises(plots.Skipped, match="vit_n100_s0_x1_other"):
        plots.data_scaling(rows + [twin], str(tmp_path))
