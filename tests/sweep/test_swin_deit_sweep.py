"""experiments/swin_deit.py: each part's runs, the protocol's sizes and seeds, and the teachers it needs."""
import os

import pytest

from vitjax import config as config_layer
from vitjax.sweep import runner, spec

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SWEEP = os.path.join(ROOT, "experiments", "swin_deit.py")
PAIRS = [(550, s) for s in range(3)] + [(1_700, s) for s in range(3)] + [(5_500, s) for s in range(3)] \
    + [(17_000, s) for s in range(2)] + [(55_000, s) for s in range(2)]


def test_swin_part_follows_the_protocol():
    runs = spec.load(f"{SWEEP}:part=swin").runs
    assert [r.name for r in runs] == [f"swin_n{n}_s{s}" for n, s in PAIRS]
    assert all(r.config_dict["model_name"] == "swin" for r in runs)
    assert {(r.config_dict["data"]["train_size"], r.config_dict["seed"]) for r in runs} == set(PAIRS)


@pytest.mark.parametrize("part,prefix,randaugment", [("deit", "deit", False), ("deit_aug", "deitaug", True)])
def test_deit_parts_pair_each_student_with_the_bit_of_its_size_and_seed(tmp_path, part, prefix, randaugment):
    runs = spec.load(f"{SWEEP}:part={part},teachers={tmp_path}").runs
    assert [r.name for r in runs] == [f"{prefix}_n{n}_s{s}" for n, s in PAIRS]
    bit = config_layer.load_config(os.path.join(ROOT, "configs", "fashion_mnist", "bit.py"))
    for run, (n, s) in zip(runs, PAIRS):
        distillation = run.config_dict["distillation"]
        assert distillation["teacher"] == str(tmp_path / f"bit_n{n}_s{s}.npz")
        assert distillation["model_name"] == "bit" and distillation["model"] == dict(bit.model)
        assert run.config_dict["objective"] == "distillation" and run.config_dict["model"]["distillation_token"]
        assert ("randaugment" in run.config_dict["data"]["pp_train"]) == randaugment


def test_students_whose_teachers_are_missing_stop_the_sweep_before_any_run(tmp_path):
    teachers, workdir = tmp_path / "teachers", tmp_path / "runs"
    teachers.mkdir()
    (teachers / "bit_n550_s0.npz").write_bytes(b"")
    sweep = spec.load(f"{SWEEP}:part=deit,teachers={teachers}")
    with pytest.raises(ValueError, match=r"^inputs missing for 2 of the runs to train: .*deit_n550_s1 \(distillation.teacher=.*bit_n550_s1.npz\)"):
        runner.run_sweep(sweep, str(workdir), only=["deit_n550_s0", "deit_n550_s1", "deit_n550_s2"])
    assert not workdir.exists()
    lines = []
    assert runner.run_sweep(sweep, str(workdir), only=["deit_n550_s0", "deit_n550_s1"], dry_run=True,
                            echo=lines.append) == 0
    assert lines[-1].startswith("warning: inputs missing for 1 of") and "deit_n550_s0 (" not in lines[-1]
    with pytest.raises(spec.SweepError, match="the parts are swin, deit, deit_aug"):
        spec.load(f"{SWEEP}:part=mae")
