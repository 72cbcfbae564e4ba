"""The pre-registered read-outs' decision rule (experiments/readouts.py), on hand-made tables."""
import json
import math
import os

import pytest

from vitjax.config import load_module
from vitjax.sweep import table

readouts = load_module(os.path.join(os.path.dirname(__file__), "..", "..", "experiments", "readouts.py"))
tuning_sweep = load_module(os.path.join(os.path.dirname(__file__), "..", "..", "experiments", "tuning.py"))


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


# t(0.975, df) for df = 1, 2, 9: the textbook table's values, written here, not computed by the code under test.
T_975 = {1: 12.706, 2: 4.303, 9: 2.262}


@pytest.mark.parametrize("per_seed", [[1.5, 2.5], [1.0, 2.0, 3.0], [0.2 * i for i in range(10)]])
def test_the_t_rule_on_paired_tables_of_2_3_and_10_seeds(per_seed):
    terms = [(1, {s: v + 80.0 for s, v in enumerate(per_seed)}), (-1, {s: 80.0 for s in range(len(per_seed))})]
    decided = readouts.decide(readouts.combine(terms))
    n = len(per_seed)
    mean = sum(per_seed) / n
    se = math.sqrt(sum((v - mean) ** 2 for v in per_seed) / (n - 1)) / math.sqrt(n)
    assert decided["df"] == n - 1 and decided["se"] == pytest.approx(se)
    assert decided["tau_t"] == pytest.approx(max(T_975[n - 1] * se, 0.5), rel=1e-3)
    assert decided["tau"] == pytest.approx(max(2 * se, 0.5))
    expected = {2: ("holds", "inconclusive"),   # Q 2.0: tau 1.0, tau_t 6.35
                3: ("holds", "inconclusive"),   # Q 2.0: tau 0.67, tau_t 2.48
                10: ("holds", "holds")}[n]      # Q 0.9: tau 0.5 (floor), tau_t 0.5 (2.262 x 0.18 = 0.41)
    assert (decided["verdict"], decided["verdict_t"]) == expected


def test_the_t_rule_without_a_spread_is_provisional():
    decided = readouts.decide(readouts.combine([(1, {0: 5.0}), (-1, {0: 3.0})]))
    assert decided["df"] is None and decided["tau_t"] is None
    assert decided["verdict_t"] == "provisional (n = 1)" and decided["verdict"] == "holds"  # registered rule as ever


def test_a_term_of_one_seed_beside_terms_with_a_spread_leaves_the_t_rule_undecided():
    """Its spread is unknown, not zero: SEs of the other terms alone would understate tau."""
    result = readouts.combine([(1, {0: 5.0}), (-1, {0: 1.0, 1: 2.0, 2: 3.0})])
    assert result["df"] is None and "one seed" in result["how"]
    assert readouts.decide(result)["verdict_t"] == "provisional (n = 1)"


def test_a_converged_readout_with_a_single_seed_term_is_provisional():
    rows = _ladder_table()
    for seed in (1, 2):  # seeds 1-2 at 55k only: C1's 550 and 1.7k terms have seed 0 alone
        rows += [ladder_row("vit", 55_000, seed, 4, 84.0, 83.5 + seed), ladder_row("vit", 55_000, seed, 1, 80.0, 79.5),
                 ladder_row("bit", 55_000, seed, 1, 85.0, 84.5)]
    decided = readouts.converged_arm(rows)
    assert decided["C1"]["verdict"] == decided["C1"]["verdict_t"] == "provisional (n = 1)"
    assert decided["C2"]["verdict"] != "provisional (n = 1)"  # every term has seeds 0-2


def test_unpaired_terms_take_welch_satterthwaite_degrees_of_freedom():
    a, b = {0: 1.0, 1: 3.0, 2: 2.0}, {3: 0.0, 4: 1.0}
    result = readouts.combine([(1, a), (-1, b)])
    va, vb = 1.0 / 3, 0.5 / 2  # sample variances over n
    assert result["se"] == pytest.approx(math.sqrt(va + vb))
    assert result["df"] == pytest.approx((va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 1))


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


def _sized(rows, width=None, patch=None, flops=None):
    """Adds what the model-size and patch-size read-outs read: the model's width, patch size and FLOPs."""
    for r in rows:
        r["config"]["model"] = {"width": width}
        r["patch_size"], r["train_flops"] = patch, flops
    return rows


def _curve(lift_vit_small=0.0, lift_vit_large=0.0, lift_bit=0.0):
    """A plain-arm-like table (seeds 0, 1 at 550, 1.7k, 5.5k, 55k) with the given lifts added."""
    rows = []
    for seed in (0, 1):
        for size in (550, 1_700, 5_500, 55_000):
            base = 0.70 + 0.05 * (size == 55_000) + 0.002 * seed
            lift_vit = lift_vit_large if size == 55_000 else lift_vit_small
            rows += [row("vit", size, seed, base + lift_vit + 0.001 * seed), row("bit", size, seed, base + 0.03 + lift_bit)]
    return rows


def test_regularisation_read_outs_compare_lifts_paired_by_seed():
    plain = _curve()
    found = readouts.regularisation_arm(_curve(lift_vit_small=0.03, lift_vit_large=0.005, lift_bit=0.01), plain)
    assert found["R1"]["q"] == pytest.approx(2.0) and found["R1"]["verdict"] == "holds"
    assert found["R2"]["q"] == pytest.approx(2.5) and found["R2"]["verdict"] == "holds"
    # R3: the regularised ViT at 5.5k (0.73) against the plain one at 55k (0.75): 2 points short
    assert found["R3"]["q"] == pytest.approx(-2.0, abs=0.01) and found["R3"]["verdict"] == "fails"
    hurting = readouts.regularisation_arm(_curve(lift_vit_small=-0.02, lift_bit=0.01), plain)
    assert hurting["R1"]["verdict"] == "fails" and hurting["R2"]["verdict"] == "fails"


def _widths(d_small, d_large, flops_ratio_bit=4.0):
    """ViT widths 32, 64 and BiT widths 4, 8 at 550 and 55k; the wider ViT is d_small / d_large better."""
    rows = []
    for seed in (0, 1):
        for size, d in ((550, d_small), (55_000, d_large)):
            base = 0.70 + 0.2 * (size == 55_000) + 0.001 * seed
            rows += _sized([row("vit", size, seed, base)], width=32, flops=1.0)
            rows += _sized([row("vit", size, seed, base + d)], width=64, flops=4.0)
            rows += _sized([row("bit", size, seed, base - 0.01)], width=4, flops=flops_ratio_bit)
            rows += _sized([row("bit", size, seed, base + d)], width=8, flops=4 * flops_ratio_bit)
    return rows


def test_model_size_read_outs():
    found = readouts.model_size_arm(_widths(d_small=-0.02, d_large=0.02))
    assert found["M1"]["q"] == pytest.approx(4.0) and found["M1"]["verdict"] == "holds"
    assert found["M2"]["verdict"] == "holds"
    # Both fronts reach the wide models' accuracy; the BiT needs 4x the ViT's FLOPs: one doubling beyond 2x
    assert found["M3"]["q"] == pytest.approx(1.0) and found["M3"]["verdict"] == "holds"
    assert readouts.model_size_arm(_widths(d_small=-0.02, d_large=0.002))["M2"]["verdict"] == "inconclusive"
    assert readouts.model_size_arm(_widths(0.0, 0.02, flops_ratio_bit=0.5))["M3"]["verdict"] == "fails"


def test_patch_and_transfer_read_outs():
    rows = [r for seed in (0, 1) for patch, acc in ((14, 0.85), (7, 0.86), (4, 0.89))
            for r in _sized([row("vit", 55_000, seed, acc + 0.001 * seed)], patch=patch)]
    found = readouts.patch_size_arm(rows)
    assert found["S1"]["q"] == pytest.approx(3.0) and found["S1"]["verdict"] == "holds"
    assert found["S1'"]["q"] == pytest.approx(1.0) and found["S1'"]["verdict"] == "holds"
    assert "S2" not in found  # no patch-2 runs yet
    rows += [r for seed in (0, 1) for patch, acc in ((4, 0.80), (2, 0.79))
             for r in _sized([row("vit", 5_500, seed, acc + 0.002 * seed)], patch=patch)]
    s2 = readouts.patch_size_arm(rows)["S2"]
    assert s2["q"] == pytest.approx(-1.0) and s2["verdict"] == "fails"
    probe = []
    for seed in (0, 1):
        for size, vit, bit in ((550, 0.60, 0.70), (27_500, 0.70, 0.72)):
            probe += [{**row("vit", size, seed, 0.9), "transfer_10shot": vit + 0.001 * seed},
                      {**row("bit", size, seed, 0.9), "transfer_10shot": bit}]
    t1 = readouts.transfer_arm(probe)["T1"]
    assert t1["q"] == pytest.approx(8.0) and t1["verdict"] == "holds" and t1["sizes"] == [550, 27_500]


