"""experiments/decide_seeds.py: each part's runs are the registered sweeps' runs for a new seed, the
controls parts share are one run, and D1's students wait for their teachers."""
import os

import pytest

from vitjax.config import load_module
from vitjax.sweep import aggregate, spec, table

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
EXPERIMENTS = os.path.join(ROOT, "experiments")
SWEEP = os.path.join(EXPERIMENTS, "decide_seeds.py")
decide_seeds = load_module(SWEEP)
protocol = load_module(os.path.join(EXPERIMENTS, "protocol.py"))
transfer = load_module(os.path.join(EXPERIMENTS, "transfer.py"))

# Written out by hand: (name, seed, size) of each part, in the order it trains them.
EXPECTED = {
    "w": [("swin_n550_s3", 3, 550), ("vit_n550_s3", 3, 550), ("swin_n1700_s3", 3, 1_700), ("vit_n1700_s3", 3, 1_700),
          ("swin_n55000_s3", 3, 55_000), ("vit_n55000_s3", 3, 55_000)],
    "s2": [("vit_p2_n5500_s3", 3, 5_500), ("vit_p4_n5500_s3", 3, 5_500)],
    "u": [("dino_ft_n550_s3", 3, 550), ("bit_n550_s3", 3, 550), ("vit_n550_s3", 3, 550),
          ("dino_ft_n1700_s3", 3, 1_700), ("bit_n1700_s3", 3, 1_700), ("vit_n1700_s3", 3, 1_700),
          ("dino_ft_n55000_s3", 3, 55_000), ("vit_n55000_s3", 3, 55_000)],
    "t": [(f"transfer_{model}_n{size}_s{seed}", seed, size) for seed in (2, 3) for size in (550, 27_500)
          for model in ("vit", "bit")],
    "d1_teachers": [("bit_n550_s3", 3, 550), ("bit_n1700_s3", 3, 1_700), ("bit_n55000_s3", 3, 55_000)],
    "d1": [("deit_n550_s3", 3, 550), ("vit_n550_s3", 3, 550), ("deit_n1700_s3", 3, 1_700), ("vit_n1700_s3", 3, 1_700),
           ("deit_n55000_s3", 3, 55_000), ("vit_n55000_s3", 3, 55_000)],
}
# Where each run name's seed-0 twin is registered (file, arg, its seed-0 name) and committed (results table).
SOURCES = {"swin": ("swin_deit.py", "part=swin", "swin"), "deit": ("swin_deit.py", "part=deit,teachers={}", "deit"),
           "dino_ft": ("self_supervised.py", "part=finetune", "self_supervised"),
           "vit": ("data_scaling.py", None, "data_scaling"), "bit": ("data_scaling.py", None, "data_scaling"),
           "vit_p2": ("patch_size.py", None, "patch_size"), "vit_p4": ("patch_size.py", None, "patch_size"),
           "transfer_vit": ("transfer.py", None, "transfer"), "transfer_bit": ("transfer.py", None, "transfer")}


@pytest.fixture
def teachers(tmp_path):
    for size in (550, 1_700, 55_000):
        (tmp_path / f"bit_n{size}_s3.npz").write_bytes(b"")
    return str(tmp_path)


def _load(part, teachers):
    return spec.load(f"{SWEEP}:part={part}" + (f",teachers={teachers}" if part == "d1" else ""))


def _model(name):
    return name.rsplit("_n", 1)[0]


@pytest.mark.parametrize("part", list(EXPECTED))
def test_each_part_trains_its_read_outs_terms_for_the_new_seeds(part, teachers):
    runs = _load(part, teachers).runs
    assert [(r.name, r.overrides["seed"], r.overrides["data.train_size"]) for r in runs] == EXPECTED[part]
    for r in runs:
        assert r.overrides["data.subset_seed"] == r.overrides["seed"]
        assert r.config_dict["seed"] == r.config_dict["data"]["subset_seed"] == r.overrides["seed"]


@pytest.mark.parametrize("part", list(EXPECTED))
def test_each_run_is_its_registered_seed_0_run_with_only_the_seed_changed(part, teachers):
    for r in _load(part, teachers).runs:
        file, arg, _ = SOURCES[_model(r.name)]
        registered = load_module(os.path.join(EXPERIMENTS, file)).get_runs(arg and arg.format(teachers))
        twin = r.name.removeprefix("transfer_").rsplit("_s", 1)[0] + "_s0"
        _, config, overrides = next(run for run in registered if run[0] == twin)
        seed, size = r.overrides["seed"], r.overrides["data.train_size"]
        expected = {**overrides, "seed": seed, "data.subset_seed": seed}
        if "distillation.teacher" in overrides:  # the student learns from the BiT of its own seed
            expected["distillation.teacher"] = os.path.join(teachers, f"bit_n{size}_s{seed}.npz")
        assert r.overrides == expected and r.config.endswith(config.removeprefix("configs"))
        protocol_of = transfer.overrides if r.name.startswith("transfer_") else protocol.overrides
        assert protocol_of(size, seed).items() <= r.overrides.items()


