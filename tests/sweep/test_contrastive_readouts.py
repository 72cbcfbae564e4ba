"""Issue 40 item 6's read-outs (experiments/contrastive_readouts.py) on hand-made run directories: Q paired by
seed from the held-out zero-shot accuracy at the best-validation step, both rules, and the refusals (a score
of another checkpoint, a run finished twice, pairs across hosts)."""
import json
import os

import pytest

from vitjax.config import load_module

EXPERIMENTS = os.path.join(os.path.dirname(__file__), "..", "..", "experiments")
reader = load_module(os.path.join(EXPERIMENTS, "contrastive_readouts.py"))
sweep = reader.sweep


def _run(sweep_dir, name, held_out, *, seen=0.3, cpu="cpu A", checkpoint=None):
    run = os.path.join(sweep_dir, name)
    os.makedirs(run, exist_ok=True)
    with open(os.path.join(run, "results.json"), "w") as f:
        json.dump({"host": {"cpu": cpu, "isa": []}, "code": {"source_sha256": "abc"}, "devices": 4}, f)
    with open(os.path.join(run, "captions_eval.json"), "w") as f:
        json.dump({"zero_shot_held_out": held_out, "zero_shot_seen": seen,
                   "checkpoint": checkpoint or os.path.join(run, "checkpoint_best")}, f)


def _batch_sweep(tmp_path, sigmoid_gain):
    """Softmax at 0.20 everywhere (seed s adds s/100), sigmoid that plus sigmoid_gain[batch] (+ s/1000)."""
    for seed in (0, 1, 2):
        for batch in sweep.BATCHES:
            _run(tmp_path, sweep.batch_name("softmax", batch, seed), 0.20 + seed / 100)
            _run(tmp_path, sweep.batch_name("sigmoid", batch, seed),
                 0.20 + seed / 100 + sigmoid_gain[batch] + seed / 1000)


def test_sigmoids_advantage_at_small_batch_and_its_shrinking_are_decided_paired_by_seed(tmp_path):
    gain = {b: 0.0 for b in sweep.BATCHES} | {32: 0.05}
    _batch_sweep(tmp_path, gain)
    decided = reader.batch_arm([str(tmp_path)])
    s1, s2, s3 = decided["S1"], decided["S2"], decided["S3"]
    assert s1["per_seed"] == pytest.approx([5.0, 5.1, 5.2]) and s1["q"] == pytest.approx(5.1)
    assert s1["verdict"] == s1["verdict_t"] == "holds" and s1["tau"] == reader.FLOOR  # 2 SE = 0.12 < floor
    assert s2["q"] == pytest.approx(5.0) and s2["verdict"] == "holds"  # 5.1 at 32 less 0.1 at 1024
    assert s3["q"] == pytest.approx(0.1) and s3["verdict"] == "holds"  # at least: 0.1 > -tau


def test_softmax_ahead_at_the_largest_batch_fails_the_at_least_read_out(tmp_path):
    _batch_sweep(tmp_path, {b: 0.0 for b in sweep.BATCHES} | {1024: -0.03})
    decided = reader.batch_arm([str(tmp_path)])
    assert decided["S3"]["verdict"] == "fails" and decided["S1"]["verdict"] == "inconclusive"


def test_lit_arms_against_scratch(tmp_path):
    accuracy = {"scratch": 0.10, "vit": 0.30, "mae": 0.105, "dino": 0.05}
    for seed in (0, 1):
        for arm, value in accuracy.items():
            _run(tmp_path, sweep.lit_name(arm, seed), value + seed / 100)
    decided = reader.lit_arm([str(tmp_path)])
    assert [decided[k]["verdict"] for k in ("L1", "L2", "L3", "L4")] == ["holds", "inconclusive", "fails", "holds"]
    assert decided["L1"]["q"] == pytest.approx(20.0) and decided["L1"]["tau_t"] == pytest.approx(reader.FLOOR)