def test_patch_four_may_come_from_the_model_size_sweeps_runs_of_the_same_width():
    patch_rows = [r for seed in (0, 1) for patch, acc in ((14, 0.85), (7, 0.86))
                  for r in _sized([row("vit", 55_000, seed, acc)], width=64, patch=patch)]
    model_size_rows = [r for seed in (0, 1) for width, acc in ((32, 0.80), (64, 0.88))
                       for r in _sized([row("vit", 55_000, seed, acc)], width=width, patch=4)]
    found = readouts.patch_size_arm(patch_rows + model_size_rows)
    assert found["S1"]["q"] == pytest.approx(2.0)  # the width-64 ViT's 88 against patch 7's 86; not width 32's


def _family_rows(family, accs):
    """{size: accuracy} at seeds 0, 1 as one family's table (seed 1 a little better)."""
    return [{**row(family, n, seed, acc + 0.002 * seed)} for seed in (0, 1) for n, acc in accs.items()]


def test_swin_and_deit_read_outs_pair_with_the_plain_arm():
    plain = _family_rows("vit", {550: 0.60, 1_700: 0.70, 55_000: 0.88}) + \
        _family_rows("bit", {550: 0.66, 1_700: 0.75, 55_000: 0.91})
    swin = _family_rows("swin", {550: 0.64, 1_700: 0.72, 55_000: 0.885})
    found = readouts.swin_arm(swin, plain)
    assert found["W1"]["q"] == pytest.approx(3.0) and found["W1"]["verdict"] == "holds"
    assert found["W2"]["q"] == pytest.approx(2.5) and found["W2"]["verdict"] == "holds"
    before_55k = readouts.swin_arm([r for r in swin if r["train_size"] < 55_000], plain)
    assert before_55k.keys() == {"W1"} and before_55k["W1"]["q"] == pytest.approx(3.0)
    deit = _family_rows("deit", {550: 0.62, 1_700: 0.71, 55_000: 0.882})
    deit_aug = _family_rows("deit", {550: 0.65, 1_700: 0.74, 55_000: 0.90})
    found = readouts.deit_arm(deit, deit_aug, plain)
    assert found["D2"]["q"] == pytest.approx(1.5) and found["D2"]["verdict"] == "holds"
    assert found["D1"]["q"] == pytest.approx(1.3) and found["D1"]["verdict"] == "holds"
    assert found["D3"]["q"] == pytest.approx(3.0) and found["D3"]["verdict"] == "holds"
    assert found["D4"]["q"] == pytest.approx(-1.0) and found["D4"]["verdict"] == "fails"  # the student trails its teacher
    small_only = [r for r in deit if r["train_size"] < 55_000]
    assert readouts.deit_arm(small_only, [], plain).keys() == {"D2"}  # each read-out waits for its runs
    assert readouts.deit_arm(small_only, [r for r in deit_aug if r["train_size"] < 55_000], plain).keys() == {"D2", "D3"}
    assert readouts.deit_arm([], deit_aug, plain).keys() == {"D4"}


def _fine_tuned(method, accs, init_from="experiments/results/self_supervised/pretrained/{}_pretrain.npz"):
    """A ViT fine-tuned from `method`'s pre-training (its export, or `init_from`) at seeds 0, 1."""
    rows = _family_rows("vit", accs)
    for r in rows:
        r["config"] = {**r["config"], "init_from": init_from.format(method)}
    return rows


def test_label_free_read_outs_pair_each_encoders_fine_tuning_with_the_plain_arm():
    plain = _family_rows("vit", {550: 0.60, 1_700: 0.70, 55_000: 0.88}) + \
        _family_rows("bit", {550: 0.66, 1_700: 0.75, 55_000: 0.91})
    finetune = _fine_tuned("mae", {550: 0.70, 1_700: 0.77, 55_000: 0.89}) + \
        _fine_tuned("dino", {550: 0.64, 1_700: 0.72, 55_000: 0.875})
    found = readouts.self_supervised_arm(finetune, plain)
    assert found["U1"]["q"] == pytest.approx(3.0) and found["U1"]["verdict"] == "holds"
    assert found["U2"]["q"] == pytest.approx(-2.5) and found["U2"]["verdict"] == "fails"
    assert found["U3_mae"]["q"] == pytest.approx(7.5)  # lifts 10 and 7 points at <= 1.7k, 1 at 55k
    assert found["U3_dino"]["q"] == pytest.approx(3.5) and found["U3_dino"]["verdict"] == "holds"


def test_label_free_read_outs_wait_for_their_runs_and_know_a_run_directory_as_the_source():
    plain = _family_rows("vit", {550: 0.60, 1_700: 0.70, 55_000: 0.88}) + \
        _family_rows("bit", {550: 0.66, 1_700: 0.75, 55_000: 0.91})
    mae_small = _fine_tuned("mae", {550: 0.70, 1_700: 0.77}, init_from="runs/self_supervised/{}_pretrain/")
    assert readouts.self_supervised_arm(mae_small, plain).keys() == {"U1"}
    assert readouts.self_supervised_arm(mae_small, plain)["U1"]["q"] == pytest.approx(3.0)
    other = _fine_tuned("mae", {550: 0.70, 1_700: 0.77}, init_from="runs/other/mae_pretrain_v2.npz")
    assert readouts.self_supervised_arm(other, plain) == {}  # not this study's encoder
    dino_all = _fine_tuned("dino", {550: 0.64, 1_700: 0.72, 55_000: 0.875})
    assert readouts.self_supervised_arm(mae_small + dino_all, plain).keys() == {"U1", "U2", "U3_dino"}


def _knn_file(run_dir, size, seed, accuracy):
    run_dir.mkdir(exist_ok=True)
    (run_dir / f"knn_n{size}_s{seed}.json").write_text(json.dumps(
        {"knn_20_top1": accuracy, "train_size": size, "subset_seed": seed}))


def test_knn_read_out_pairs_the_dino_bank_with_the_vit_trained_on_the_same_images(tmp_path):
    dino, vits = tmp_path / "dino_pretrain", []
    for size, d, v in ((550, 0.70, 0.62), (1_700, 0.76, 0.71)):
        for seed in (0, 1):
            _knn_file(dino, size, seed, d + 0.01 * seed)
            vits.append(tmp_path / f"vit_n{size}_s{seed}")
            _knn_file(vits[-1], size, seed, v)
    _knn_file(dino, 55_000, 0, 0.99)  # a size the read-out does not use
    found = readouts.knn_arm([str(dino)], [str(v) for v in vits])
    assert found["U4"]["per_seed"] == pytest.approx([6.5, 7.5]) and found["U4"]["verdict"] == "holds"
    _knn_file(vits[0].parent / "copy", 550, 0, 0.5)
    with pytest.raises(ValueError, match="two k-NN results for 550 images, subset seed 0"):
        readouts.knn_arm([str(dino)], [str(v) for v in vits] + [str(vits[0].parent / "copy")])


def _segmentation(tmp_path, dino, permuted, init, supervised):
    path = tmp_path / "cls_segmentation.json"
    path.write_text(json.dumps({"trained": {"per_image": dino, "per_image_permuted": permuted},
                                "init": {"per_image": init}, "beside": {"per_image": supervised}}))
    return str(path)