@pytest.mark.parametrize("part,file,arg", [("w", "swin_deit.py", "part=swin"), ("w", "data_scaling.py", None),
                                           ("d1", "swin_deit.py", "part=deit,teachers={}")])
def test_at_55k_re_seeding_gives_what_the_registering_files_large_seeds_give(part, file, arg, teachers):
    """Where a sweep file trains more seeds itself (large_seeds, above 5.5k), its seed 3 is ours exactly."""
    registering = load_module(os.path.join(EXPERIMENTS, file))
    theirs = {name: (config, overrides) for name, config, overrides in
              registering.get_runs(",".join(filter(None, [arg and arg.format(teachers), "large_seeds=4"])))}
    ours = [run for run in decide_seeds.part_runs(part, teachers) if run[2]["data.train_size"] == 55_000]
    mine = [run for run in ours if run[0] in theirs]
    assert mine and all(theirs[name] == (config, overrides) for name, config, overrides in mine)


@pytest.mark.parametrize("part", list(EXPECTED))
def test_each_run_falls_into_its_committed_tables_seed_group(part, teachers):
    """readouts.py --added_seeds joins a run to a table by its seed group: its config must be the
    committed runs' but for the seed (the runtime choices older runs recorded in their config aside)."""
    for r in _load(part, teachers).runs:
        committed = table.read(os.path.join(EXPERIMENTS, "results", SOURCES[_model(r.name)][2]))
        groups = {aggregate.group_key(row["config"]) for row in committed if row["status"] == "finished"}
        assert aggregate.group_key(r.config_dict) in groups, r.name


def test_controls_parts_share_are_one_run_and_no_other_name_recurs(teachers):
    seen = {}
    for part in EXPECTED:
        for r in _load(part, teachers).runs:
            seen.setdefault(r.name, []).append((part, r.config, r.overrides))
    shared = {name: [part for part, *_ in found] for name, found in seen.items() if len(found) > 1}
    assert shared == {"vit_n550_s3": ["w", "u", "d1"], "vit_n1700_s3": ["w", "u", "d1"],
                      "vit_n55000_s3": ["w", "u", "d1"], "bit_n550_s3": ["u", "d1_teachers"],
                      "bit_n1700_s3": ["u", "d1_teachers"]}
    for name in shared:
        assert len({repr(found[1:]) for found in seen[name]}) == 1, name


def test_d1_refuses_to_start_without_its_teachers_naming_the_file_and_the_commands(tmp_path, teachers):
    os.remove(os.path.join(teachers, "bit_n1700_s3.npz"))
    with pytest.raises(spec.SweepError, match=r"deit_n1700_s3's teacher .*bit_n1700_s3\.npz is missing: .*"
                                              r"decide_seeds\.py:part=d1_teachers.*vitjax export "
                                              r"runs/decide_seeds/bit_n1700_s3/checkpoint_best"):
        _load("d1", teachers)
    with pytest.raises(spec.SweepError, match="teachers: not read by part=w"):
        spec.load(f"{SWEEP}:part=w,teachers={tmp_path}")


def test_only_the_transfer_part_runs_transfer_pys_probes(teachers):
    probed = _load("t", teachers)
    assert probed.fewshot["shots"] == list(transfer.FEWSHOT["shots"]) and probed.fewshot["seeds"] == 10
    assert probed.transfer["data"] == {"classes": list(transfer.PROBE_CLASSES)}
    for part in set(EXPECTED) - {"t"}:
        sweep = _load(part, teachers)
        assert sweep.fewshot is None and sweep.transfer is None, part


def test_re_seeding_refuses_what_would_keep_seed_0():
    run = ("deit_n550_s0", "c.py", {"seed": 0, "data.subset_seed": 0, "distillation.teacher": "t/bit_n550_s0.npz"})
    with pytest.raises(ValueError, match="distillation.teacher goes with the seed"):
        decide_seeds.reseeded(run, 3)
    assert decide_seeds.reseeded(run, 3, {"distillation.teacher": "t/bit_n550_s3.npz"})[2] == \
        {"seed": 3, "data.subset_seed": 3, "distillation.teacher": "t/bit_n550_s3.npz"}
    with pytest.raises(ValueError, match="not a seed-0 run"):
        decide_seeds.reseeded(("vit_n550_s1", "c.py", {"seed": 1, "data.subset_seed": 1}), 3)
