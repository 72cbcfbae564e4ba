"""Sweep files and config files: bad input fails with a clear message before any run starts."""
import json
import os
import subprocess
import sys

import pytest

from vitjax import config as config_layer
from vitjax.sweep import runner, spec, table

from tests.paths import ROOT, TINY
from tests.sweep.sweep_files import write_sweep_file


# --- sweep files -------------------------------------------------------------------------------

def test_a_good_sweep_resolves_every_run(tmp_path):
    path = write_sweep_file(tmp_path, """
        FEWSHOT = dict(shots=(1, 5), seeds=2)
        def get_runs(arg=None):
            return [(f"vit_n{n}", TINY + ":steps=5", {"data.train_size": n, "data.pp_train": "value_range(-1, 1)",
                                                      "data.synthetic.image_shape": (16, 16, 3)})
                    for n in (64, 128)]
    """)
    sweep = spec.load(path)
    assert [r.name for r in sweep.runs] == ["vit_n64", "vit_n128"]
    assert sweep.runs[0].config == f"{TINY}:steps=5" and sweep.runs[1].config_dict["data"]["train_size"] == 128
    assert sweep.fewshot == {"shots": [1, 5], "seeds": 2, "max_test_examples": None, "data": None}
    assert "--config.data.train_size=64" in sweep.runs[0].train_argv("W")


def test_budget_and_title_go_into_sweep_json(tmp_path):
    path = write_sweep_file(tmp_path, """
        BUDGET = "steps = max(1,200, 8 epochs), batch 128"
        TITLE = "ViT vs BiT"
        def get_runs(arg=None):
            return [("a", TINY, {})]
    """)
    sweep = spec.load(path)
    assert (sweep.budget, sweep.title) == ("steps = max(1,200, 8 epochs), batch 128", "ViT vs BiT")
    table.write_definition(str(tmp_path), sweep.describe())
    saved = json.loads((tmp_path / table.SWEEP).read_text())
    assert (saved["budget"], saved["title"]) == (sweep.budget, sweep.title)
    bare = spec.load(write_sweep_file(tmp_path, "def get_runs(arg=None):\n    return [('a', TINY, {})]\n", "bare.py"))
    assert bare.describe()["budget"] is None and bare.describe()["title"] is None


def test_a_file_of_parts_may_give_each_part_its_own_probes(tmp_path):
    path = write_sweep_file(tmp_path, """
        def FEWSHOT(arg=None):
            return dict(shots=(1, 5), seeds=2) if arg == "part=probed" else None
        def FEWSHOT_TRANSFER(arg=None):
            return dict(shots=(5,), seeds=1, data={"classes": (1, 2)}) if arg == "part=probed" else None
        def get_runs(arg=None):
            return [("a", TINY, {})]
    """)
    probed = spec.load(f"{path}:part=probed")
    assert probed.fewshot["shots"] == [1, 5] and probed.transfer["data"] == {"classes": [1, 2]}
    plain = spec.load(f"{path}:part=plain")
    assert plain.fewshot is None and plain.transfer is None
    assert runner.probes_of(plain) == {} and set(runner.probes_of(probed)) == {"fewshot", "transfer"}


@pytest.mark.parametrize("body, message", [
    ("def get_runs(arg=None):\n    return []\n", "defines no runs"),
    ("RUNS = []\n", "defines no get_runs"),
    ("def get_runs(arg=None):\n    return [('a', TINY, {}), ('b', TINY, {}), ('a', TINY, {'lr': 0.1})]\n",
     "duplicate run names a"),
    ("def get_runs(arg=None):\n    return [('a', TINY, {}), ('b', TINY, {'data.trian_size': 10})]\n",
     "run 'b' (" ),
    ("def get_runs(arg=None):\n    return [('a', 'configs/no_such.py', {})]\n", "config file 'configs/no_such.py' not found"),
    ("def get_runs(arg=None):\n    return [('a b', TINY, {})]\n", "names become directory names"),
    ("def get_runs(arg=None):\n    return [('a', TINY, {'batch_size': True})]\n", "would be refused by `vitjax train`"),
    ("def get_runs(arg=None):\n    raise ValueError('takes steps=N')\n", "takes steps=N"),
    ("FEWSHOT = dict(shot=(1,))\ndef get_runs(arg=None):\n    return [('a', TINY, {})]\n", "FEWSHOT must be None"),
    ("FEWSHOT_TRANSFER = dict(shots=(1,))\ndef get_runs(arg=None):\n    return [('a', TINY, {})]\n",
     "FEWSHOT_TRANSFER needs 'data'"),
    ("FEWSHOT_TRANSFER = dict(data={'clases': (1,)})\ndef get_runs(arg=None):\n    return [('a', TINY, {})]\n",
     "FEWSHOT_TRANSFER['data'] names no data-config field 'clases'"),
    ("BUDGET = 700\ndef get_runs(arg=None):\n    return [('a', TINY, {})]\n", "BUDGET must be a string"),
])
def test_bad_sweep_files_fail_with_a_clear_message(tmp_path, body, message):
    with pytest.raises(spec.SweepError) as error:
        spec.load(write_sweep_file(tmp_path, body))
    assert message in str(error.value)