def test_segmentation_read_out_needs_every_reference_beaten_and_fails_only_against_the_supervised_vit(tmp_path):
    dino = [0.50, 0.55, 0.60, 0.52]
    beaten = [j - 0.2 for j in dino]
    found = readouts.segmentation_arm(_segmentation(tmp_path, dino, beaten, beaten, [j - 0.1 for j in dino]))
    assert found["U5"]["verdict"] == "holds"
    assert found["U5"]["against"]["supervised ViT"]["q"] == pytest.approx(0.1)
    assert found["U5"]["against"]["supervised ViT"]["tau"] == pytest.approx(0.02)  # paired differences all equal
    tie = readouts.segmentation_arm(_segmentation(tmp_path, dino, beaten, beaten, [j + 0.01 for j in dino]))
    assert tie["U5"]["verdict"] == "inconclusive"
    worse = readouts.segmentation_arm(_segmentation(tmp_path, dino, beaten, dino, [j + 0.1 for j in dino]))
    assert worse["U5"]["verdict"] == "fails"


# --- The budget ladder's convergence check ---------------------------------------------------------

@pytest.mark.parametrize("validation,expected", [
    ({1: 80.0, 2: 80.4, 4: 81.5}, (1, False)),   # 2x gains 0.4 <= 0.5: 1x is converged
    ({1: 80.0, 2: 81.0, 4: 81.5}, (2, False)),   # 2x gains 1.0, 4x 0.5 (<= the floor): 2x
    ({1: 80.0, 2: 81.0, 4: 82.0}, (4, True)),    # every rung still gains: capped at the top
    ({1: 80.0, 2: 79.0}, (1, False)),            # a loss is no gain
])
def test_converged_rung_is_the_shortest_whose_next_gains_at_most_the_floor(validation, expected):
    assert readouts.protocol.converged_rung(validation) == expected


def test_a_ladder_of_one_rung_cannot_be_checked():
    with pytest.raises(ValueError, match="at least two rungs"):
        readouts.protocol.converged_rung({1: 80.0})


def ladder_row(family, size, seed, multiple, val, test, *, key="host A"):
    base = readouts.protocol.BUDGET.steps(size)
    return {"name": f"{family}_n{size}_s{seed}_x{multiple}", "status": "finished", "family": family,
            "train_size": size, "seed": seed, "steps": multiple * base, "best_val_accuracy": val / 100,
            "accuracy": test / 100, "best_step": multiple * base, "wall_seconds": 60.0 * multiple, "pair_key": key}


def _ladder_table(key_of_bit_55k="host A"):
    rows = []
    for size in (550, 1_700, 5_500, 55_000):
        # The ViT at 55k keeps gaining (capped at 4x); everything else converges at 1x.
        vit = {1: 80.0, 2: 82.0, 4: 84.0} if size == 55_000 else {1: 70.0, 2: 70.2, 4: 70.1}
        bit = {1: 85.0, 2: 85.3, 4: 85.4} if size == 55_000 else {1: 73.0, 2: 73.1, 4: 73.0}
        for m in (1, 2, 4):
            rows.append(ladder_row("vit", size, 0, m, vit[m], vit[m] - 0.5))
            rows.append(ladder_row("bit", size, 0, m, bit[m], bit[m] - 0.5,
                                   key=key_of_bit_55k if size == 55_000 else "host A"))
    return rows


def test_convergence_table_chooses_on_validation_and_marks_the_capped_points():
    found = readouts.convergence(_ladder_table())
    assert found["vit_n55000"]["chosen"] == 4 and found["vit_n55000"]["capped"]
    assert found["bit_n55000"]["chosen"] == 1 and not found["bit_n55000"]["capped"]
    assert found["vit_n550"]["rungs"][2]["epochs"] == pytest.approx(2400 * 128 / 550)


def test_converged_read_outs_take_each_family_at_its_chosen_budget():
    decided = readouts.converged_arm(_ladder_table())
    # G*(55k) = BiT at 1x (84.5) - ViT at 4x (83.5) = 1.0; G*(550) = G*(1.7k) = 72.5 - 69.5 = 3.0.
    assert decided["C2"]["q"] == pytest.approx(1.0)
    assert decided["C1"]["q"] == pytest.approx(3.0 - 1.0)
    assert decided["C4"]["q"] == pytest.approx((83.5 - 79.5) - 0.0)
    assert decided["C2"]["verdict"] == decided["C2"]["verdict_t"] == "provisional (n = 1)"


def test_converged_read_outs_refuse_runs_of_different_hosts_or_code():
    decided = readouts.converged_arm(_ladder_table(key_of_bit_55k="host B"))
    assert set(decided) == {"C1", "C2", "C3", "C4"}  # each reads the 55k BiT: none is paired across hosts
    assert all(d["verdict"] == d["verdict_t"] == "not pairable" and "differ in host" in d["why"]
               for d in decided.values())


def test_a_read_out_whose_runs_share_a_host_is_decided_beside_one_that_cannot_pair():
    table = [r for r in _ladder_table() if r["train_size"] != 1_700]  # C1 cannot be computed without 1.7k
    for r in table:
        if r["train_size"] == 5_500 and r["family"] == "vit":
            r["pair_key"] = "host B"
    decided = readouts.converged_arm(table)
    assert decided["C3"]["verdict"] == "not pairable" and "C1" not in decided
    assert decided["C2"]["q"] == pytest.approx(1.0) and decided["C4"]["verdict"] == "provisional (n = 1)"


def test_two_seeds_may_come_from_two_hosts_but_not_one_seed():
    table = _ladder_table()
    for row in list(table):
        if row["train_size"] == 55_000:  # seed 1: every term of its pair on host B
            table.append({**row, "seed": 1, "accuracy": row["accuracy"] + 0.01, "pair_key": "host B"})
    decided = readouts.converged_arm(table)
    assert decided["C2"]["df"] == 1 and decided["C2"]["q"] == pytest.approx(1.0)
    next(r for r in table if r["seed"] == 1 and r["family"] == "vit" and r["steps"] == 4 * 3_438)["pair_key"] = "C"
    assert "seed 1's runs to be paired differ" in readouts.converged_arm(table)["C2"]["why"]


def test_converged_read_outs_take_the_multiples_of_a_committed_ladder():
    """A re-run of the converged budgets alone (no ladder among its rows) is read at the multiples the
    committed ladder chose, as convergence.json holds them (string keys, as JSON reads them back)."""
    committed = json.loads(json.dumps(readouts.convergence(_ladder_table())))
    rerun = [r for r in _ladder_table() if r["steps"] == readouts.protocol.BUDGET.steps(r["train_size"])
             * (4 if (r["family"], r["train_size"]) == ("vit", 55_000) else 1)
             or (r["family"], r["train_size"], r["steps"]) == ("vit", 55_000, 3_438)]
    assert readouts.converged_arm(rerun) == {}  # without the ladder nothing says which rung is converged
    decided = readouts.converged_arm(rerun, committed)
    assert decided == readouts.converged_arm(_ladder_table())


def test_replicates_pair_runs_of_one_name_and_give_the_difference():
    first = [ladder_row("vit", 550, 0, 1, 63.3, 63.9, key="B"), ladder_row("bit", 550, 0, 1, 70.0, 70.0, key="B")]
    second = [ladder_row("vit", 550, 0, 1, 65.1, 64.9, key="A"), {**ladder_row("bit", 550, 0, 1, 0, 0), "status": "pending"}]
    found = readouts.replicates(first, second)
    assert list(found) == ["vit_n550_s0_x1"]  # a run finished in one of them only is no replicate
    assert found["vit_n550_s0_x1"]["test_difference"] == pytest.approx(-1.0)
    assert found["vit_n550_s0_x1"]["val_difference"] == pytest.approx(-1.8)
    assert found["vit_n550_s0_x1"]["pair_keys"] == ("B", "A")


def _write_table(path, rows):
    path.mkdir()
    (path / "results.json").write_text(json.dumps({"columns": sorted(rows[0]), "runs": rows}))
    return str(path)


