"""experiments/swin_deit.py: each part's runs, the protocol's sizes and seeds, and the teachers it needs."""
import os

import pytest

from vitjax.sweep import spec

SWEEP = os.path.join(os.path.dirname(__file__), "..", "..", "experiments", "swin_deit.py")
PAIRS = [(550, s) for s in range(3)] + [(1_700, s) for s in range(3)] + [(5_500, s) for s in range(3)] \
    + [(17_000, s) for s in range(2)] + [(55_000, s) for s in range(2)]


def test_swin_part_follows_the_protocol():
    runs = spec.load(f"{SWEEP}:part=swin").runs
    assert [r.name for r in runs] == [f"swin_n{n}_s{s}" for n, s in PAIRS]
    assert all(r.config_dict["model_name"] == "swin" for r in runs)
    assert {(r.config_dict["data"]["train_size"], r.config_dict["seed"]) for r in runs} == set(PAIRS)


@pytest.mark.parametrize("part,prefix,randaugment", [("deit", "deit", False), ("deit_aug", "deitaug", True)])
def test_deit_parts_pair_each_student_with_the_bit_of_its_size_and_seed(tmp_path, part, prefix, randaugment):
    for n, s in PAIRS:
        os.makedirs(tmp_path / f"bit_n{n}_s{s}")
    runs = spec.load(f"{SWEEP}:part={part},teachers={tmp_path}").runs
    assert [r.name for r in runs] == [f"{prefix}_n{n}_s{s}" for n, s in PAIRS]
    for run, (n, s) in zip(runs, PAIRS):
        assert run.config_dict["distillation"]["teacher"] == str(tmp_path / f"bit_n{n}_s{s}")
        assert run.config_dict["objective"] == "distillation" and run.config_dict["model"]["distillation_token"]
        assert ("randaugment" in run.config_dict["data"]["pp_train"]) == randaugment


def test_missing_teachers_fail_naming_the_runs_to_train(tmp_path):
    os.makedirs(tmp_path / "bit_n550_s0")
    with pytest.raises(spec.SweepError, match=r"teachers missing in .*bit_n550_s1.*--only bit_n550_s1"):
        spec.load(f"{SWEEP}:part=deit,teachers={tmp_path}")
    with pytest.raises(spec.SweepError, match="the parts are swin, deit, deit_aug"):
        spec.load(f"{SWEEP}:part=mae")