def test_unknown_override_key_error_names_the_field_and_the_fix(tmp_path):
    path = write_sweep_file(tmp_path, "def get_runs(arg=None):\n    return [('b', TINY, {'data.trian_size': 10})]\n")
    with pytest.raises(spec.SweepError, match=r"did you mean 'data.train_size'"):
        spec.load(path)


def test_unknown_only_name_is_refused(tmp_path):
    sweep = spec.load(write_sweep_file(tmp_path, "def get_runs(arg=None):\n    return [('a', TINY, {}), ('b', TINY)]\n"))
    assert [r.name for r in sweep.select(["b"])] == ["b"]
    with pytest.raises(spec.SweepError, match="does not define: c; its runs are: a, b"):
        sweep.select(["b", "c"])
    assert [r.name for r in sweep.select(["b,a"])] == ["a", "b"]  # comma-separated as well, the sweep's order
    with pytest.raises(spec.SweepError, match="does not define: c; its runs"):
        sweep.select(["a,c"])


def test_cli_refuses_a_bad_sweep_before_any_run_starts(tmp_path):
    path = write_sweep_file(tmp_path, "def get_runs(arg=None):\n    return [('a', TINY, {}), ('b', TINY, {'modl.width': 8})]\n")
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "vitjax", "sweep", path, "--workdir", str(out)],
                         capture_output=True, text=True, check=False, timeout=300, cwd=ROOT)
    assert run.returncode != 0
    assert "run 'b'" in run.stderr and "did you mean 'model.width'" in run.stderr, run.stderr[-2000:]
    assert not out.exists()  # nothing ran, nothing was written


def test_dry_run_writes_nothing_and_shows_the_commands(tmp_path):
    sweep = spec.load(write_sweep_file(tmp_path, "def get_runs(arg=None):\n    return [('a', TINY, {'lr': 0.01})]\n"))
    lines = []
    assert runner.run_sweep(sweep, str(tmp_path / "out"), dry_run=True, echo=lines.append) == 0
    assert lines[0] == "a: pending -> train"
    assert "vitjax train --config" in lines[1] and "--config.lr=0.01" in lines[1]
    assert "vitjax eval" in lines[2] and "--fewshot_only" in lines[2]
    assert not (tmp_path / "out").exists()


# --- what a re-run does with each kind of run directory ------------------------------------------

def _touch(directory, name, payload=None):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "w") as f:
        json.dump(payload or {}, f)


def test_rerun_skips_finished_resumes_interrupted_and_retries_failed(tmp_path):
    fewshot = {"shots": [1], "seeds": 1}
    pending, started, trained, done, failed = (str(tmp_path / n) for n in ("p", "s", "t", "d", "f"))
    _touch(started, "config.json")
    _touch(trained, "config.json"), _touch(trained, "results.json")
    _touch(done, "config.json"), _touch(done, "results.json"), _touch(done, "fewshot.json")
    _touch(failed, "config.json"), _touch(failed, "failed.json", {"stage": "train"})
    assert [runner.todo(d, {"fewshot": fewshot}) for d in (pending, started, trained, done, failed)] == \
        ["train", "train", "fewshot", "skip", "train"]
    assert runner.todo(trained, {}) == "skip"  # few-shot off: trained is finished
    assert [table.run_status(d, ("fewshot",)) for d in (pending, started, trained, done, failed)] == \
        ["pending", "interrupted", "interrupted", "finished", "failed"]
    # With a transfer probe too, a run is finished only once both probes wrote their files.
    both = {"fewshot": fewshot, "transfer": {**fewshot, "data": {"classes": [1]}}}
    assert runner.todo(done, both) == "fewshot" and runner._probes_to_run(done, "fewshot", both) == ["transfer"]
    assert table.run_status(done, ("fewshot", "transfer")) == "interrupted"
    _touch(done, "transfer.json")
    assert runner.todo(done, both) == "skip" and table.run_status(done, ("fewshot", "transfer")) == "finished"