def test_parts_of_a_study_merge_by_run_name_a_finished_run_over_a_pending_one(tmp_path):
    committed = [ladder_row("vit", 550, 0, 1, 65.0, 64.9), ladder_row("vit", 550, 0, 2, 65.3, 65.5)]
    pending = {**ladder_row("vit", 550, 0, 2, 0.0, 0.0), "status": "pending"}
    new_part = [pending, ladder_row("bit", 550, 0, 1, 70.0, 70.1)]
    rows = readouts.merged_rows([_write_table(tmp_path / "a", committed), _write_table(tmp_path / "b", new_part)])
    assert sorted(r["name"] for r in rows) == ["bit_n550_s0_x1", "vit_n550_s0_x1", "vit_n550_s0_x2"]
    assert all(r["status"] == "finished" for r in rows)
    again = _write_table(tmp_path / "c", [ladder_row("vit", 550, 0, 1, 66.0, 66.0)])
    with pytest.raises(ValueError, match="vit_n550_s0_x1 finished in two"):
        readouts.merged_rows([str(tmp_path / "a"), again])


def test_seeds_to_decide_from_the_observed_effect_and_spread():
    # Q = 1.0, sd = 0.5: n = 3 gives t(0.975, 2) 0.5 / sqrt(3) = 1.24 > 1; n = 4: 3.182 x 0.25 = 0.80 < 1.
    assert readouts.seeds_to_decide({"q": 1.0, "per_seed": [0.5, 1.0, 1.5]}) == 4
    assert readouts.seeds_to_decide({"q": 0.4, "per_seed": [0.3, 0.5]}) is None  # below the 0.5 floor
    assert readouts.seeds_to_decide({"q": 2.0, "se": 0.0}) is None  # unpaired: no per-seed spread


def test_tuning_picks_the_best_validation_and_names_the_edges_it_sits_on():
    rows = []
    for lr, wd, val in ((1e-3, 1e-4, 80.0), (2e-3, 1e-4, 81.0), (4e-3, 1e-4, 82.0), (1e-3, 0.05, 79.0),
                        (2e-3, 0.05, 81.5), (4e-3, 0.05, 81.9)):
        rows.append({"status": "finished", "family": "bit", "train_size": 550, "best_val_accuracy": val / 100,
                     "accuracy": 0.0, "config": {"lr": lr, "weight_decay": wd}})
    found = readouts.tuning(rows)["bit_n550"]
    assert found["pick"] == {"lr": 4e-3, "weight_decay": 1e-4, "val": pytest.approx(82.0)}
    assert found["edges"] == ["highest lr", "lowest wd"]  # the grid extends past both before it counts


def test_tuning_extends_the_grid_one_step_past_each_edge_a_pick_sits_on():
    picks = {"bit_n550": {"pick": {"lr": 4e-3, "weight_decay": 1e-4}, "edges": ["highest lr", "lowest wd"]},
             "vit_n5500": {"pick": {"lr": 1e-3, "weight_decay": 0.05}, "edges": ["lowest lr", "highest wd"]},
             "vit_n550": {"pick": {"lr": 2e-3, "weight_decay": 0.05}, "edges": ["highest wd"]},
             "bit_n5500": {"pick": {"lr": 2e-3, "weight_decay": 1e-4}, "edges": ["lowest wd"]}}
    runs = {name: overrides for name, _, overrides in tuning_sweep.extension_runs(picks)}
    # No step below the lowest decay is registered; each step keeps the pick's other setting.
    assert sorted(runs) == ["bit_n550_lr0.008_wd0.0001", "vit_n5500_lr0.0005_wd0.05", "vit_n5500_lr0.001_wd0.3",
                            "vit_n550_lr0.002_wd0.3"]
    assert runs["vit_n5500_lr0.001_wd0.3"]["data.train_size"] == 5_500
    assert (runs["bit_n550_lr0.008_wd0.0001"]["lr"], runs["bit_n550_lr0.008_wd0.0001"]["weight_decay"]) == (8e-3, 1e-4)


def _tuning_dir(path, family, size, steps, grid):
    rows = [{"name": f"{family}_n{size}_lr{lr:g}_wd{wd:g}", "status": "finished", "family": family,
             "train_size": size, "steps": steps, "best_val_accuracy": val / 100, "accuracy": 0.0,
             "config": {"lr": lr, "weight_decay": wd}} for (lr, wd), val in grid.items()]
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "results.json"), "w") as f:
        json.dump({"runs": rows}, f)
    return str(path)


def test_the_bracket_reruns_each_edge_pick_beside_the_next_registered_step_past_it(tmp_path):
    """part=bracket: the pick again (so that the pair shares host and code) and one run per edge it may
    pass, at the pick's multiple; never below the lowest decay, only the rate at 55k, nothing at 1.7k."""
    small = _tuning_dir(tmp_path / "small", "bit", 550, 1_200, {
        (4e-3, 1e-4): 70.0, (8e-3, 1e-4): 72.9, (4e-3, 0.05): 69.0, (8e-3, 0.05): 71.0})
    more = _tuning_dir(tmp_path / "more", "vit", 5_500, 1_200, {
        (2e-3, 0.05): 81.0, (4e-3, 0.05): 82.0, (4e-3, 0.3): 83.5, (8e-3, 0.05): 81.8})
    large = _tuning_dir(tmp_path / "large", "vit", 55_000, 2 * 3_438, {
        (2e-3, 0.3): 89.8, (4e-3, 0.3): 88.3, (8e-3, 0.3): 87.4})
    between = _tuning_dir(tmp_path / "between", "vit", 1_700, 1_200, {(8e-3, 0.05): 76.1, (4e-3, 0.3): 78.2})
    runs = {name: o for name, _, o in tuning_sweep.bracket_runs([small, more, large, between])}
    assert sorted(runs) == ["bit_n550_lr0.008_wd0.0001", "bit_n550_lr0.016_wd0.0001", "vit_n55000_lr0.001_wd0.3",
                            "vit_n55000_lr0.002_wd0.3", "vit_n5500_lr0.004_wd0.3", "vit_n5500_lr0.004_wd1"]
    assert runs["vit_n55000_lr0.001_wd0.3"]["total_steps"] == 2 * 3_438
    assert runs["bit_n550_lr0.016_wd0.0001"]["total_steps"] == 1_200
    assert runs["vit_n5500_lr0.004_wd1"]["weight_decay"] == 1.0 and runs["vit_n5500_lr0.004_wd1"]["lr"] == 4e-3


def test_the_bracket_of_the_committed_picks_is_the_registered_twelve_runs():
    names = [name for name, _, _ in tuning_sweep.get_runs("part=bracket")]
    assert sorted(names) == sorted(
        [f"{family}_n550_lr{lr}_wd{wd}" for family, wd in (("vit", "0.05"), ("bit", "0.0001"))
         for lr in ("0.008", "0.016")]
        + [f"{family}_n5500_lr0.004_wd{wd}" for family in ("vit", "bit") for wd in ("0.3", "1")]
        + [f"{family}_n55000_lr{lr}_wd0.3" for family in ("vit", "bit") for lr in ("0.002", "0.001")])


def _picks(**sizes):
    # At 55k the part's three rates, the pick among them.
    return {key: {"pick": {"lr": lr, "weight_decay": wd}, "edges": [],
                  "grid": [{"lr": rate, "weight_decay": wd} for rate in (lr / 2, lr, lr * 2)]}
            for key, (lr, wd) in sizes.items()}


def test_a_size_the_grid_skipped_trains_both_neighbouring_picks():
    found = _picks(vit_n550=(8e-3, 0.05), vit_n5500=(4e-3, 0.3), bit_n550=(4e-3, 0.3), bit_n5500=(4e-3, 0.3))
    runs = {name: overrides for name, _, overrides in tuning_sweep.between_runs(found)}
    assert sorted(runs) == ["bit_n1700_lr0.004_wd0.3", "vit_n1700_lr0.004_wd0.3", "vit_n1700_lr0.008_wd0.05"]
    assert runs["vit_n1700_lr0.008_wd0.05"]["data.train_size"] == 1_700
    assert runs["vit_n1700_lr0.008_wd0.05"]["total_steps"] == readouts.protocol.BUDGET.steps(1_700)


