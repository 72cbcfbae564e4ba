"""The pre-registered read-outs' decision rule (experiments/readouts.py), on hand-made tables."""
import math
import os

import pytest

from vitjax.config import load_module

readouts = load_module(os.path.join(os.path.dirname(__file__), "..", "..", "experiments", "readouts.py"))


def row(family, size, seed, accuracy, *, final=None, best_step=100, steps=1200):
    return {"name": f"{family}_n{size}_s{seed}", "status": "finished", "family": family, "train_size": size,
            "seed": seed, "accuracy": accuracy, "test_accuracy": accuracy if final is None else final,
            "best_step": best_step, "steps": steps,
            "config": {"model_name": family, "seed": seed, "data": {"train_size": size, "subset_seed": seed}}}


def test_paired_q_and_se_by_hand():
    terms = [(1, {0: 90.0, 1: 91.0}), (-1, {0: 88.0, 1: 88.5})]
    result = readouts.combine(terms)
    assert result["per_seed"] == [2.0, 2.5]
    assert result["q"] == pytest.approx(2.25)
    assert result["se"] == pytest.approx(math.sqrt(0.125) / math.sqrt(2))  # stdev(2, 2.5) = sqrt(0.125)


def test_unequal_seeds_pair_over_the_common_ones():
    result = readouts.combine([(1, {0: 1.0, 1: 2.0, 2: 30.0}), (-1, {0: 0.0, 1: 0.0})])
    assert result["per_seed"] == [1.0, 2.0] and result["q"] == pytest.approx(1.5)


def test_single_seeds_fall_back_to_quadrature():
    result = readouts.combine([(1, {0: 5.0}), (-1, {1: 3.0})])
    assert result["q"] == pytest.approx(2.0) and result["se"] == 0 and "quadrature" in result["how"]


@pytest.mark.parametrize("q,se,verdict", [(1.0, 0.1, "holds"), (0.4, 0.1, "inconclusive"), (-0.6, 0.1, "fails"),
                                          (1.0, 0.6, "inconclusive"), (-1.3, 0.6, "fails")])
def test_verdicts_use_tau_with_its_floor(q, se, verdict):
    decided = readouts.decide({"q": q, "se": se})
    assert decided["verdict"] == verdict and decided["tau"] == max(2 * se, 0.5)


def test_at_least_readouts_hold_within_noise():
    assert readouts.decide({"q": -0.3, "se": 0.1}, at_least=True)["verdict"] == "holds"
    assert readouts.decide({"q": -0.8, "se": 0.1}, at_least=True)["verdict"] == "fails"


def _table(gap_small, gap_large):
    rows = []
    for seed in (0, 1):
        for size, gap in ((550, gap_small), (1_700, gap_small), (5_500, gap_small), (55_000, gap_large)):
            vit = 0.80 + 0.01 * seed + (0.08 if size == 55_000 else 0.0)
            rows += [row("vit", size, seed, vit, final=vit - 0.02, best_step=600),
                     row("bit", size, seed, vit + gap + 0.001 * seed, final=vit + gap - 0.02, best_step=600)]
    return rows


def test_the_plain_arm_read_outs_follow_the_table():
    closing = readouts.plain_arm(_table(gap_small=0.05, gap_large=0.01))
    assert closing["P1"]["verdict"] == "holds" and closing["P1"]["q"] == pytest.approx(4.0)
    assert closing["P3"]["verdict"] == "holds"  # BiT still 1 point ahead at 55k
    assert closing["P2"]["verdict"] == "holds"  # the ViT gained 4 points more over the decade
    widening = readouts.plain_arm(_table(gap_small=0.01, gap_large=0.05))
    assert widening["P1"]["verdict"] == "fails" and widening["P2"]["verdict"] == "fails"
    assert closing["P4"]["verdict"] == "holds" and closing["P4"]["q"] == pytest.approx(2.025)  # BiT seed 1 gains 0.1 more
    assert closing["P5"]["verdict"] == "fails"  # best step 600 of 1,200 at 55k: overfit, not budget-limited


def test_p4_fails_when_a_small_run_is_best_at_its_last_step():
    rows = _table(0.05, 0.01)
    rows[0]["best_step"] = rows[0]["steps"]
    assert readouts.plain_arm(rows)["P4"]["verdict"] == "fails"


def test_the_markdown_table_states_means_spreads_and_paired_gaps():
    text = readouts.markdown_table(_table(gap_small=0.05, gap_large=0.01))
    lines = text.splitlines()
    assert len(lines) == 2 + 4  # header, rule, one line per size
    assert lines[2].startswith("| 550 | 80.50 ± 0.71 (n=2) | 85.55 ± 0.78 (n=2) | 5.05 ± 0.07 (n=2) |")
    assert lines[-1].endswith("| 600 / 600 (1,200) |")