def test_failure_messages_come_from_the_subprocess_output():
    output = "noise\nTraceback (most recent call last):\n  File \"x.py\", line 1\nZeroDivisionError: division by zero\n"
    error, trace = runner._error_of(output, 1)
    assert error == "ZeroDivisionError: division by zero" and trace.startswith("Traceback")
    assert runner._error_of("step 1\n", -9)[0].startswith("killed by SIGKILL (out of memory?")
    assert runner._error_of("vitjax train: error: bad\n", 1)[0] == "vitjax train: error: bad"


@pytest.mark.parametrize("name, runs", [("data_scaling_imagenet", 8), ("data_scaling_imagenet:seeds=2", 16),
                                        ("patch_size_imagenet", 3), ("patch_size_imagenet:seeds=2,scale=0.01", 6)])
def test_shipped_accelerator_sweeps_pass_their_checks(name, runs):
    """The laptop protocol at paper scale: a validation split in every run, budgets that grow with the
    subset, paired seeds across families (or patch sizes), BUDGET and TITLE for the figures."""
    file, _, arg = name.partition(":")
    sweep = spec.load(os.path.join(ROOT, "experiments", f"{file}.py") + (f":{arg}" if arg else ""))
    assert len(sweep.runs) == runs and sweep.fewshot["shots"] == [1, 5, 10, 25]
    assert "vitjax sweep experiments/" in config_layer.load_module(sweep.path).__doc__
    assert sweep.budget.startswith("steps = max(95,000, 90 epochs)") and sweep.title
    configs = [r.config_dict for r in sweep.runs]
    for c in configs:
        assert c["data"]["val_split"] == "full[:51200]" and c["data"]["val_size"] == 0
        assert c["data"]["train_split"] == "full[102400:]" and c["total_epochs"] == 0
        assert 1 <= c["eval_every_steps"] <= c["total_steps"] // 10
    steps = {c["data"]["train_size"]: c["total_steps"] for c in configs}
    sizes = sorted(steps)
    assert all(steps[a] <= steps[b] for a, b in zip(sizes, sizes[1:]))
    if file == "data_scaling_imagenet" and not arg:  # the paper's 0.4B examples at 1.3M; 90 epochs (1.17B) at 13M
        assert steps[1_300_000] * 4096 == pytest.approx(0.39e9, rel=0.01) and steps[13_000_000] == 285_645
        assert steps[6_000_000] > steps[3_000_000]
    if file == "patch_size_imagenet":
        assert sizes == [13_000_000]
    arms = {(c["model"]["variant"], c["data"]["train_size"], c["seed"]) for c in configs}
    variants, seeds = {v for v, _, _ in arms}, {s for _, _, s in arms}
    assert arms == {(v, n, s) for v in variants for n in sizes for s in seeds}  # every run has its pairs


def test_data_scaling_follows_the_protocol():
    """Paired seeds, a validation split, nested sizes and a budget that grows with the data."""
    sweep = spec.load(os.path.join(ROOT, "experiments", "data_scaling.py"))
    assert sweep.fewshot is None and "vitjax sweep experiments/" in config_layer.load_module(sweep.path).__doc__
    runs = {(r.config_dict["model_name"], r.config_dict["data"]["train_size"], r.config_dict["seed"]): r.config_dict
            for r in sweep.runs}
    assert len(runs) == len(sweep.runs) == 26
    for (family, size, seed), c in runs.items():
        assert c["data"]["subset_seed"] == seed and c["data"]["val_size"] == 5_000 and c["data"]["class_balanced"]
        assert c["eval_every_steps"] == 100 and c["total_epochs"] == 0
        assert (("bit" if family == "vit" else "vit"), size, seed) in runs  # every run has its pair
    steps = {size: c["total_steps"] for (_, size, _), c in runs.items()}
    assert steps == {550: 1_200, 1_700: 1_200, 5_500: 1_200, 17_000: 1_200, 55_000: 3_438}
    assert sorted({s for (_, n, s) in runs if n == 550}) == [0, 1, 2]
    assert sorted({s for (_, n, s) in runs if n == 55_000}) == [0, 1]