def test_primed_runs_train_each_size_at_its_pick_and_the_ladders_multiple(tmp_path):
    found = _picks(vit_n550=(8e-3, 0.05), vit_n1700=(4e-3, 0.3), vit_n5500=(4e-3, 0.3), vit_n55000=(2e-3, 0.3),
                   bit_n550=(8e-3, 1e-4), bit_n1700=(4e-3, 0.3), bit_n5500=(4e-3, 0.3), bit_n55000=(4e-3, 0.3))
    chosen = {f"{f}_n{n}": {"chosen": m} for f, n, m in (("vit", 550, 1), ("vit", 1_700, 1), ("vit", 5_500, 1),
                                                          ("vit", 55_000, 2), ("bit", 550, 4), ("bit", 1_700, 1),
                                                          ("bit", 5_500, 1), ("bit", 55_000, 1))}
    json.dump(chosen, open(tmp_path / "convergence.json", "w"))
    primed = tuning_sweep.primed_runs(found, seed=2, chosen_file=str(tmp_path / "convergence.json"))
    runs = {name: overrides for name, _, overrides in primed}
    # The ViT's 55k trunk at 2x with C4's 1x branched off it; the BiT's capped 550 at 4x with its 1x.
    assert sorted(runs) == sorted(["vit_n550_s2_x1", "vit_n1700_s2_x1", "vit_n5500_s2_x1", "vit_n55000_s2_x2",
                                   "vit_n55000_s2_x1", "bit_n550_s2_x4", "bit_n550_s2_x1", "bit_n1700_s2_x1",
                                   "bit_n5500_s2_x1", "bit_n55000_s2_x1"])
    assert (runs["vit_n55000_s2_x1"]["lr"], runs["vit_n55000_s2_x1"]["weight_decay"]) == (2e-3, 0.3)
    assert runs["vit_n55000_s2_x1"]["branch_from"].endswith("vit_n55000_s2_x2")
    assert (runs["bit_n550_s2_x4"]["lr"], runs["bit_n550_s2_x4"]["seed"], runs["bit_n550_s2_x4"]["data.subset_seed"]) \
        == (8e-3, 2, 2)
    with pytest.raises(ValueError, match="no tuning pick for vit at 1700 images: run experiments/tuning.py:part=between"):
        tuning_sweep.primed_runs({k: v for k, v in found.items() if k != "vit_n1700"}, seed=0)
    cut_short = {**found, "bit_n55000": {**found["bit_n55000"], "grid": found["bit_n55000"]["grid"][:2]}}
    with pytest.raises(ValueError, match="holds 2 of bit's 3 rates: train the rest of experiments/tuning.py:part=large"):
        tuning_sweep.primed_runs(cut_short, seed=0, chosen_file=str(tmp_path / "convergence.json"))


def test_the_tuned_ladders_climb_each_55k_pick_then_seeds_train_at_their_choice(tmp_path, monkeypatch):
    """part=ladders: seed 0 of one family at its 55k pick as its own ladder (the ViT 1x-8x, the BiT 1x-4x,
    one trunk each); part=ladder_seeds: another seed of both at the multiples those ladders chose."""
    found = _picks(vit_n55000=(2e-3, 0.3), bit_n55000=(4e-3, 0.3))
    vit = {name: o for name, _, o in tuning_sweep.tuned_ladder_runs(found, "vit")}
    assert list(vit) == [f"vit_n55000_s0_x{m}" for m in (8, 1, 2, 4)]
    assert vit["vit_n55000_s0_x8"]["total_steps"] == 8 * 3_438 and vit["vit_n55000_s0_x8"]["schedule"] == "wsd"
    assert (vit["vit_n55000_s0_x2"]["lr"], vit["vit_n55000_s0_x2"]["weight_decay"]) == (2e-3, 0.3)
    assert vit["vit_n55000_s0_x2"]["branch_from"].endswith("/vit_n55000_s0_x8")
    bit = [name for name, _, _ in tuning_sweep.tuned_ladder_runs(found, "bit")]
    assert bit == [f"bit_n55000_s0_x{m}" for m in (4, 1, 2)]
    with pytest.raises(ValueError, match="model='deit'; the tuned ladders are vit, bit"):
        tuning_sweep.tuned_ladder_runs(found, "deit")
    chosen = tmp_path / "convergence.json"
    with pytest.raises(ValueError, match="convergence.json is missing: run part=ladders"):
        tuning_sweep.tuned_seed_runs(found, 1, str(chosen))
    chosen.write_text(json.dumps({"vit_n55000": {"chosen": 4}, "bit_n55000": {"chosen": 2}}))
    runs = {name: o for name, _, o in tuning_sweep.tuned_seed_runs(found, 2, str(chosen))}
    assert sorted(runs) == ["bit_n55000_s2_x1", "bit_n55000_s2_x2", "vit_n55000_s2_x1", "vit_n55000_s2_x4"]
    assert (runs["bit_n55000_s2_x2"]["lr"], runs["bit_n55000_s2_x2"]["seed"]) == (4e-3, 2)
    with pytest.raises(ValueError, match="seed=0: seed 0's runs are part=ladders's"):
        tuning_sweep.tuned_seed_runs(found, 0, str(chosen))
    monkeypatch.setattr(tuning_sweep, "picks", lambda directories: found)
    assert len(tuning_sweep.get_runs("part=ladders,model=bit")) == 3
    with pytest.raises(ValueError, match="part=ladders needs model="):
        tuning_sweep.get_runs("part=ladders")


def test_c2t_and_c4t_read_the_tuned_ladders_at_the_multiples_they_chose(tmp_path, capsys):
    """The tuned ladders choose for themselves (no --chosen): the ViT climbs to 4x, the BiT stops at 1x."""
    rows = [ladder_row("vit", 55_000, 0, m, v, v - 0.5) for m, v in ((1, 88.0), (2, 89.0), (4, 90.0), (8, 90.3))]
    rows += [ladder_row("bit", 55_000, 0, m, v, v - 0.5) for m, v in ((1, 92.0), (2, 92.2), (4, 92.3))]
    table.write(str(tmp_path), [{**r, "overrides": {}, "error": ""} for r in rows])
    assert readouts.main(["--tuned_ladders", str(tmp_path), "--out", str(tmp_path / "r.json")]) == 0
    decided = json.load(open(tmp_path / "r.json"))
    assert sorted(decided) == ["C2t", "C4t"]
    assert decided["C2t"]["q"] == pytest.approx(91.5 - 89.5)  # the BiT at 1x against the ViT at 4x
    assert decided["C4t"]["q"] == pytest.approx(90.0 - 88.0)
    assert "C2t: provisional (n = 1)" in capsys.readouterr().out


def test_primed_read_outs_need_the_committed_ladder(capsys):
    with pytest.raises(SystemExit):
        readouts.main(["--primed", "runs/primed"])
    assert "--primed needs --chosen" in capsys.readouterr().err


def _sam_run(sweep_dir, arm, seed, miou, *, cpu="cpu A"):
    """A finished SAM run of experiments/sam_init.py: {'<group>_<prompt>': mIoU (0-1)} at best validation."""
    run_dir = os.path.join(sweep_dir, f"sam_{arm}_s{seed}")
    os.makedirs(run_dir)
    results = {f"test_miou_{key}_at_best": value for key, value in miou.items()}
    results.update({"test_miou_seen_1click": 0.0, "host": {"cpu": cpu, "isa": []}, "devices": 4,
                    "code": {"source_sha256": "abc"}})
    with open(os.path.join(run_dir, "results.json"), "w") as f:
        json.dump(results, f)


def _sam_table(sweep_dir, seeds=(0, 1, 2), cpu_of=lambda seed: "cpu A"):
    # Per seed: random 0.40 / MAE 0.45 / ViT 0.42 unseen at 1 click (+ seed / 100); seen 1 click: MAE
    # lifts it by 4 points, 1 point less than unseen; 3 clicks add 10 points to every arm.
    for seed in seeds:
        for arm, unseen in (("random", 0.40), ("mae", 0.45), ("vit", 0.42)):
            u1 = unseen + seed / 100
            seen = u1 - 0.01 if arm == "mae" else u1
            _sam_run(sweep_dir, arm, seed, {"unseen_1click": u1, "unseen_3click": u1 + 0.1,
                                            "unseen_box": u1 + 0.05, "seen_1click": seen}, cpu=cpu_of(seed))


