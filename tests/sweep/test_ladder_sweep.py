"""A budget ladder as a sweep: the trunk and its branches run in order, the branches find the trunk
through `{sweep_dir}`, and experiments/convergence.py's runs are the ladder the README registers."""
import json
import os

import pytest

from vitjax import rundir
from vitjax.config import load_module
from vitjax.sweep import runner, spec
from vitjax import metrics_log
from tests.sweep.sweep_files import write_sweep_file

from tests.paths import ROOT

LADDER = """
def get_runs(arg=None):
    wsd = {"schedule": "wsd", "cooldown_fraction": 0.25, "checkpoint_every_steps": 100, "log_every_steps": 4}
    return [("trunk", TINY, {**wsd, "total_steps": 24, "keep_checkpoint_steps": (9,)}),
            ("rung_12", TINY, {**wsd, "total_steps": 12, "branch_from": "{sweep_dir}/trunk"})]
"""


def test_a_ladder_sweep_trains_its_trunk_then_branches_off_it(tmp_path):
    sweep = spec.load(write_sweep_file(tmp_path, LADDER))
    workdir = str(tmp_path / "runs")
    assert runner.run_sweep(sweep, workdir, fewshot=False, echo=lambda *a: None) == 0
    rung = os.path.join(workdir, "rung_12")
    assert rundir.read_json(rung, rundir.CONFIG)["branch_from"] == os.path.join(os.path.abspath(workdir), "trunk")
    assert [row["step"] for row in metrics_log.read_metrics(rung) if "loss" in row][0] == 12  # only its cooldown
    with open(os.path.join(workdir, "results.json")) as f:
        assert {r["name"]: r["status"] for r in json.load(f)["runs"]} == {"trunk": "finished", "rung_12": "finished"}
    # Run again: the resolved directory is the recorded one, so both are finished, not stale.
    lines = []
    assert runner.run_sweep(spec.load(write_sweep_file(tmp_path, LADDER)), workdir, fewshot=False, echo=lines.append) == 0
    assert not any("stale" in str(line) for line in lines)


def test_the_convergence_sweep_is_the_registered_ladder():
    sweep = spec.load(os.path.join(ROOT, "experiments", "convergence.py") + ":part=1")
    runs = {r.name: r.overrides for r in sweep.runs}
    assert len(runs) == 2 * 3 * 3  # two families, three sizes, three rungs
    trunk, rung = runs["vit_n55000_s0_x4"], runs["vit_n55000_s0_x2"]
    assert trunk["total_steps"] == 4 * 3_438 and trunk["schedule"] == "wsd"
    assert rung["total_steps"] == 2 * 3_438 and rung["branch_from"] == "{sweep_dir}/vit_n55000_s0_x4"
    # The trunk keeps exactly the steps where the 1x and 2x cooldowns start (the last 20% of each).
    assert list(trunk["keep_checkpoint_steps"]) == [3_438 - round(0.2 * 3_438), 6_876 - round(0.2 * 6_876)]
    assert runs["bit_n550_s0_x1"]["total_steps"] == 1_200


def test_the_seeds_part_trains_each_family_at_its_committed_converged_budget(tmp_path):
    convergence = load_module(os.path.join(ROOT, "experiments", "convergence.py"))
    chosen = tmp_path / "convergence.json"
    chosen.write_text(json.dumps({"vit_n55000": {"chosen": 4}, "bit_n55000": {"chosen": 1}}))
    runs = {name: overrides for name, _, overrides in
            convergence.converged_runs("vit", "vit.py", 55_000, 1, str(chosen)) +
            convergence.converged_runs("bit", "bit.py", 55_000, 1, str(chosen))}
    # The ViT: a 4x trunk and the 1x rung (C4's baseline) branched off it; the BiT: its 1x alone.
    assert sorted(runs) == ["bit_n55000_s1_x1", "vit_n55000_s1_x1", "vit_n55000_s1_x4"]
    assert runs["vit_n55000_s1_x4"]["total_steps"] == 4 * 3_438
    assert runs["vit_n55000_s1_x1"]["branch_from"] == "{sweep_dir}/vit_n55000_s1_x4"
    assert runs["bit_n55000_s1_x1"]["total_steps"] == 3_438 and runs["bit_n55000_s1_x1"]["seed"] == 1
    with pytest.raises(ValueError, match="no ladder for vit_n5500"):
        convergence.converged_runs("vit", "vit.py", 5_500, 1, str(chosen))


