"""Runs averaged over seeds (vitjax/sweep/aggregate.py) and the summary written beside the table,
checked on hand-made rows against numbers worked out by hand."""
import csv
import json
import math

import pytest

from vitjax import xla_cpu
from vitjax.sweep import aggregate, table


def _row(name, family, train_size, seed, accuracy, lr=1e-3, **extra):
    """A finished run's table row, with the config fields grouping looks at."""
    config = {"seed": seed, "lr": lr, "model_name": family, "data": {"train_size": train_size, "subset_seed": seed}}
    return {"name": name, "status": "finished", "family": family, "model": family.upper(), "patch_size": None,
            "train_size": train_size, "params": 100, "flops_per_step": 10.0, "train_flops": 1000.0 + seed,
            "examples_seen": 64, "steps": 2, "img_per_sec": 5.0, "seed": seed, "accuracy": accuracy,
            "accuracy_from": "final", "test_accuracy": accuracy, "config": config, **extra}


ROWS = [_row("vit_a_s0", "vit", 500, 0, 0.50), _row("vit_a_s1", "vit", 500, 1, 0.60),
        _row("vit_a_s2", "vit", 500, 2, 0.70),
        _row("bit_a_s0", "bit", 500, 0, 0.55), _row("bit_a_s1", "bit", 500, 1, 0.75),
        _row("bit_a_s3", "bit", 500, 3, 0.99),  # no ViT run of seed 3: left out of the pairing
        _row("vit_b_s0", "vit", 1000, 0, 0.80)]


def _by_runs(groups):
    return {" ".join(g["runs"]): g for g in groups}


def test_groups_average_over_seeds_with_the_sample_std():
    groups = _by_runs(aggregate.groups(ROWS))
    vit = groups["vit_a_s0 vit_a_s1 vit_a_s2"]
    assert vit["n"] == 3 and vit["seeds"] == [0, 1, 2]
    assert vit["accuracy_mean"] == pytest.approx(0.60)
    # ((-0.1)^2 + 0 + 0.1^2) / (3 - 1) = 0.01
    assert vit["accuracy_std"] == pytest.approx(0.1)
    assert (vit["accuracy_min"], vit["accuracy_max"]) == (0.50, 0.70)
    assert vit["train_flops"] == pytest.approx(1001.0) and vit["train_size"] == 500 and vit["family"] == "vit"
    bit = groups["bit_a_s0 bit_a_s1 bit_a_s3"]
    assert bit["accuracy_mean"] == pytest.approx((0.55 + 0.75 + 0.99) / 3)
    # mean 0.7633...; deviations -0.21333, -0.01333, 0.22667; squares 0.045511 + 0.000178 + 0.051378 = 0.097067; / 2 = 0.048533
    assert bit["accuracy_std"] == pytest.approx(math.sqrt(0.048533), rel=1e-4)
    assert "seed" not in bit["config"] and "subset_seed" not in bit["config"]["data"]


def test_one_run_has_no_std_and_an_empty_csv_cell():
    (single,) = [g for g in aggregate.groups(ROWS) if g["runs"] == ["vit_b_s0"]]
    assert single["n"] == 1 and math.isnan(single["accuracy_std"]) and single["accuracy_mean"] == 0.80
    assert aggregate.csv_row(single)["accuracy_std"] == ""


def test_a_config_difference_other_than_the_seed_splits_the_group():
    rows = [_row("a0", "vit", 500, 0, 0.5), _row("a1", "vit", 500, 1, 0.6), _row("b0", "vit", 500, 0, 0.9, lr=0.1)]
    assert sorted(g["runs"] for g in aggregate.groups(rows)) == [["a0", "a1"], ["b0"]]


def _student(name, seed, teacher):
    row = _row(name, "deit", 500, seed, 0.5 + 0.01 * seed)
    row["config"]["distillation"] = {"teacher": teacher, "model_name": "bit"}
    return row


def test_students_of_their_own_seeds_teacher_form_one_group_and_two_teachers_at_one_seed_are_refused():
    rows = [_student(f"deit_s{s}", s, f"teachers/bit_s{s}.npz") for s in range(3)]
    (group,) = aggregate.groups(rows)
    assert group["n"] == 3 and group["accuracy_mean"] == pytest.approx(0.51)
    assert group["config"]["distillation"] == {"model_name": "bit"}  # the teacher varies as the seed does
    with pytest.raises(ValueError, match="deit_s0 and other_s0 have one config and seed 0 but different "
                                         "distillation.teacher"):
        aggregate.groups(rows + [_student("other_s0", 0, "elsewhere/bit_s0.npz")])


def test_a_rung_branched_off_a_trunk_groups_with_another_seeds_run_trained_whole():
    """Seed 0's 2x rung was a cooldown branched off its 4x trunk; seed 1 trained 2x as its own trunk,
    keeping the 1x branch step: one budget, one group. Another budget stays apart."""
    branched, whole, longer = (_row("v_s0_x2", "vit", 500, 0, 0.5), _row("v_s1_x2", "vit", 500, 1, 0.6),
                               _row("v_s0_x4", "vit", 500, 0, 0.7))
    branched["config"].update(total_steps=200, branch_from="runs/v_s0_x4")
    whole["config"].update(total_steps=200, keep_checkpoint_steps=(80,))
    longer["config"].update(total_steps=400, keep_checkpoint_steps=(80, 160))
    groups = sorted(g["runs"] for g in aggregate.groups([branched, whole, longer]))
    assert groups == [["v_s0_x2", "v_s1_x2"], ["v_s0_x4"]]