def test_a_read_out_waits_for_two_seeds(tmp_path):
    for arm in sweep.ARMS:
        _run(tmp_path, sweep.lit_name(arm, 0), 0.2)
    assert reader.lit_arm([str(tmp_path)]) == {}


def test_scores_of_another_step_a_run_twice_and_pairs_across_hosts_are_refused(tmp_path):
    _run(tmp_path / "a", sweep.lit_name("vit", 0), 0.3, checkpoint=str(tmp_path / "a" / "x" / "checkpoints"))
    with pytest.raises(ValueError, match="not the best-validation step: run `vitjax eval"):
        reader.lit_arm([str(tmp_path / "a")])
    for where in ("b", "c"):
        _run(tmp_path / where, sweep.lit_name("vit", 0), 0.3)
    with pytest.raises(ValueError, match="finished in .* and .*: keep one of them"):
        reader.lit_arm([str(tmp_path / "b"), str(tmp_path / "c")])
    _run(tmp_path / "d", sweep.lit_name("vit", 0), 0.3)
    _run(tmp_path / "d", sweep.lit_name("scratch", 0), 0.3, cpu="cpu B")
    with pytest.raises(ValueError, match="seed 0's runs to be paired differ in host"):
        reader.lit_arm([str(tmp_path / "d")])


def test_the_figure_draws_the_finished_lit_runs_and_says_what_has_not_run(tmp_path):
    figure = load_module(os.path.join(EXPERIMENTS, "contrastive_figure.py"))
    for seed in (0, 1):
        for arm, value in {"scratch": 0.10, "vit": 0.30, "mae": 0.105, "dino": 0.05}.items():
            _run(tmp_path / "runs", sweep.lit_name(arm, seed), value + seed / 100, seen=0.4)
    found = figure.collect([str(tmp_path / "runs")])
    assert found["batch"] == {}
    assert found["lit"]["vit"]["held_out"]["values"] == [30.0, 31.0]
    assert found["lit"]["vit"]["held_out"]["mean"] == pytest.approx(30.5)
    assert found["lit"]["dino"]["seen"]["values"] == [40.0, 40.0]
    out = str(tmp_path / "out" / "figure")
    assert figure.main([str(tmp_path / "runs"), "--out", out]) == 0
    assert os.path.getsize(out + ".png") > 10_000
    with open(out + ".json") as f:
        assert json.load(f)["lit"]["scratch"]["held_out"]["seeds"] == [0, 1]


def test_the_figure_draws_both_losses_against_batch_size_from_finished_batch_runs(tmp_path):
    figure = load_module(os.path.join(EXPERIMENTS, "contrastive_figure.py"))
    _batch_sweep(tmp_path / "runs", {b: 0.0 for b in sweep.BATCHES} | {32: 0.05})
    found = figure.collect([str(tmp_path / "runs")])
    assert found["lit"] == {} and sorted(found["batch"]) == ["sigmoid", "softmax"]
    assert list(found["batch"]["softmax"]) == list(sweep.BATCHES)
    assert found["batch"]["sigmoid"][32]["values"] == pytest.approx([25.0, 26.1, 27.2])  # 20 + s + 5 + s/10
    assert found["batch"]["softmax"][32]["mean"] == pytest.approx(21.0)
    out = str(tmp_path / "out" / "figure")
    assert figure.main([str(tmp_path / "runs"), "--out", out]) == 0
    assert os.path.getsize(out + ".png") > 10_000
    with open(out + ".json") as f:
        assert json.load(f)["batch"]["sigmoid"][str(sweep.BATCHES[-1])]["seeds"] == [0, 1, 2]
    _, (batch_panel, lit_panel) = figure.plt.subplots(1, 2)
    figure.draw_batch(batch_panel, found["batch"])
    figure.draw_lit(lit_panel, found["lit"])
    assert batch_panel.get_title().endswith("3 seeds per point")
    assert [t.get_text() for t in lit_panel.texts] == ["lit part not run yet"] and not lit_panel.axison