def test_the_one_host_part_repeats_every_term_of_seed_0_and_the_5500_terms_of_seeds_1_and_2():
    sweep = spec.load(os.path.join(ROOT, "experiments", "convergence.py") + ":part=onehost")
    names = [r.name for r in sweep.runs]
    assert len(names) == len(set(names))
    for size in (550, 5_500, 55_000):  # both families of seed 0 at every size C2-C4 read
        assert {n.rsplit("_x", 1)[0] for n in names if f"_n{size}_s0_" in n} == {f"vit_n{size}_s0", f"bit_n{size}_s0"}
    assert {n for n in names if "_s0_" not in n} == {f"{f}_n5500_s{s}_x1" for f in ("vit", "bit") for s in (1, 2)}


def test_the_accelerator_data_scaling_sweep_has_the_same_ladder():
    """Dry-run only (no accelerator here): each family and size a 4x trunk and two branches, the same rule."""
    sweep = spec.load(os.path.join(ROOT, "experiments", "data_scaling_imagenet.py") + ":ladder=true")
    runs = {r.name: r.overrides for r in sweep.runs}
    assert len(runs) == 2 * 4 * 3
    trunk, rung = runs["vit_b16_n1.3M_s0_x4"], runs["vit_b16_n1.3M_s0_x1"]
    assert trunk["total_steps"] == 4 * 95_000 and trunk["schedule"] == "wsd"
    assert list(trunk["keep_checkpoint_steps"]) == [95_000 - 19_000, 190_000 - 38_000]
    assert rung["total_steps"] == 95_000 and rung["branch_from"] == "{sweep_dir}/vit_b16_n1.3M_s0_x4"


def test_the_accelerator_patch_size_sweep_has_the_same_ladder():
    sweep = spec.load(os.path.join(ROOT, "experiments", "patch_size_imagenet.py") + ":ladder=true")
    runs = {r.name: r.overrides for r in sweep.runs}
    assert sorted(runs) == sorted(f"vit_b{p}_s0_x{m}" for p in (32, 16, 8) for m in (1, 2, 4))
    assert runs["vit_b8_s0_x2"]["branch_from"] == "{sweep_dir}/vit_b8_s0_x4"
    assert runs["vit_b8_s0_x4"]["model.variant"] == "B/8" and runs["vit_b8_s0_x4"]["total_steps"] == 4 * 285_645


def test_an_arms_ladders_are_its_own_sweep_files_runs_retimed():
    """D4c's DeiT keeps its teacher and augmentation; the model-size arm ladders only the widths the plain
    configs are not, at 550 and 55k; every run of seed 0 only."""
    deit = {r.name: r.overrides for r in
            spec.load(os.path.join(ROOT, "experiments", "convergence.py") + ":part=arm,arm=deit,controls=false").runs}
    assert sorted(deit) == [f"deitaug_n55000_s0_x{m}" for m in (1, 2, 4)]
    trunk = deit["deitaug_n55000_s0_x4"]
    assert trunk["total_steps"] == 4 * 3_438 and trunk["schedule"] == "wsd"
    assert trunk["distillation.teacher"].endswith("bit_n55000_s0.npz") and "data.pp_train" not in trunk
    assert deit["deitaug_n55000_s0_x1"]["branch_from"] == "{sweep_dir}/deitaug_n55000_s0_x4"
    size = {r.name: r.overrides for r in
            spec.load(os.path.join(ROOT, "experiments", "convergence.py") + ":part=arm,arm=size,controls=false").runs}
    assert {n.rsplit("_x", 1)[0] for n in size} == {f"{m}_n{n}_s0" for m in ("vit_w32", "bit_w4") for n in (550, 55_000)}
    assert size["vit_w32_n550_s0_x4"]["model.width"] == 32 and size["bit_w4_n55000_s0_x4"]["model.width"] == 4
    reg = {r.name: r.overrides for r in
           spec.load(os.path.join(ROOT, "experiments", "convergence.py") + ":part=arm,arm=reg,controls=false").runs}
    assert len(reg) == 2 * 4 * 3 and reg["vit_lighter_n1700_s0_x4"]["label_smoothing"] == 0.05