def test_patch_size_sweep_follows_the_protocol():
    sweep = spec.load(os.path.join(ROOT, "experiments", "patch_size.py"))
    patches = sorted((r.config_dict["data"]["train_size"], r.config_dict["model"]["patch_size"]) for r in sweep.runs)
    assert patches == sorted([(55_000, p) for p in (14, 7, 4)] * 2 + [(5_500, p) for p in (4, 2)] * 2)
    assert all(r.config_dict["data"]["val_size"] == 5_000 for r in sweep.runs)


def test_transfer_sweep_pretrains_on_five_classes_and_probes_the_other_five(tmp_path):
    """experiments/transfer.py: paired ViT/BiT runs on classes 0-4 at nested sizes with the protocol's
    overrides, then two probes of 10 draws on all test images: transfer (classes 5-9) and in-domain."""
    sweep = spec.load(os.path.join(ROOT, "experiments", "transfer.py"))
    runs = {(r.config_dict["model_name"], r.config_dict["data"]["train_size"], r.config_dict["seed"]): r.config_dict
            for r in sweep.runs}
    assert len(runs) == len(sweep.runs) == 12
    for (family, size, seed), c in runs.items():
        assert tuple(c["data"]["classes"]) == (0, 1, 2, 3, 4) and c["data"]["val_size"] == 2_500
        assert c["data"]["subset_seed"] == seed and c["data"]["class_balanced"] and c["eval_every_steps"] == 100
        assert (("bit" if family == "vit" else "vit"), size, seed) in runs  # every run has its pair
    assert sorted({n for (_, n, _) in runs}) == [550, 2_750, 27_500] and {s for (*_, s) in runs} == {0, 1}
    assert {n: c["total_steps"] for (_, n, _), c in runs.items()} == {550: 1_200, 2_750: 1_200, 27_500: 1_719}
    assert sweep.transfer == {"shots": [1, 5, 10, 25], "seeds": 10, "max_test_examples": None,
                              "data": {"classes": [5, 6, 7, 8, 9]}}
    assert sweep.fewshot == {**sweep.transfer, "data": None}
    lines = []
    assert runner.run_sweep(sweep, str(tmp_path / "out"), dry_run=True, echo=lines.append) == 0
    assert len(lines) == 12 * 4 and "'--config.data.classes=(0, 1, 2, 3, 4)'" in lines[1]
    assert "--fewshot_only" in lines[2] and "--probe" not in lines[2] and "--fewshot_seeds 10" in lines[2]
    assert "--probe transfer" in lines[3] and '"classes": [5, 6, 7, 8, 9]' in lines[3]
    assert not (tmp_path / "out").exists()


def test_self_supervised_sweep_pretrains_without_labels_then_fine_tunes_under_the_protocol():
    """experiments/self_supervised.py: one MAE and one DINO pre-training (their configs, validation held
    out), then the plain arm's ViT protocol from each encoder, paired with the plain arm's runs."""
    path = os.path.join(ROOT, "experiments", "self_supervised.py")
    for method in ("mae", "dino"):
        (run,) = spec.load(f"{path}:part={method}").runs
        assert run.name == f"{method}_pretrain" and run.config_dict["objective"] == method
        assert run.config_dict["data"]["val_size"] == 5_000 and run.config_dict["seed"] == 0
    sweep = spec.load(f"{path}:part=finetune,pretrained=/pre")
    plain = {(r.config_dict["data"]["train_size"], r.config_dict["seed"]): r.config_dict
             for r in spec.load(os.path.join(ROOT, "experiments", "data_scaling.py")).runs
             if r.config_dict["model_name"] == "vit"}
    runs = {(r.name.split("_")[0], r.config_dict["data"]["train_size"], r.config_dict["seed"]): r.config_dict
            for r in sweep.runs}
    assert len(runs) == len(sweep.runs) == 22
    for (method, size, seed), c in runs.items():
        assert c["init_from"] == f"/pre/{method}_pretrain.npz" and c["objective"] == "supervised"
        mine = {k: v for k, v in c.items() if k != "init_from"}
        assert mine == {k: v for k, v in plain[size, seed].items() if k != "init_from"}  # the paired plain run
    assert sorted({n for _, n, _ in runs}) == [550, 1_700, 5_500, 55_000]
    with pytest.raises(ValueError, match="the parts are mae, dino, finetune"):
        spec.load(f"{path}:part=both")