def test_a_key_one_run_lacks_counts_as_its_default():
    # A run recorded before vitjax gained `objective` trained as its default, 'supervised', does.
    old, new, other = (_row("a0", "vit", 500, 0, 0.5), _row("a1", "vit", 500, 1, 0.6),
                       _row("b1", "vit", 500, 1, 0.7))
    new["config"]["objective"] = "supervised"
    other["config"]["objective"] = "distillation"
    assert sorted(g["runs"] for g in aggregate.groups([old, new, other])) == [["a0", "a1"], ["b1"]]


def test_a_runtime_choice_an_older_vitjax_wrote_into_the_config_does_not_split_a_group():
    """Before 2026-12-04 a CPU run's config.json held its model kernels and XLA options (now recorded
    apart): such a run and today's of the same config and another seed are one group; other kernels are not."""
    old, new, other = (_row("a0", "vit", 500, 0, 0.5), _row("a1", "vit", 500, 1, 0.6), _row("b1", "vit", 500, 1, 0.7))
    old["config"]["model"] = {"kernels": list(xla_cpu.MODEL_KERNELS)}
    old["config"]["compiler_options"] = dict(xla_cpu.COMPILER_OPTIONS)
    other["config"]["model"] = {"kernels": list(xla_cpu.MODEL_KERNELS)[:1]}
    assert sorted(g["runs"] for g in aggregate.groups([old, new, other])) == [["a0", "a1"], ["b1"]]


def test_groups_ignore_runs_not_finished_and_names():
    rows = [_row("x", "vit", 500, 0, 0.5), _row("completely_other_name", "vit", 500, 1, 0.7),
            {**_row("failed", "vit", 500, 2, None), "status": "failed"}]
    (group,) = aggregate.groups(rows)
    assert group["runs"] == ["x", "completely_other_name"] and group["accuracy_mean"] == pytest.approx(0.6)


def test_paired_difference_uses_only_the_seeds_both_have():
    vit = [r for r in ROWS if r["name"].startswith("vit_a")]
    bit = [r for r in ROWS if r["name"].startswith("bit_a")]
    diff = aggregate.paired_difference(bit, vit)
    assert diff["seeds"] == [0, 1] and diff["n"] == 2
    assert diff["differences"] == pytest.approx([0.05, 0.15])
    assert diff["mean"] == pytest.approx(0.10)
    assert diff["std"] == pytest.approx(math.sqrt(0.005))  # ((-0.05)^2 + 0.05^2) / 1
    assert aggregate.family_difference(ROWS, "bit", "vit", 500) == diff
    with pytest.raises(ValueError, match="0 groups of family 'bit' at train_size 1000"):
        aggregate.family_difference(ROWS, "bit", "vit", 1000)


def test_a_seed_twice_in_one_group_is_refused():
    with pytest.raises(ValueError, match="seed 0 appears twice"):
        aggregate.paired_difference([_row("a", "vit", 5, 0, 0.5), _row("b", "vit", 5, 0, 0.6)], ROWS)


def test_the_table_writes_the_summary_beside_it(tmp_path):
    rows = [{**r, "error": "", "overrides": {}} for r in ROWS]
    table.write(str(tmp_path), rows)
    with open(tmp_path / table.SUMMARY_CSV) as f:
        summary = {r["runs"]: r for r in csv.DictReader(f)}
    assert float(summary["vit_a_s0 vit_a_s1 vit_a_s2"]["accuracy_mean"]) == pytest.approx(0.60)
    assert summary["vit_a_s0 vit_a_s1 vit_a_s2"]["seeds"] == "0 1 2"
    assert summary["vit_b_s0"]["n"] == "1" and summary["vit_b_s0"]["accuracy_std"] == ""
    saved = json.loads((tmp_path / table.SUMMARY_JSON).read_text())
    assert len(saved["groups"]) == 3 and saved["columns"][:6] == ["family", "model", "patch_size", "train_size",
                                                                   "n", "seeds"]


def test_the_headline_accuracy_is_at_best_validation_where_there_was_one():
    assert table.headline_accuracy({"test_accuracy": 0.7, "test_accuracy_at_best": 0.8}) == (0.8, "best_val")
    assert table.headline_accuracy({"test_accuracy": 0.7}) == (0.7, "final")
    assert table.headline_accuracy({}) == (None, None)


def test_a_figure_line_joins_sizes_whose_configs_differ_only_by_a_defaulted_key():
    from vitjax.sweep import plots
    small, large = _row("s0", "vit", 500, 0, 0.5), _row("l0", "vit", 1000, 0, 0.6)
    large["config"]["objective"] = "supervised"  # recorded by newer code; `small` ran as this default
    groups = aggregate.groups([small, large])
    (line,) = plots._groups(groups, "train_size", varying=("data.train_size",))
    assert [g["train_size"] for g in line[2]] == [500, 1000]