def test_an_arms_part_trains_the_plain_runs_it_pairs_with_on_its_host():
    """Each seed and size of the arm's part brings its controls at the committed plain ladders' chosen
    multiples (convergence.json: the BiT at 1x at 55k, the ViT at 2x there, so 1x beside it): the same
    overrides as the plain arm's converged runs."""
    convergence = load_module(os.path.join(ROOT, "experiments", "convergence.py"))
    deit = {name: overrides for name, _, overrides in convergence.get_runs("part=arm,arm=deit")}
    assert sorted(n for n in deit if not n.startswith("deitaug")) == ["bit_n55000_s0_x1"]
    plain = {name: o for name, _, o in convergence.converged_runs("bit", "configs/fashion_mnist/bit.py", 55_000, 0)}
    assert deit["bit_n55000_s0_x1"] == plain["bit_n55000_s0_x1"]
    size = {name for name, _, _ in convergence.get_runs("part=arm,arm=size")}
    assert {"vit_n55000_s0_x2", "vit_n55000_s0_x1", "bit_n550_s0_x4", "bit_n550_s0_x1", "vit_n550_s0_x1"} <= size
    reg = {name for name, _, _ in convergence.get_runs("part=arm,arm=reg")}
    assert len(reg - {name for name, _, _ in convergence.get_runs("part=arm,arm=reg,controls=false")}) == 10
    with pytest.raises(ValueError, match="controls='no'"):
        convergence.get_runs("part=arm,arm=reg,controls=no")


def test_an_arm_splits_by_size_into_parts_that_together_are_the_whole():
    """`sizes=A+B` keeps those sizes' ladders and controls: the reg arm's three parts are its whole part."""
    convergence = load_module(os.path.join(ROOT, "experiments", "convergence.py"))
    names = lambda arg: [name for name, _, _ in convergence.get_runs(arg)]  # noqa: E731
    whole = names("part=arm,arm=reg")
    parts = [names(f"part=arm,arm=reg,sizes={sizes}") for sizes in ("550+1700", "5500", "55000")]
    assert sorted(sum(parts, [])) == sorted(whole) and all(parts)
    assert all("_n55000_" in name for name in parts[2])
    with pytest.raises(ValueError, match="arm 'size' reads sizes 550\\+55000"):
        convergence.get_runs("part=arm,arm=size,sizes=5500")
    with pytest.raises(ValueError, match="sizes='55k'"):
        convergence.get_runs("part=arm,arm=size,sizes=55k")


def test_an_arms_other_seeds_train_at_the_multiple_its_ladder_chose(tmp_path, monkeypatch):
    convergence = load_module(os.path.join(ROOT, "experiments", "convergence.py"))
    chosen = tmp_path / "convergence.json"
    chosen.write_text(json.dumps({"deitaug_n55000": {"chosen": 2}}))
    monkeypatch.setattr(convergence, "arm_chosen_file", lambda arm: str(chosen))
    runs = {name: overrides for name, _, overrides in convergence.get_runs("part=arm_seeds,arm=deit")}
    assert sorted(runs) == ["bit_n55000_s1_x1", "deitaug_n55000_s1_x1", "deitaug_n55000_s1_x2"]  # with its control
    assert runs["deitaug_n55000_s1_x2"]["seed"] == 1 and "distillation.teacher" in runs["deitaug_n55000_s1_x2"]
    with pytest.raises(ValueError, match="the arms are deit, size, reg"):
        convergence.get_runs("part=arm,arm=dropout")


