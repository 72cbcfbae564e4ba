"""experiments/regularisation.py's parts: the registered grid, and its extension one step past the edge."""
import csv
import os

import pytest

from vitjax.config import load_module

from tests.paths import ROOT

regularisation = load_module(os.path.join(ROOT, "experiments", "regularisation.py"))


def _runs(part):
    return {name: overrides for name, _, overrides in regularisation.get_runs(f"part={part}")}


def test_the_tuning_grid_is_the_three_registered_strengths():
    expected = [f"{f}_{s}_n5500_s0" for f in ("vit", "bit") for s in ("light", "medium", "heavy")]
    assert sorted(_runs("tune")) == sorted(expected)


def test_the_extension_reruns_light_beside_lighter_each_setting_halved():
    runs = _runs("extend")
    assert sorted(runs) == sorted(f"{f}_{s}_n5500_s0" for f in ("vit", "bit") for s in ("light", "lighter"))
    for family in ("vit", "bit"):
        light, lighter = runs[f"{family}_light_n5500_s0"], runs[f"{family}_lighter_n5500_s0"]
        assert "pad=2" in light["data.pp_train"] and "pad=1" in lighter["data.pp_train"]
        for key in ("label_smoothing", "weight_decay") + (("model.droppath_rate",) if family == "vit" else ()):
            assert lighter[key] == light[key] / 2
        assert lighter["data.mixup_alpha"] == light["data.mixup_alpha"] == 0.0
        # Everything else (data size, seed, budget) is the pair's common protocol.
        common = set(light) - {"data.pp_train", "label_smoothing", "weight_decay", "model.droppath_rate"}
        assert {k: light[k] for k in common} == {k: lighter[k] for k in common}
    assert runs["vit_light_n5500_s0"]["total_steps"] == 1_200 and runs["bit_light_n5500_s0"]["seed"] == 0


def test_the_converged_arm_trains_the_extensions_committed_pick_and_the_curve_stays_on_part_tunes():
    """R1-R3 were decided on part tune's pick; the ladders (R1c-R3c) take part extend's, read here off its
    committed table: the higher best-validation accuracy of each family's pair."""
    with open(os.path.join(ROOT, "experiments", "results", "regularisation_extend", "results.csv")) as f:
        rows = list(csv.DictReader(f))
    for family in ("vit", "bit"):
        pair = {r["name"].split("_")[1]: float(r["best_val_accuracy"]) for r in rows if r["family"] == family}
        assert sorted(pair) == ["light", "lighter"]
        assert regularisation.EXTENDED_CHOSEN[family] == max(pair, key=pair.get)
    curve, converged = _runs("curve"), _runs("converged")
    assert {name.split("_")[1] for name in curve} == {"light"}
    assert len(converged) == len(curve)
    for name, overrides in curve.items():
        family = name.split("_")[0]
        twin = converged[name.replace("_light_", f"_{regularisation.EXTENDED_CHOSEN[family]}_")]
        assert twin == {**overrides, **regularisation.regularisation(family, regularisation.EXTENDED_CHOSEN[family])}


def test_the_lower_end_reruns_lighter_beside_the_plain_configs_as_they_stand():
    runs = _runs("lower")
    assert sorted(runs) == sorted(f"{f}_{s}_n5500_s0" for f in ("vit", "bit") for s in ("lighter", "none"))
    for family in ("vit", "bit"):
        none, lighter = runs[f"{family}_none_n5500_s0"], runs[f"{family}_lighter_n5500_s0"]
        assert lighter == _runs("extend")[f"{family}_lighter_n5500_s0"]
        assert none["data.pp_train"] == "value_range(-1, 1)"  # the plain arm's: no crop
        assert not {"label_smoothing", "weight_decay", "data.mixup_alpha", "model.droppath_rate"} & set(none)
        assert {k: v for k, v in lighter.items() if k in none and k != "data.pp_train"} == {
            k: v for k, v in none.items() if k != "data.pp_train"}


def test_the_curves_take_seeds_added_above_5500_and_the_tuning_parts_refuse_them():
    """R2c's third seed at 55k (experiments/README.md, "R2c's seed 2"): large_seeds=3 adds seed 2 above
    5.5k only, each run the protocol's with that seed; a part that would ignore the key refuses it."""
    added = set(_runs("converged,large_seeds=3")) - set(_runs("converged"))
    assert added == {f"{f}_lighter_n{n}_s2" for f in ("vit", "bit") for n in (17_000, 55_000)}
    run = _runs("converged,large_seeds=3")["vit_lighter_n55000_s2"]
    assert (run["seed"], run["data.subset_seed"], run["data.train_size"]) == (2, 2, 55_000)
    with pytest.raises(ValueError, match="large_seeds: not read by part=tune"):
        regularisation.get_runs("part=tune,large_seeds=3")