def test_sam_init_read_outs_pair_the_arms_by_seed_in_miou_points(tmp_path):
    _sam_table(str(tmp_path))
    found = readouts.sam_init_arm([str(tmp_path)])
    assert found["I1"]["q"] == pytest.approx(5.0) and found["I1"]["se"] == pytest.approx(0.0, abs=1e-9)
    assert found["I1"]["tau"] == readouts.SAM_FLOOR == 1.0 and found["I1"]["verdict"] == "holds"
    assert found["I2"]["q"] == pytest.approx(5.0)
    assert found["I3"]["q"] == pytest.approx(2.0) and found["I3"]["verdict_t"] == "holds"
    assert found["I4"]["q"] == pytest.approx(3.0)
    assert found["I5"]["q"] == pytest.approx(1.0) and found["I5"]["verdict"] == "holds"  # as good within noise
    assert found["I6"]["q"] == pytest.approx(10.0)
    assert "paired over seeds [0, 1, 2]" in found["I1"]["how"]


def test_sam_init_read_outs_wait_for_two_seeds_and_refuse_a_seed_split_over_hosts(tmp_path):
    _sam_table(str(tmp_path / "one"), seeds=(0,))
    assert readouts.sam_init_arm([str(tmp_path / "one")]) == {}
    _sam_table(str(tmp_path / "two"), seeds=(1,), cpu_of=lambda seed: "cpu B")
    _sam_run(str(tmp_path / "two"), "random", 0, {"unseen_1click": 0.4})
    with pytest.raises(ValueError, match="sam_random_s0 finished in .*one and .*two: keep one"):
        readouts.sam_init_arm([str(tmp_path / "one"), str(tmp_path / "two")])
    mixed = tmp_path / "mixed"
    _sam_table(str(mixed), seeds=(0, 1), cpu_of=lambda seed: "cpu A")
    os.rename(mixed / "sam_mae_s1", tmp_path / "elsewhere")
    _sam_run(str(mixed), "mae", 1, {"unseen_1click": 0.46, "unseen_3click": 0.56, "unseen_box": 0.5,
                                    "seen_1click": 0.45}, cpu="cpu B")
    with pytest.raises(ValueError, match="seed 1's runs to be paired differ in host"):
        readouts.sam_init_arm([str(mixed)])


@pytest.mark.parametrize("name,ladder", [("vit_n550_s0_x2", "vit"), ("vit_w32_n55000_s1_x4", "vit_w32"),
                                         ("deitaug_n55000_s0_x1", "deitaug"), ("vit_n550_s0", None),
                                         ("vit_b16_n1.3M_s0_x4", None), ("trunk", None)])
def test_a_rungs_ladder_is_read_from_its_name(name, ladder):
    assert readouts.ladder_of(name) == ladder


def test_an_arms_ladder_is_chosen_apart_from_its_familys():
    rows = _ladder_table() + [ladder_row("vit_w32", 550, 0, m, v, v) for m, v in ((1, 60.0), (2, 61.0), (4, 61.2))]
    for r in rows[-3:]:
        r["family"] = "vit"
    found = readouts.convergence(rows)
    assert found["vit_w32_n550"]["chosen"] == 2 and found["vit_w32_n550"]["model_family"] == "vit"
    assert found["vit_n550"]["chosen"] == 1  # the plain ViT's ladder is unchanged by the arm's


def _ladders(ladder, family, rungs_by_size, seeds=(0, 1), key="host A", width=None):
    """Every rung of `ladder` ({size: {multiple: validation}}) for each seed, shorter rungs branched off the
    longest as the ladders train them; test = validation - 0.5 + 0.1 x seed; the model's width and FLOPs
    (1 per step) where the model-size read-outs read them."""
    rows = []
    for seed in seeds:
        for size, rungs in rungs_by_size.items():
            for m, val in rungs.items():
                r = {**ladder_row(ladder, size, seed, m, val, val - 0.5 + 0.1 * seed, key=key), "family": family}
                trunk = f"runs/{ladder}_n{size}_s{seed}_x{max(rungs)}"
                r["config"] = {"model": {"width": width}, "total_steps": r["steps"],
                               **({"branch_from": trunk} if m < max(rungs) else {"keep_checkpoint_steps": (1, 2)})}
                r["train_flops"] = float(r["steps"])
                rows.append(r)
    return rows


_PLAIN_VIT = {n: {1: 70.0, 2: 70.2, 4: 70.1} for n in (550, 1_700, 5_500)} | {55_000: {1: 80.0, 2: 82.0, 4: 84.0}}
_PLAIN_BIT = {n: {1: 73.0, 2: 73.1, 4: 73.0} for n in (550, 1_700, 5_500)} | {55_000: {1: 85.0, 2: 85.3, 4: 85.4}}


def _plain(key="host A"):
    """Chosen: the ViT at 1x below 55k and 4x (capped) at 55k, the BiT at 1x everywhere."""
    return readouts.at_chosen(*(lambda rows: (rows, readouts.convergence(rows)))(
        _ladders("vit", "vit", _PLAIN_VIT, key=key, width=64) + _ladders("bit", "bit", _PLAIN_BIT, key=key, width=8)))


def _arm(rows):
    return readouts.at_chosen(rows, readouts.convergence(rows))


def test_the_regularisation_arm_is_read_at_each_ladders_own_converged_rung():
    vit = {n: {1: 74.0, 2: 76.0, 4: 76.2} for n in (550, 1_700, 5_500)} | {55_000: {1: 83.0, 2: 84.6, 4: 84.8}}
    bit = {n: {1: 74.0, 2: 74.1, 4: 74.0} for n in (550, 1_700, 5_500)} | {55_000: {1: 86.0, 2: 86.1, 4: 86.0}}
    arm = _ladders("vit_lighter", "vit", vit) + _ladders("bit_lighter", "bit", bit)
    found = readouts.budget_arm("reg", _arm(arm), _plain())
    assert sorted(found) == ["R1c", "R2c", "R3c"]
    # At the chosen rungs (the regularised ViT 2x, the plain ViT 1x below 55k, 4x at it; both BiTs 1x):
    # lifts ViT 76 - 70 = 6 below 55k and 84.6 - 84 = 0.6 at it, BiT 74 - 73 = 1.
    assert found["R1c"]["q"] == pytest.approx(6.0 - 1.0) and found["R1c"]["df"] == 1
    assert found["R2c"]["q"] == pytest.approx(6.0 - 0.6) and found["R2c"]["verdict"] == "holds"
    assert found["R3c"]["q"] == pytest.approx(76.0 - 84.0) and found["R3c"]["verdict_t"] == "fails"
    # At the protocol's budget (every 1x rung) the same tables read otherwise: the choice of rung counts.
    at_1x = [r for r in arm + _ladders("vit", "vit", _PLAIN_VIT) + _ladders("bit", "bit", _PLAIN_BIT)
             if r["steps"] == readouts.protocol.BUDGET.steps(r["train_size"])]
    assert readouts.regularisation_arm([r for r in at_1x if "lighter" in r["name"]],
                                       [r for r in at_1x if "lighter" not in r["name"]])["R3"]["q"] == pytest.approx(-6.0)


def test_an_arm_waits_for_its_runs_and_never_pairs_a_seed_across_hosts():
    vit = {n: {1: 74.0, 2: 76.0, 4: 76.2} for n in (550, 1_700, 5_500, 55_000)}
    bit = {n: {1: 74.0, 2: 74.1, 4: 74.0} for n in (550, 1_700, 5_500)}
    assert readouts.budget_arm("reg", _arm(_ladders("vit_lighter", "vit", vit) + _ladders("bit_lighter", "bit", bit)),
                               _plain()) == {}  # the regularised BiT at 55k has not run
    bit[55_000] = {1: 86.0, 2: 86.1, 4: 86.0}
    arm = _ladders("vit_lighter", "vit", vit) + _ladders("bit_lighter", "bit", bit, key="host B")
    found = readouts.budget_arm("reg", _arm(arm), _plain())
    assert sorted(found) == ["R1c", "R2c", "R3c"] and all(r["verdict"] == r["verdict_t"] == "not pairable"
                                                          for r in found.values())