def test_seeds_past_the_protocols_train_alone_with_their_own_teacher_and_control(tmp_path, monkeypatch):
    """`seeds=2` (D4c's added seed): only seed 2's rungs and control, its subset and its own teacher, as
    the arm's sweep file gives them with large_seeds=3; the plain sweep gives that teacher's run."""
    convergence = load_module(os.path.join(ROOT, "experiments", "convergence.py"))
    chosen = tmp_path / "convergence.json"
    chosen.write_text(json.dumps({"deitaug_n55000": {"chosen": 4}}))
    monkeypatch.setattr(convergence, "arm_chosen_file", lambda arm: str(chosen))
    runs = {name: overrides for name, _, overrides in convergence.get_runs("part=arm_seeds,arm=deit,seeds=2")}
    assert sorted(runs) == ["bit_n55000_s2_x1", "deitaug_n55000_s2_x1", "deitaug_n55000_s2_x4"]
    student = runs["deitaug_n55000_s2_x4"]
    assert (student["seed"], student["data.subset_seed"]) == (2, 2)
    assert student["distillation.teacher"].endswith("deit_teachers/bit_n55000_s2.npz")
    for wrong, message in (("part=arm_seeds,arm=deit,seeds=0", "seed 0's runs are the arm's ladders"),
                           ("part=arm,arm=deit,seeds=2", "seeds= chooses part=arm_seeds's seeds"),
                           ("part=arm_seeds,arm=deit,seeds=two", "seeds='two': integers joined by '\\+'")):
        with pytest.raises(ValueError, match=message):
            convergence.get_runs(wrong)
    plain = load_module(os.path.join(ROOT, "experiments", "data_scaling.py"))
    assert "bit_n55000_s2" in {name for name, _, _ in plain.get_runs("large_seeds=3")}
    assert "bit_n55000_s2" not in {name for name, _, _ in plain.get_runs()}


@pytest.mark.parametrize("sweep_file, wrong, message", [
    ("convergence.py", "prat=1", "unknown key 'prat'.*did you mean 'part'"),
    ("convergence.py", "part=1,sizes=550", "sizes: not read by part=1, which reads no other key"),
    ("convergence.py", "part=seeds,arm=reg", "arm: not read by part=seeds"),
    ("convergence.py", "part=3", "part='3': the parts are 1, 2, seeds, onehost, small, arm, arm_seeds, climb"),
    ("convergence.py", "part=climb,arm=reg", "arm: not read by part=climb, which reads ladders"),
    ("tuning.py", "part=small,seed=1", "seed: not read by part=small, which reads no other key"),
    ("tuning.py", "part=extend", "part=extend needs from=..."),
    ("tuning.py", "part=bracket,seed=1", "seed: not read by part=bracket, which reads from"),
    ("tuning.py", "part=large,vit_lr=4e-3", "part=large needs wd_vit=..., multiple_vit=..., bit_lr=..."),
    ("tuning.py", "part=primed,sed=1", "unknown key 'sed'.*did you mean 'seed'"),
    ("tuning.py", "part=large,vit_lr=abc,bit_lr=8e-3,wd_vit=0.05,wd_bit=0.3,multiple_vit=2,multiple_bit=1",
     "vit_lr='abc': expected a number"),
    ("tuning.py", "part=large,vit_lr=4e-3,bit_lr=8e-3,wd_vit=0.05,wd_bit=0.3,multiple_vit=2.5,multiple_bit=1",
     "multiple_vit=2.5: expected an int"),
    ("contrastive.py", "part=batch_s0,encoders=runs/encoders", "encoders: not read by part=batch_s0"),
    ("sam_init.py", "part=pretrain,encoders=runs/e", "encoders: not read by part=pretrain"),
    ("swin_deit.py", "part=swin,teachers=runs/t", "teachers: not read by part=swin, which reads large_seeds"),
    ("self_supervised.py", "part=mae,pretrained=runs/p", "pretrained: not read by part=mae"),
    ("patch_size.py", "seeds=5", "unknown key 'seeds' in ':seeds=5'; known keys: none"),
    ("transfer.py", "sizes=550", "unknown key 'sizes'"),
])
def test_a_study_sweeps_argument_that_it_would_not_read_is_refused_by_name(sweep_file, wrong, message):
    """A typo or a key another part reads must fail before any run, not train the part without it."""
    sweep = load_module(os.path.join(ROOT, "experiments", sweep_file))
    with pytest.raises(ValueError, match=message):
        sweep.get_runs(wrong)