def test_the_model_size_and_deit_arms_at_converged_budgets():
    narrow_vit = _ladders("vit_w32", "vit", {550: {1: 66.0, 2: 66.1, 4: 66.0}, 55_000: {1: 78.0, 2: 81.0, 4: 81.2}},
                          width=32)
    narrow_bit = _ladders("bit_w4", "bit", {550: {1: 72.0, 2: 72.1, 4: 72.0}, 55_000: {1: 84.0, 2: 84.1, 4: 84.0}},
                          width=4)
    found = readouts.budget_arm("size", _arm(narrow_vit + narrow_bit), _plain())
    assert sorted(found) == ["M1c", "M3c"]  # M2 is not re-decided
    # D_ViT = width 64 minus width 32: 70 - 66 = 4 at 550 (both 1x), 84 - 81 = 3 at 55k (4x against 2x).
    assert found["M1c"]["q"] == pytest.approx(3.0 - 4.0)
    # M3c counts each chosen rung's steps: the plain ViT's 4x rung against the narrow BiT's 1x.
    assert found["M3c"]["points"]["vit"][1]["train_flops"] == 4 * readouts.protocol.BUDGET.steps(55_000)
    deit = _ladders("deitaug", "deit", {55_000: {1: 84.0, 2: 85.0, 4: 85.2}})
    d4 = readouts.budget_arm("deit", _arm(deit), _plain())
    assert d4.keys() == {"D4c"} and d4["D4c"]["q"] == pytest.approx(85.0 - 85.0)


def test_the_arms_on_the_command_line_need_the_plain_arm_and_a_known_name(capsys):
    for argv, message in ((["--arms", "reg=runs/a"], "--arms needs --chosen"),
                          (["--convergence", "runs/c", "--arms", "regularisation=runs/a"], "ARM one of reg, size, deit")):
        with pytest.raises(SystemExit):
            readouts.main(argv)
        assert message in capsys.readouterr().err


def test_an_arms_own_controls_are_its_plain_terms_where_its_part_trained_them(tmp_path):
    """The committed plain ladders ran on host A; the arm and its controls on host B: the controls pair,
    the committed runs would not."""
    vit = {n: {1: 74.0, 2: 76.0, 4: 76.2} for n in (550, 1_700, 5_500)} | {55_000: {1: 83.0, 2: 84.6, 4: 84.8}}
    bit = {n: {1: 74.0, 2: 74.1, 4: 74.0} for n in (550, 1_700, 5_500)} | {55_000: {1: 86.0, 2: 86.1, 4: 86.0}}
    arm = _ladders("vit_lighter", "vit", vit, key="host B") + _ladders("bit_lighter", "bit", bit, key="host B")
    committed = _ladders("vit", "vit", _PLAIN_VIT) + _ladders("bit", "bit", _PLAIN_BIT)
    chosen = json.loads(json.dumps(readouts.convergence(committed)))
    controls = [{**r, "pair_key": "host B"} for r in readouts.at_chosen(committed, chosen)]
    _write_table(tmp_path / "arm", arm)
    _write_table(tmp_path / "arm_controls", controls)
    alone = readouts.budget_arms({"reg": [str(tmp_path / "arm")]}, committed, chosen)
    assert alone["R1c"]["verdict"] == "not pairable"
    paired = readouts.budget_arms({"reg": [str(tmp_path / "arm"), str(tmp_path / "arm_controls")]}, [], chosen)
    assert paired["R1c"]["q"] == pytest.approx(5.0) and paired["R3c"]["q"] == pytest.approx(-8.0)
    # Another arm's ladders of the same families and sizes in the same directory (one workdir for the
    # arms, whose controls then train once) are not this arm's.
    narrow = _ladders("vit_w32", "vit", {n: {1: 60.0, 2: 60.1, 4: 60.0} for n in (550, 55_000)}, key="host B", width=32)
    _write_table(tmp_path / "other_arm", narrow)
    shared = [str(tmp_path / d) for d in ("arm", "arm_controls", "other_arm")]
    assert readouts.budget_arms({"reg": shared}, [], chosen) == paired


def test_a_seeds_converged_runs_or_a_ladder_still_training_are_no_ladder():
    rows = _ladder_table()
    controls = [{**r, "name": r["name"].replace("vit_", "vit_w32_")} for r in rows
                if r["family"] == "vit" and r["train_size"] == 55_000 and r["steps"] != 2 * 3_438]
    assert sorted(readouts.convergence(rows + controls)) == sorted(readouts.convergence(rows))
    assert "vit_n550" not in readouts.convergence([r for r in rows if r["name"] != "vit_n550_s0_x2"])


def test_an_arms_report_holds_its_own_ladders_only(tmp_path):
    """convergence_report --arm: the arms' shared workdir holds other arms' ladders and the controls."""
    report = load_module(os.path.join(os.path.dirname(__file__), "..", "..", "experiments", "convergence_report.py"))
    deit = _ladders("deitaug", "deit", {55_000: {1: 84.0, 2: 85.0, 4: 85.2}})
    narrow = _ladders("vit_w32", "vit", {550: {1: 60.0, 2: 60.1, 4: 60.0}}, width=32)
    controls = readouts.at_chosen(_ladders("bit", "bit", {55_000: _PLAIN_BIT[55_000]}), {"bit_n55000": {
        "family": "bit", "size": 55_000, "chosen": 1}})
    workdir = _write_table(tmp_path / "arms", deit + narrow + controls)
    assert report.main([workdir, "--arm", "deit", "--out", str(tmp_path / "deit")]) == 0
    written = json.loads((tmp_path / "deit" / "convergence.json").read_text())
    assert list(written) == ["deitaug_n55000"] and written["deitaug_n55000"]["chosen"] == 2
    assert (tmp_path / "deit" / "convergence.png").stat().st_size > 0
    with pytest.raises(SystemExit, match="no ladder of arm reg"):
        report.main([workdir, "--arm", "reg", "--out", str(tmp_path / "reg")])


def test_a_climbed_ladders_report_picks_among_four_rungs_and_its_title_names_them(tmp_path, monkeypatch):
    """convergence.py:part=climb's 1x-8x ladders: the report reads them like the protocol's, and its figure's
    title names the rungs drawn (it named the protocol's 1x-4x whatever it drew)."""
    report = load_module(os.path.join(os.path.dirname(__file__), "..", "..", "experiments", "convergence_report.py"))
    climbed = _ladders("vit_lighter", "vit", {550: {1: 70.0, 2: 71.0, 4: 72.0, 8: 72.3}}, seeds=(0,))
    titles = []
    monkeypatch.setattr(report.plt.Figure, "suptitle", lambda fig, text, **kw: titles.append(text))
    workdir = _write_table(tmp_path / "climb", climbed)
    assert report.main([workdir, "--out", str(tmp_path / "out")]) == 0
    point = json.loads((tmp_path / "out" / "convergence.json").read_text())["vit_lighter_n550"]
    assert (point["chosen"], point["capped"]) == (4, False) and list(point["rungs"]) == ["1", "2", "4", "8"]
    assert "1x, 2x, 4x, 8x of" in titles[0]


def test_every_arm_the_ladders_train_has_its_read_outs():
    assert set(readouts.BUDGET_ARMS) == set(readouts.ladder_sweep.ARMS)


def test_the_decision_figure_averages_paired_gaps_and_leaves_out_a_seed_split_over_hosts(tmp_path):
    """experiments/decision_figure.py: each family at the committed rung, mean and SE over seeds; G* per
    seed only where its two runs share a pair_key."""
    figure = load_module(os.path.join(os.path.dirname(__file__), "..", "..", "experiments", "decision_figure.py"))
    committed = tmp_path / "convergence.json"
    committed.write_text(json.dumps(readouts.convergence(_ladder_table())))  # ViT 55k at 4x, the rest at 1x
    rungs = {("vit", 550): 1, ("bit", 550): 1, ("vit", 55_000): 4, ("bit", 55_000): 1}
    tuned = [ladder_row(f, n, seed, m, 0, test, key=key) for (f, n), m in rungs.items()
             for seed, test, key in ((0, 70.0, "A"), (1, 72.0, "B"), (2, 74.0, "C"))]
    tuned = [{**r, "accuracy": r["accuracy"] + (0.05 if r["family"] == "bit" else 0)} for r in tuned]
    tuned[-1]["pair_key"] = "D"  # seed 2's 55k BiT on another host: its 55k gap is not paired
    workdir = _write_table(tmp_path / "tuned", tuned)
    plain = _write_table(tmp_path / "plain", tuned[:4])
    out = tmp_path / "decision"
    assert figure.main(["--tuned", workdir, "--plain", plain, "--chosen", str(committed), "--out", str(out)]) == 0
    found = json.loads((tmp_path / "decision.json").read_text())
    assert found["tuned"]["accuracy"]["vit"]["550"]["mean"] == pytest.approx(72.0)
    assert found["tuned"]["accuracy"]["vit"]["550"]["se"] == pytest.approx(2 / 3 ** 0.5, abs=1e-4)  # sd 2, n 3
    assert found["tuned"]["gap"]["550"]["seeds"] == [0, 1, 2] and found["tuned"]["gap"]["550"]["mean"] == \
        pytest.approx(5.0)
    assert found["tuned"]["gap"]["55000"]["seeds"] == [0, 1]
    assert found["plain"]["gap"]["550"]["se"] is None  # one seed: no error bar
    assert (tmp_path / "decision.png").stat().st_size > 0


def _new_seed(rows, seed, shift=0.0, key="host C"):
    """`rows`' seed-0 runs as seed `seed`'s, `shift` better (accuracy and probe), trained on host `key`:
    what experiments/decide_seeds.py adds."""
    added = []
    for r in (r for r in rows if r["seed"] == 0):
        config = {**r["config"], "seed": seed, "data": {**r["config"]["data"], "subset_seed": seed}}
        probe = {"transfer_10shot": r["transfer_10shot"] + shift} if "transfer_10shot" in r else {}
        added.append({**r, "name": r["name"].replace("_s0", f"_s{seed}"), "seed": seed, "pair_key": key,
                      "accuracy": r["accuracy"] + shift, "config": config, **probe})
    return added


def _probe_rows():
    """transfer.py's table: its own classes (another seed group than the plain arm's), seeds 0 and 1."""
    rows = []
    for seed in (0, 1):
        for size, vit, bit in ((550, 0.60, 0.70), (27_500, 0.70, 0.72)):
            for family, acc in (("vit", vit), ("bit", bit)):
                r = {**row(family, size, seed, 0.9), "transfer_10shot": acc + 0.001 * seed}
                r["config"]["data"]["classes"] = [0, 1, 2, 3, 4]
                rows.append(r)
    return rows


def _study():
    """The committed tables of every arm W1-S2 read, seeds 0 and 1."""
    points = ((55_000, 14, 0.85), (55_000, 7, 0.86), (55_000, 4, 0.89), (5_500, 4, 0.80), (5_500, 2, 0.79))
    patch = [r for seed in (0, 1) for size, patch, acc in points
             for r in _sized([row("vit", size, seed, acc + 0.001 * seed)], width=64, patch=patch)]
    return {"plain": _family_rows("vit", {550: 0.60, 1_700: 0.70, 5_500: 0.80, 55_000: 0.88})
            + _family_rows("bit", {550: 0.66, 1_700: 0.75, 5_500: 0.84, 55_000: 0.91}),
            "swin": _family_rows("swin", {550: 0.64, 1_700: 0.72, 55_000: 0.885}),
            "self_supervised": _fine_tuned("mae", {550: 0.70, 1_700: 0.77, 55_000: 0.89})
            + _fine_tuned("dino", {550: 0.64, 1_700: 0.72, 55_000: 0.875}),
            "deit": _family_rows("deit", {550: 0.62, 1_700: 0.71, 55_000: 0.882}),
            "deit_aug": _family_rows("deit", {550: 0.65, 1_700: 0.74, 55_000: 0.90}),
            "transfer": _probe_rows(), "patch_size": patch}


def _added(tables):
    """Seed 3 of each arm's runs (1 point better) and of the plain runs they pair with at 550, 1.7k and
    55k; seeds 2 and 3 of the transfer probe's; all on host C."""
    plain = [r for r in tables["plain"] if r["train_size"] != 5_500]
    patch = [r for r in tables["patch_size"] if r["train_size"] == 5_500]
    dino = readouts.pretrained_with(tables["self_supervised"], "dino")
    return (_new_seed(plain, 3) + _new_seed(tables["swin"], 3, 0.01) + _new_seed(dino, 3, 0.01)
            + _new_seed(tables["deit"], 3, 0.01) + _new_seed(patch, 3, 0.01)
            + [r for seed in (2, 3) for r in _new_seed(tables["transfer"], seed, 0.01)])


def test_added_seeds_join_the_seven_read_outs_that_more_seeds_would_decide_and_no_other():
    tables = _study()
    found = readouts.with_added_seeds(tables, _added(tables))
    assert set(found) == {"W1", "W2", "U2", "U3_dino", "T1", "D1", "S2"}
    for name in found:
        seeds = [0, 1, 2, 3] if name == "T1" else [0, 1, 3]
        assert found[name]["how"] == f"paired over seeds {seeds}", name
    # Seed 3's arm runs are 1 point better than seed 0's: W1 and U2 (the arm against a plain run at
    # <= 1.7k) move by 1 point on that seed; W2, U3, D1, S2 and T1 take differences in which it cancels.
    moved = {"W1": 1.0, "U2": 1.0, "W2": 0.0, "U3_dino": 0.0, "D1": 0.0, "S2": 0.0, "T1": 0.0}
    for name, by in moved.items():
        per_seed = found[name]["per_seed"]
        assert per_seed[-1] == pytest.approx(per_seed[0] + by, abs=1e-9), name
    before = {**readouts.swin_arm(tables["swin"], tables["plain"]), **readouts.transfer_arm(tables["transfer"])}
    assert before["W1"]["how"] == "paired over seeds [0, 1]" and before["T1"]["how"] == "paired over seeds [0, 1]"


def test_a_new_seeds_term_on_another_pair_key_leaves_the_read_outs_reading_it_not_pairable():
    tables = _study()
    added = _added(tables)
    next(r for r in added if r["name"] == "vit_n1700_s3")["pair_key"] = "host D"
    found = readouts.with_added_seeds(tables, added)
    for name in ("W1", "W2", "U3_dino", "D1"):  # each reads the plain ViT at 1.7k
        assert found[name]["verdict"] == found[name]["verdict_t"] == "not pairable", name
        assert "seed 3's runs to be paired differ" in found[name]["why"]
    assert {found[name]["how"] for name in ("U2", "T1", "S2")} == {"paired over seeds [0, 1, 3]",
                                                                  "paired over seeds [0, 1, 2, 3]"}
    # A seed the committed table already has a run of pairs it with the added ones: one host or none.
    tables["swin"] += [r for r in _new_seed(tables["swin"], 3) if r["train_size"] == 550]
    for r in tables["swin"]:
        r.pop("pair_key", None)  # committed before pair keys were recorded
    added = [r for r in _added(tables) if r["name"] != "swin_n550_s3"]
    assert readouts.with_added_seeds(tables, added)["W1"]["verdict"] == "not pairable"


def test_the_command_line_adds_seeds_to_the_arms_but_not_to_the_plain_arms_read_outs(tmp_path, capsys):
    tables = _study()
    added = _new_seed([r for r in tables["plain"] if r["train_size"] != 5_500], 3) + _new_seed(tables["swin"], 3, 0.01)
    stray = _new_seed(tables["transfer"], 3)[0]
    plain, swin = _write_table(tmp_path / "plain", tables["plain"]), _write_table(tmp_path / "swin", tables["swin"])
    new = _write_table(tmp_path / "decide_seeds", added + [{**stray, "name": "transfer_vit_n550_s3"}])
    common = ["--data_scaling", plain, "--swin", swin, "--out"]
    readouts.main(common + [str(tmp_path / "before.json")])
    readouts.main(common + [str(tmp_path / "after.json"), "--added_seeds", new])
    before, after = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("before", "after"))
    assert {r["name"] for r in added} >= {"bit_n550_s3", "vit_n55000_s3"}  # P1's terms, had they joined it
    assert after["P1"] == before["P1"] and after["P1"]["how"] == "paired over seeds [0, 1]"
    assert after["W1"]["how"] == "paired over seeds [0, 1, 3]" and after["W2"]["how"] == "paired over seeds [0, 1, 3]"
    assert "left out: transfer_vit_n550_s3" in capsys.readouterr().err  # no --transfer: its run joins nothing
    with pytest.raises(SystemExit):
        readouts.main(["--data_scaling", plain, "--added_seeds", new])
    assert "--added_seeds joins the tables of --swin" in capsys.readouterr().err