def test_the_size_arm_takes_seeds_past_the_protocols_at_55k():
    convergence = load_module(os.path.join(ROOT, "experiments", "convergence.py"))
    names = [name for name, _, _ in convergence.get_runs("part=arm_seeds,arm=size,seeds=2,sizes=55000,controls=false")]
    assert names == ["vit_w32_n55000_s2_x2", "vit_w32_n55000_s2_x1", "bit_w4_n55000_s2_x1"]


def test_the_climb_retrains_each_capped_ladder_one_rung_higher_as_one_trunk(tmp_path, monkeypatch):
    """part=climb: every seed-0 ladder a committed convergence.json marks capped (the plain arm's and the
    arms'), as a 1x-8x ladder whose 8x trunk keeps the shorter rungs' branch points; nothing uncapped."""
    convergence = load_module(os.path.join(ROOT, "experiments", "convergence.py"))
    plain, arm = tmp_path / "plain.json", tmp_path / "reg.json"
    plain.write_text(json.dumps({"bit_n550": {"family": "bit", "size": 550, "capped": True},
                                 "vit_n550": {"family": "vit", "size": 550, "capped": False}}))
    arm.write_text(json.dumps({"vit_lighter_n1700": {"family": "vit_lighter", "size": 1700, "capped": True},
                               "bit_lighter_n1700": {"family": "bit_lighter", "size": 1700, "capped": False}}))
    monkeypatch.setattr(convergence, "CHOSEN", str(plain))
    monkeypatch.setattr(convergence, "arm_chosen_file", lambda name: str(arm if name == "reg" else tmp_path / "none"))
    runs = {name: overrides for name, _, overrides in convergence.get_runs("part=climb")}
    assert list(runs) == [f"{ladder}_s0_x{m}" for ladder in ("bit_n550", "vit_lighter_n1700") for m in (8, 1, 2, 4)]
    trunk = runs["vit_lighter_n1700_s0_x8"]
    assert trunk["total_steps"] == 8 * 1_200 and trunk["keep_checkpoint_steps"] == (960, 1_920, 3_840)
    assert runs["vit_lighter_n1700_s0_x4"]["branch_from"].endswith("/vit_lighter_n1700_s0_x8")
    assert trunk["label_smoothing"] == 0.05 and trunk["seed"] == 0  # the arm's own run, re-timed
    assert list({n: 0 for n, _, _ in convergence.get_runs("part=climb,ladders=bit")}) == [
        f"bit_n550_s0_x{m}" for m in (8, 1, 2, 4)]
    with pytest.raises(ValueError, match="ladders=vit: the capped ladders are bit, vit_lighter"):
        convergence.get_runs("part=climb,ladders=vit")


def test_the_climbs_ladders_are_read_like_the_protocols(tmp_path):
    """A finished 1x-8x ladder is a ladder to readouts.convergence; its rule may now stop at 4x."""
    readouts = load_module(os.path.join(ROOT, "experiments", "readouts.py"))
    rows = [{"name": f"vit_n550_s0_x{m}", "status": "finished", "family": "vit", "train_size": 550, "seed": 0,
             "steps": 1_200 * m, "best_val_accuracy": v, "accuracy": v, "best_step": 1_200 * m, "wall_seconds": 1.0}
            for m, v in ((1, 0.70), (2, 0.71), (4, 0.72), (8, 0.724))]
    point = readouts.convergence(rows)["vit_n550"]
    assert list(point["rungs"]) == [1, 2, 4, 8] and (point["chosen"], point["capped"]) == (4, False)
    assert readouts.convergence(rows[:2] + rows[3:]) == {}  # the 4x branch still training: no ladder yet
