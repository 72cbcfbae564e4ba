r"""Decides the study's pre-registered read-outs (experiments/README.md) from the sweeps' tables.

    python experiments/readouts.py --data_scaling experiments/results/data_scaling \
        [--regularisation experiments/results/regularisation] [--model_size experiments/results/model_size] \
        [--patch_size experiments/results/patch_size] \
        [--transfer experiments/results/transfer] \
        [--swin experiments/results/swin] [--deit experiments/results/deit] [--deit_aug experiments/results/deit_aug] \
        [--self_supervised experiments/results/self_supervised] \
        [--knn_dino DINO_RUN --knn_vit VIT_RUN ...] [--segmentation DINO_ANALYSIS/cls_segmentation.json] \
        [--sam_init runs/sam_init ...] [--added_seeds runs/decide_seeds ...] \
        --out experiments/results/readouts.json
    python experiments/readouts.py --convergence DIR... --chosen experiments/results/convergence/convergence.json \
        [--primed DIR...] [--arms reg=DIR+DIR size=DIR deit=DIR]
    python experiments/readouts.py --tuned_ladders runs/tuned_ladders   # C2t, C4t
    python experiments/readouts.py --chosen experiments/results/convergence/convergence.json --arms reg=DIR

Each read-out is a quantity Q in accuracy points, predicted Q > 0, with threshold
tau = max(2 SE, 0.5 points): **holds** when Q > tau, **fails** when Q < -tau, else **inconclusive**.
Beside that registered rule, the t-based one (added 2026-12-03; 2 SE is a ~70-82% interval at 2-3
seeds): tau_t = max(t(0.975, df) SE, 0.5), df = n - 1 for n paired seeds, Welch-Satterthwaite for
terms combined in quadrature; every verdict is given under both (`verdict`, `verdict_t`).
Q is a sum of terms coef * acc(family, n). When every term has the same >= 2 seeds, Q is computed seed
by seed and SE = std / sqrt(n) over those seeds (paired: the families share each seed's subset, and the
subsets are nested across sizes); otherwise each term's mean and SE are combined in quadrature. Read-outs
whose sweep is missing from the command line, or whose sizes it does not have yet, are listed as not
run. U4 pairs k-NN accuracies by the memory bank's subset seed; U5 is in Jaccard units, paired by test
image, with a floor of 0.02. I1-I6 (experiments/sam_init.py) are in mIoU points (100 x mIoU), paired
by seed, with a floor of SAM_FLOOR (1 point). C1-C4 (and the tuned C1'-C4') read the budget ladders of
experiments/convergence.py at each family's converged multiple; R1c-R3c, M1c, M3c and D4c the same
formulas as R1-R3, M1, M3 and D4 on the budget-dependent arms' ladders at theirs (`--arms`). C2t and
C4t are C2's and C4's formulas at 55k on the tuned optimisers' own ladders (experiments/tuning.py:
part=ladders and ladder_seeds), each family at the multiple its seed-0 tuned ladder chose.

`--added_seeds DIR...` (experiments/decide_seeds.py's runs: seeds added where they would likely decide a
read-out) re-decides W1, W2, U2, U3 (DINO), T1, D1 and S2 only (DECIDED_BY_SEEDS): each added run joins
every table on the command line holding its seed group (the same config, another seed), the arm's own
and the plain arm's it pairs with, and the read-out pairs over the seeds all its terms have. Every other
read-out stays on the committed tables alone: P1-P5 read --data_scaling's table and nothing else, so
the plain arm's registered read-outs do not move with seeds added for another arm. Pairs within a host:
each added seed must have all the runs a read-out reads of it on one pair_key (check_pairable), else
the read-out is 'not pairable'. The committed seeds 0-2 are not checked: their runs predate pair keys
and were paired across hosts when these read-outs were registered and marked; checking them would
refuse every committed mark, and leaving them out would change what was registered.
"""
import argparse
import glob
import json
import math
import os
import statistics
import sys

from scipy import stats

from vitjax.analysis.control import INIT, TRAINED
from vitjax.config import load_module
from vitjax.analysis.run import BESIDE
from vitjax import rundir
from vitjax.sweep import aggregate, table

FLOOR = 0.5  # points: above the test set's own sampling error (0.3 at 90%) and the old run-to-run spread
protocol = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "protocol.py"))
ladder_sweep = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "convergence.py"))


def values(rows, family, size, metric="accuracy") -> dict:
    """{seed: metric in points} of one family's runs at `size`."""
    return {s: 100 * v for s, v in aggregate.by_seed(aggregate.members(rows, family, size), metric).items()}


def finished_any(rows, **fields) -> bool:
    """Whether a finished run has these field values (a read-out waits for its runs until then)."""
    return any(r.get("status") == "finished" and all(r.get(k) == v for k, v in fields.items()) for r in rows)


def combine(terms) -> dict:
    """Q, SE, its degrees of freedom (None where no term has a spread) and how they were computed, from
    [(coef, {seed: points}), ...]."""
    common = set.intersection(*(set(v) for _, v in terms))
    if len(common) >= 2 and all(set(v) == common for _, v in terms):
        per_seed = [sum(c * v[s] for c, v in terms) for s in sorted(common)]
        return {"q": statistics.fmean(per_seed), "se": statistics.stdev(per_seed) / math.sqrt(len(per_seed)),
                "df": len(per_seed) - 1, "how": f"paired over seeds {sorted(common)}", "per_seed": per_seed}
    if len(common) >= 2:  # pair over the seeds every term has; the others' extra seeds are left out
        return combine([(c, {s: v[s] for s in common}) for c, v in terms])
    q = sum(c * statistics.fmean(v.values()) for c, v in terms)
    parts = [((c * statistics.stdev(v.values())) ** 2 / len(v), len(v) - 1) for c, v in terms if len(v) > 1]
    variance = sum(var for var, _ in parts)
    # Welch-Satterthwaite: the effective degrees of freedom of a sum of independent variance estimates.
    df = variance ** 2 / sum(var ** 2 / dof for var, dof in parts) if variance > 0 else None
    if len(parts) < len(terms):  # a single-seed term's spread is unknown, not zero: no t-based threshold
        return {"q": q, "se": math.sqrt(variance), "df": None,
                "how": "means, SEs in quadrature; a term has one seed (its spread unknown)"}
    return {"q": q, "se": math.sqrt(variance), "df": df, "how": "means, SEs in quadrature"}


def t_threshold(se: float, df, floor: float = FLOOR) -> float | None:
    """tau_t = max(t(0.975, df) x SE, floor); None without degrees of freedom (a single seed)."""
    return None if df is None else max(float(stats.t.ppf(0.975, df)) * se, floor)


def verdict_of(q: float, tau, *, at_least: bool = False) -> str:
    """holds / fails / inconclusive for Q against tau; `at_least`: Q > -tau holds ("as good within noise")."""
    if tau is None:
        return "provisional (n = 1)"
    if at_least:
        return "holds" if q > -tau else "fails"
    return "holds" if q > tau else "fails" if q < -tau else "inconclusive"


def seeds_to_decide(result: dict, max_seeds: int = 20, floor: float = FLOOR) -> int | None:
    """The fewest paired seeds at which the observed mean Q would clear the t-based threshold, were the
    per-seed spread to stay as observed: min n with |Q| > max(t(0.975, n-1) sd / sqrt(n), floor).
    None when no n up to `max_seeds` would (|Q| at or below the floor, or too noisy); only for paired Q."""
    if len(result.get("per_seed", ())) < 2:
        return None
    sd = statistics.stdev(result["per_seed"])
    for n in range(2, max_seeds + 1):
        if abs(result["q"]) > t_threshold(sd / math.sqrt(n), n - 1, floor):
            return n
    return None


def decide(result: dict, *, at_least: bool = False, floor: float = FLOOR) -> dict:
    """Adds tau and the verdict under the registered rule, tau_t and verdict_t under the t-based one."""
    tau = max(2 * result["se"], floor)
    tau_t = t_threshold(result["se"], result.get("df"), floor)
    return {**result, "tau": tau, "verdict": verdict_of(result["q"], tau, at_least=at_least),
            "tau_t": tau_t, "verdict_t": verdict_of(result["q"], tau_t, at_least=at_least),
            "seeds_to_decide_t": seeds_to_decide(result, floor=floor)}


def gap(rows, size) -> dict:
    """Per seed: BiT minus ViT at `size` (points)."""
    bit, vit = values(rows, "bit", size), values(rows, "vit", size)
    return {s: bit[s] - vit[s] for s in set(bit) & set(vit)}


def plain_arm(rows) -> dict:
    """P1-P5 from experiments/data_scaling.py's table."""
    out = {
        "P1": decide(combine([(0.5, gap(rows, 550)), (0.5, gap(rows, 1_700)), (-1, gap(rows, 55_000))])),
        "P2": decide(combine([(1, values(rows, "vit", 55_000)), (-1, values(rows, "vit", 5_500)),
                              (-1, values(rows, "bit", 55_000)), (1, values(rows, "bit", 5_500))])),
        "P3": decide(combine([(1, gap(rows, 55_000))])),
    }
    out["P4"] = _early_stopping_check(rows)
    out["P5"] = _late_best_check(rows)
    return out


def _runs_at(rows, size):
    return [r for f in ("vit", "bit") for r in aggregate.members(rows, f, size)]


def _early_stopping_check(rows) -> dict:
    """P4: at 550 every best step is before the last, and early stopping gains > tau over the final step."""
    runs = _runs_at(rows, 550)
    per_seed = {}
    for r in runs:
        per_seed.setdefault(r["seed"], []).append(100 * (r["accuracy"] - r["test_accuracy"]))
    result = decide(combine([(1, {s: statistics.fmean(v) for s, v in per_seed.items()})]))
    early = all(r["best_step"] < r["steps"] for r in runs)
    result["best_steps"] = {r["name"]: [r["best_step"], r["steps"]] for r in runs}
    for key in ("verdict", "verdict_t"):
        if not early and result[key] == "holds":
            result[key] = "fails"
    return result


def _late_best_check(rows) -> dict:
    """P5: at 55k every run's best step is in the last quarter of its steps."""
    runs = _runs_at(rows, 55_000)
    late = all(r["best_step"] >= 0.75 * r["steps"] for r in runs)
    verdict = "holds" if late else "fails"  # no statistic: the same under both rules
    return {"verdict": verdict, "verdict_t": verdict,
            "best_steps": {r["name"]: [r["best_step"], r["steps"]] for r in runs}}


def markdown_table(rows) -> str:
    """The plain arm's table: per family and size, acc and final-step test accuracy (mean ± std over n
    seeds, %), the best step, and BiT minus ViT paired by seed."""
    lines = ["| images | ViT acc | BiT acc | BiT - ViT (paired) | ViT final step | BiT final step | "
             "best step ViT / BiT (of steps) |", "|---|---|---|---|---|---|---|"]
    for size in sorted({r["train_size"] for r in rows if r.get("status") == "finished"}):
        cells, steps = [], []
        runs = {f: aggregate.members(rows, f, size) for f in ("vit", "bit")}
        for metric in ("accuracy", "test_accuracy"):
            for family in ("vit", "bit"):
                cells.append(_mean_std([100 * r[metric] for r in runs[family]]))
            if metric == "accuracy":
                cells.append(_mean_std(list(gap(rows, size).values())))
        for family in ("vit", "bit"):
            steps.append(f"{statistics.fmean(r['best_step'] for r in runs[family]):,.0f}")
        lines.append(f"| {size:,} | " + " | ".join(cells) + f" | {' / '.join(steps)} ({runs['vit'][0]['steps']:,}) |")
    return "\n".join(lines)


def _mean_std(values) -> str:
    if len(values) < 2:
        return f"{values[0]:.2f} (n=1)"
    return f"{statistics.fmean(values):.2f} ± {statistics.stdev(values):.2f} (n={len(values)})"


def difference(rows, family, other_rows, other_family, size) -> dict:
    """Per seed: one family's accuracy minus another's (each from its sweep's rows) at `size` (points)."""
    a, b = values(rows, family, size), values(other_rows, other_family, size)
    return {s: a[s] - b[s] for s in set(a) & set(b)}


def lift(treated, control, family, size) -> dict:
    """Per seed: `treated` minus `control` (two sweeps' rows) for one family at one size (points)."""
    return difference(treated, family, control, family, size)


SMALL = (550, 1_700, 5_500)


def regularisation_arm(reg, plain) -> dict:
    """R1-R3 from experiments/regularisation.py's table (`reg`) against the plain arm's (`plain`)."""
    small = len(SMALL)
    return {
        "R1": decide(combine([(1 / small, lift(reg, plain, "vit", n)) for n in SMALL]
                             + [(-1 / small, lift(reg, plain, "bit", n)) for n in SMALL])),
        "R2": decide(combine([(1 / small, lift(reg, plain, "vit", n)) for n in SMALL]
                             + [(-1, lift(reg, plain, "vit", 55_000))])),
        "R3": decide(combine([(1, values(reg, "vit", 5_500)), (-1, values(plain, "vit", 55_000))]), at_least=True),
    }


def of_width(rows, width) -> list:
    """The rows whose model has this width (ViT `width`, BiT root `width`)."""
    return [r for r in rows if r.get("config", {}).get("model", {}).get("width") == width]


def model_size_arm(rows) -> dict:
    """M1-M3 from experiments/model_size.py's table: the widest and narrowest width of each family."""
    widths = {f: sorted({r["config"]["model"]["width"] for r in rows if r.get("family") == f
                         and r.get("status") == "finished"}) for f in ("vit", "bit")}
    small, large = of_width(rows, widths["vit"][0]), of_width(rows, widths["vit"][-1])
    d_small, d_large = lift(large, small, "vit", 550), lift(large, small, "vit", 55_000)
    m2 = {"small": decide(combine([(-1, d_small)])), "large": decide(combine([(1, d_large)]))}
    return {"M1": {**decide(combine([(1, d_large), (-1, d_small)])), "widths": widths},
            "M2": {"verdict": _both_hold(m2, "verdict"), "verdict_t": _both_hold(m2, "verdict_t"),
                   "q_550": -m2["small"]["q"], "tau_550": m2["small"]["tau"], "tau_t_550": m2["small"]["tau_t"],
                   "q_55000": m2["large"]["q"], "tau_55000": m2["large"]["tau"],
                   "tau_t_55000": m2["large"]["tau_t"]},
            "M3": compute_readout(rows, widths)}


def _both_hold(parts: dict, key: str) -> str:
    """M2's verdict under one rule: holds when both parts hold, fails when either fails."""
    verdicts = [part[key] for part in parts.values()]
    return "holds" if all(v == "holds" for v in verdicts) else "fails" if "fails" in verdicts else "inconclusive"


def compute_readout(rows, widths, size=55_000) -> dict:
    """M3: at `size`, A* = the lower of the two families' best mean accuracies; each family's F = the least
    training FLOPs among its widths whose mean accuracy comes within tau = max(2 SE, 0.5) of A*;
    Q = log2(F_BiT / F_ViT) - 1 (> 0: the ViT needs at least 2x less). Holds when Q > 0; fails when the
    ViT needs more FLOPs than the BiT (Q < -1); else inconclusive."""
    points = {}
    for family in ("vit", "bit"):
        for width in widths[family]:
            runs = aggregate.members(of_width(rows, width), family, size)
            accs = [100 * r["accuracy"] for r in runs]
            se = statistics.stdev(accs) / math.sqrt(len(accs)) if len(accs) > 1 else 0.0
            points.setdefault(family, []).append(
                {"width": width, "acc": statistics.fmean(accs), "tau": max(2 * se, FLOOR),
                 "tau_t": t_threshold(se, len(accs) - 1) if len(accs) > 1 else FLOOR,
                 "train_flops": statistics.fmean(r["train_flops"] for r in runs)})
    target = min(max(p["acc"] for p in points[f]) for f in points)
    found = {"target_acc": target, "points": points,
             "how": "log2 of the FLOPs ratio minus 1 (units: doublings beyond 2x)"}
    for rule, suffix in (("tau", ""), ("tau_t", "_t")):
        least = {f: min(p["train_flops"] for p in points[f] if p["acc"] + p[rule] >= target) for f in points}
        q = math.log2(least["bit"] / least["vit"]) - 1
        found.update({f"q{suffix}": q, f"least_flops{suffix}": least,
                      f"verdict{suffix}": "holds" if q > 0 else "fails" if q < -1 else "inconclusive"})
    return found


def patch_size_arm(rows, size=55_000, small=5_500) -> dict:
    """S1 (at `size`) and S2 (patch 2 against 4 at `small`, once the table has patch-2 runs) from
    experiments/patch_size.py's table: ViTs differing in patch size, paired by seed. Rows of other sweeps
    may join (model_size.py's, whose width-64 ViTs are the patch-4 runs' configuration): only ViTs of the
    patch-7 runs' width count."""
    widths = {r["config"]["model"].get("width") for r in rows if r.get("patch_size") == 7 and r.get("family") == "vit"}
    rows = [r for r in rows if r.get("config", {}).get("model", {}).get("width") in widths]

    def at(patch, n=size):
        return values([r for r in rows if r.get("patch_size") == patch], "vit", n)
    found = {"S1": decide(combine([(1, at(4)), (-1, at(7))])), "S1'": decide(combine([(1, at(7)), (-1, at(14))]))}
    if finished_any(rows, patch_size=2, train_size=small):
        found["S2"] = decide(combine([(1, at(2, small)), (-1, at(4, small))]))
    return found


def transfer_arm(rows, metric="transfer_10shot") -> dict:
    """T1 from experiments/transfer.py's table: the 10-shot transfer probe's gain from the smallest to the
    largest pre-training set, ViT minus BiT, paired by seed."""
    sizes = sorted({r["train_size"] for r in rows if r.get("status") == "finished"})
    terms = [(sign * coef, values(rows, family, size, metric)) for family, sign in (("vit", 1), ("bit", -1))
             for size, coef in ((sizes[-1], 1), (sizes[0], -1))]
    return {"T1": {**decide(combine(terms)), "sizes": [sizes[0], sizes[-1]]}}


SMALLEST = (550, 1_700)


def swin_arm(swin, plain) -> dict:
    """W1, and W2 once the table has Swin runs at 55k, from experiments/swin_deit.py:part=swin's table
    against the plain arm's ViT."""
    small = [(1 / len(SMALLEST), difference(swin, "swin", plain, "vit", n)) for n in SMALLEST]
    found = {"W1": decide(combine(small))}
    if finished_any(swin, family="swin", train_size=55_000):
        found["W2"] = decide(combine(small + [(-1, difference(swin, "swin", plain, "vit", 55_000))]))
    return found


def deit_arm(deit, deit_aug, plain) -> dict:
    """D1-D4 from experiments/swin_deit.py's parts deit and deit_aug (either table may be empty) against
    the plain arm; each read-out once the runs it needs are in."""
    def has(rows, *sizes):
        return all(finished_any(rows, family="deit", train_size=n) for n in sizes)

    found = {}
    if has(deit, *SMALLEST):
        small = [(1 / len(SMALLEST), difference(deit, "deit", plain, "vit", n)) for n in SMALLEST]
        found["D2"] = decide(combine(small))
        if has(deit, 55_000):
            found["D1"] = decide(combine(small + [(-1, difference(deit, "deit", plain, "vit", 55_000))]))
    if has(deit, *SMALLEST) and has(deit_aug, *SMALLEST):
        found["D3"] = decide(combine([(1 / len(SMALLEST), difference(deit_aug, "deit", deit, "deit", n))
                                      for n in SMALLEST]))
    if has(deit_aug, 55_000):
        found["D4"] = decide(combine([(1, difference(deit_aug, "deit", plain, "bit", 55_000))]))
    return dict(sorted(found.items()))


def pretrained_with(rows, method) -> list:
    """The fine-tuning rows that started from `method`'s pre-training: init_from names its run directory
    (.../<method>_pretrain) or its export (.../<method>_pretrain.npz)."""
    def source(row):
        path = os.path.basename(os.path.normpath(str(row.get("config", {}).get("init_from") or "")))
        return path.removesuffix(".npz")

    return [r for r in rows if source(r) == f"{method}_pretrain"]


def self_supervised_arm(finetune, plain) -> dict:
    """U1-U3 from experiments/self_supervised.py:part=finetune's table against the plain arm; each
    method's read-outs once its runs at the sizes they need are in."""
    found = {}
    for u, method in (("U1", "mae"), ("U2", "dino")):
        tuned = pretrained_with(finetune, method)
        if not all(finished_any(tuned, train_size=n) for n in SMALLEST):
            continue
        small = [(1 / len(SMALLEST), difference(tuned, "vit", plain, "vit", n)) for n in SMALLEST]
        found[u] = {**decide(combine([(1 / len(SMALLEST), difference(tuned, "vit", plain, "bit", n))
                                      for n in SMALLEST])), "method": method}
        if finished_any(tuned, train_size=55_000):
            found[f"U3_{method}"] = decide(combine(
                small + [(-1, difference(tuned, "vit", plain, "vit", 55_000))]))
    return found


KNN_METRIC = "knn_20_top1"  # the DINO paper's k = 20 at T = 0.07


def knn_values(run_dirs, size, metric=KNN_METRIC) -> dict:
    """{subset seed: k-NN accuracy in points} from the knn_n<size>_s<seed>.json files in `run_dirs`
    (`vitjax eval --knn_only --knn_train_size size --knn_subset_seed seed`); a seed twice is an error."""
    found = {}
    for run_dir in run_dirs:
        for path in glob.glob(os.path.join(run_dir, f"knn_n{size}_s*.json")):
            with open(path) as f:
                result = json.load(f)
            seed = result["subset_seed"]
            if seed in found:
                raise ValueError(f"two k-NN results for {size} images, subset seed {seed} (one is {path})")
            found[seed] = 100 * result[metric]
    return found


def knn_arm(dino_dirs, vit_dirs) -> dict:
    """U4: the frozen DINO teacher's k-NN accuracy minus the supervised ViT's, with the same n labelled
    images as the memory bank, paired by subset seed, mean over n in SMALLEST."""
    terms = []
    for n in SMALLEST:
        dino, vit = knn_values(dino_dirs, n), knn_values(vit_dirs, n)
        terms.append((1 / len(SMALLEST), {s: dino[s] - vit[s] for s in set(dino) & set(vit)}))
    return {"U4": decide(combine(terms))}


JACCARD_FLOOR = 0.02  # Jaccard units: U5's least meaningful difference


def segmentation_arm(path) -> dict:
    """U5 from `vitjax analyze --beside`'s cls_segmentation.json of the DINO run: the DINO network's
    per-image mean Jaccard minus each reference's (the same masks placed at random, the network at
    initialisation, the supervised ViT beside it), paired by image, tau = max(2 SE, JACCARD_FLOOR)."""
    with open(path) as f:
        scores = json.load(f)
    dino = scores[TRAINED]["per_image"]
    references = {"random placement": scores[TRAINED]["per_image_permuted"],
                  "initialisation": scores[INIT]["per_image"], "supervised ViT": scores[BESIDE]["per_image"]}
    against = {}
    for name, other in references.items():
        differences = [a - b for a, b in zip(dino, other, strict=True)]
        se = statistics.stdev(differences) / math.sqrt(len(differences))
        against[name] = {"q": statistics.fmean(differences), "se": se, "tau": max(2 * se, JACCARD_FLOOR),
                         "tau_t": t_threshold(se, len(differences) - 1, JACCARD_FLOOR)}
    verdicts = {}
    for rule, key in (("tau", "verdict"), ("tau_t", "verdict_t")):
        if all(r["q"] > r[rule] for r in against.values()):
            verdicts[key] = "holds"
        elif against["supervised ViT"]["q"] < -against["supervised ViT"][rule]:
            verdicts[key] = "fails"
        else:
            verdicts[key] = "inconclusive"
    return {"U5": {**verdicts, "j_dino": statistics.fmean(dino), "against": against,
                   "how": f"per-image paired differences over {len(dino)} images (Jaccard units)"}}


# mIoU points: a group's test mIoU averages 1,500 items (500 canvases of 3), whose IoUs (0-1) spread by ~0.3,
# so its own sampling error is ~0.8 points; paired arms share the items and differ by less.
SAM_FLOOR = 1.0
sam_sweep = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sam_init.py"))


def sam_values(sweep_dirs, max_seed: int = 100) -> dict:
    """{(arm, seed): {'<group>_<prompt>': test mIoU at best validation in points, 'pair_key': ...}} of the
    finished SAM runs of experiments/sam_init.py in `sweep_dirs` (directories holding its run directories);
    one name finished in two of them is an error (which counts would be a choice made after the results)."""
    found, where = {}, {}
    for sweep_dir in sweep_dirs:
        for arm in sam_sweep.ARMS:
            for seed in range(max_seed):
                name = sam_sweep.sam_name(arm, seed)
                results = rundir.read_results(os.path.join(sweep_dir, name))
                if results is None:
                    continue
                if (arm, seed) in found:
                    raise ValueError(f"{name} finished in {where[arm, seed]} and {sweep_dir}: keep one of them")
                where[arm, seed] = sweep_dir
                found[arm, seed] = {"pair_key": table.pair_key(results), **{
                    key.removeprefix("test_miou_").removesuffix("_at_best"): 100 * value
                    for key, value in results.items() if key.startswith("test_miou_") and key.endswith("_at_best")}}
    return found


def sam_init_arm(sweep_dirs) -> dict:
    """I1-I6 from experiments/sam_init.py's SAM runs, paired by seed (each seed's arms on one pair_key),
    tau = max(2 SE, SAM_FLOOR) in mIoU points; a read-out once each of its terms has >= 2 seeds."""
    runs = sam_values(sweep_dirs)
    check_pairable([{"seed": seed, "pair_key": r["pair_key"]} for (_, seed), r in runs.items()])

    def m(arm, metric) -> dict:
        return {seed: r[metric] for (a, seed), r in runs.items() if a == arm}

    def lift(arm, metric, base="random") -> dict:
        ours, theirs = m(arm, metric), m(base, metric)
        return {seed: ours[seed] - theirs[seed] for seed in set(ours) & set(theirs)}

    def clicks_gain(arm) -> dict:
        three, one = m(arm, "unseen_3click"), m(arm, "unseen_1click")
        return {seed: three[seed] - one[seed] for seed in three}

    terms = {
        "I1": [(1, lift("mae", "unseen_1click"))],
        "I2": [(1, lift("mae", "unseen_box"))],
        "I3": [(1, lift("vit", "unseen_1click"))],
        "I4": [(1, lift("mae", "unseen_1click", base="vit"))],
        "I5": [(1, lift("mae", "unseen_1click")), (-1, lift("mae", "seen_1click"))],
        "I6": [(1 / len(sam_sweep.ARMS), clicks_gain(arm)) for arm in sam_sweep.ARMS],
    }
    return {name: decide(combine(parts), at_least=name == "I5", floor=SAM_FLOOR)
            for name, parts in terms.items() if min(len(values) for _, values in parts) >= 2}


def _of(families, *sizes, patches=None):
    """Which rows of a table a read-out reads: these families at these sizes (and patch sizes)."""
    return lambda r: r.get("family") in families and r.get("train_size") in sizes and \
        (patches is None or r.get("patch_size") in patches)


# Issue 36 item 4: the read-outs more paired seeds would likely decide (experiments/decide_seeds.py trains
# them), each with the rows of each table it reads ('dino': the self-supervised table's DINO fine-tunes).
DECIDED_BY_SEEDS = {
    "W1": {"swin": _of(("swin",), *SMALLEST), "plain": _of(("vit",), *SMALLEST)},
    "W2": {"swin": _of(("swin",), *SMALLEST, 55_000), "plain": _of(("vit",), *SMALLEST, 55_000)},
    "U2": {"dino": _of(("vit",), *SMALLEST), "plain": _of(("bit",), *SMALLEST)},
    "U3_dino": {"dino": _of(("vit",), *SMALLEST, 55_000), "plain": _of(("vit",), *SMALLEST, 55_000)},
    "T1": {"transfer": _of(("vit", "bit"), 550, 27_500)},  # transfer.py's smallest and largest sizes
    "D1": {"deit": _of(("deit",), *SMALLEST, 55_000), "plain": _of(("vit",), *SMALLEST, 55_000)},
    "S2": {"patch_size": _of(("vit",), 5_500, patches=(2, 4))},
}


def in_groups_of(committed, added) -> list[dict]:
    """The finished rows of `added` that belong to one of `committed`'s seed groups: the same config but
    for the seed (aggregate.group_key), i.e. the run that table registers, trained for another seed."""
    groups = {aggregate.group_key(r.get("config")) for r in committed if r.get("status") == "finished"}
    return [r for r in added if r.get("status") == "finished" and aggregate.group_key(r.get("config")) in groups]


def with_added_seeds(tables: dict, added) -> dict:
    """DECIDED_BY_SEEDS' read-outs with `added` (--added_seeds' rows) joined to each of `tables` ({'plain',
    'swin', 'self_supervised', 'deit', 'deit_aug', 'transfer', 'patch_size': rows}, those given) whose seed
    groups they belong to. Every other read-out, the plain arm's P1-P5 among them, is left to the
    committed tables alone. A read-out whose runs of an added seed do not share one pair_key, the runs of
    that seed it reads from the committed tables included, is 'not pairable'; the committed seeds are
    paired as they were registered (across hosts, before pair keys were recorded), so they are not checked."""
    joined = {name: rows + in_groups_of(rows, added) for name, rows in tables.items()}
    found = {}
    if "plain" in joined and "swin" in joined:
        found.update(swin_arm(joined["swin"], joined["plain"]))
    if "plain" in joined and "self_supervised" in joined:
        found.update(self_supervised_arm(joined["self_supervised"], joined["plain"]))
    if "plain" in joined and "deit" in joined:
        found.update(deit_arm(joined["deit"], tables.get("deit_aug", []), joined["plain"]))
    if "transfer" in joined:
        found.update(transfer_arm(joined["transfer"]))
    if "patch_size" in joined:
        found.update(patch_size_arm(joined["patch_size"]))
    joined["dino"] = pretrained_with(joined.get("self_supervised", []), "dino")
    return {name: _pairable_or_not(found[name], DECIDED_BY_SEEDS[name], joined, added)
            for name in DECIDED_BY_SEEDS if name in found}


def _pairable_or_not(result: dict, reads: dict, joined: dict, added) -> dict:
    """`result`, or 'not pairable' where a seed of `added` pairs runs of two pair keys."""
    used = [r for table_name, read in reads.items() for r in joined.get(table_name, [])
            if r.get("status") == "finished" and read(r)]
    added_ids = {id(r) for r in added}  # by identity: an added row may share a committed row's name
    seeds = {r["seed"] for r in used if id(r) in added_ids}
    try:
        check_pairable([r for r in used if r["seed"] in seeds])
    except ValueError as error:
        return {"verdict": "not pairable", "verdict_t": "not pairable", "why": str(error)}
    return result


def merged_rows(sweep_dirs) -> list[dict]:
    """The rows of several sweep (or results) directories that hold parts of one study, one per run name:
    a finished run wins over the same name pending in another directory; two finished runs of one name
    are an error (which one counts would be a choice made after the results exist)."""
    by_name = {}
    for sweep_dir in sweep_dirs:
        for row in table.read(sweep_dir):
            kept = by_name.get(row["name"])
            if kept is None or kept.get("status") != "finished":
                by_name[row["name"]] = row
            elif row.get("status") == "finished":
                raise ValueError(f"{row['name']} finished in two of {list(sweep_dirs)}: keep one of them")
    return list(by_name.values())


def ladder_of(name: str) -> str | None:
    """The ladder a rung's run name belongs to ('vit' of 'vit_n550_s0_x2', 'vit_w32' of an arm's
    'vit_w32_n550_s0_x1'; experiments/convergence.py's rung_name), or None for a name of no rung."""
    head, _, rung = name.rpartition("_x")
    ladder, _, size_seed = head.rpartition("_n")
    size, _, seed = size_seed.partition("_s")
    return ladder if ladder and rung.isdigit() and size.isdigit() and seed.isdigit() else None


def ladders(rows) -> dict:
    """{(ladder, size): {seed: {multiple: row}}} of a budget ladder's finished runs (experiments/convergence.py),
    a run's multiple being its steps over the protocol's budget at its size; the plain arm's ladders are
    its families, 'vit' and 'bit'."""
    found = {}
    for r in rows:
        ladder = ladder_of(r.get("name", ""))
        if r.get("status") == "finished" and ladder:
            multiple = r["steps"] / protocol.BUDGET.steps(r["train_size"])
            found.setdefault((ladder, r["train_size"]), {}).setdefault(r["seed"], {})[round(multiple)] = r
    return found


def convergence(rows, seed: int = 0) -> dict:
    """Per '<ladder>_n<size>': each rung's epochs, best validation and test-at-best accuracy (points) of
    seed `seed`, and the converged multiple (protocol.converged_rung: chosen on validation only).
    'family' is the ladder's name (the plain arm's family); 'model_family' the family its runs record.
    Only a seed with every rung of the ladder counts: a seed's converged run with the 1x beside it (an
    arm's controls, a part at the converged budgets) or a ladder still training is no ladder. A ladder is
    the protocol's (1x-4x) or the climb's (1x-8x, convergence.py:part=climb)."""
    found = {}
    for (ladder, size), by_seed in sorted(ladders(rows).items()):
        rungs = by_seed.get(seed, {})
        if tuple(sorted(rungs)) not in (ladder_sweep.LADDER.multiples, ladder_sweep.CLIMB.multiples):
            continue
        validation = {m: 100 * r["best_val_accuracy"] for m, r in rungs.items()}
        chosen, capped = protocol.converged_rung(validation)
        found[f"{ladder}_n{size}"] = {
            "family": ladder, "model_family": next(iter(rungs.values()))["family"], "size": size,
            "chosen": chosen, "capped": capped,
            "rungs": {m: {"steps": r["steps"], "epochs": r["steps"] * protocol.BUDGET.batch_size / size,
                          "val": validation[m], "test_at_best": 100 * r["accuracy"], "best_step": r["best_step"],
                          "wall_seconds": r["wall_seconds"]} for m, r in sorted(rungs.items())}}
    return found


def check_pairable(rows) -> None:
    """Raises ValueError when the runs a read-out pairs within one seed ran on different hosts, device
    splits or code. Seeds are independent draws, so two seeds may come from two hosts."""
    keys = {}
    for r in rows:  # a run recorded before pair keys existed has none: it pairs with nothing that has one
        keys.setdefault(r["seed"], set()).add(r.get("pair_key"))
    for seed, found in sorted(keys.items()):
        if len(found) > 1:
            raise ValueError(f"seed {seed}'s runs to be paired differ in host, devices or code "
                             f"({sorted(found, key=str)}): pair only runs of one pair_key (vitjax/sweep/table.py)")


def converged_arm(rows, chosen_ladders: dict | None = None) -> dict:
    """C1-C4 (experiments/README.md): each family at its converged multiple, every seed that has it.
    The multiples come from `chosen_ladders` (convergence()'s output, e.g. the committed
    convergence.json) when given, else from the seed-0 ladders among `rows`."""
    ladders_found = convergence(rows) if chosen_ladders is None else chosen_ladders
    chosen = {(c["family"], c["size"]): c["chosen"] for c in ladders_found.values()}
    runs = ladders(rows)

    def acc(family, size, multiple=None) -> dict:
        m = chosen[(family, size)] if multiple is None else multiple
        return {s: 100 * by_m[m]["accuracy"] for s, by_m in runs[(family, size)].items() if m in by_m}

    def g(size):
        bit, vit = acc("bit", size), acc("vit", size)
        return {s: bit[s] - vit[s] for s in set(bit) & set(vit)}

    have = {size for family, size in chosen if (("vit" if family == "bit" else "bit"), size) in chosen}
    readouts = {  # name: (the sizes it reads, its terms)
        "C1": ((550, 1_700, 55_000), lambda: [(0.5, g(550)), (0.5, g(1_700)), (-1, g(55_000))]),
        "C2": ((55_000,), lambda: [(1, g(55_000))]),
        "C3": ((5_500, 55_000), lambda: [(1, acc("vit", 55_000)), (-1, acc("vit", 5_500)),
                                         (-1, acc("bit", 55_000)), (1, acc("bit", 5_500))]),
        "C4": ((55_000,), lambda: [(1, acc("vit", 55_000)), (-1, acc("vit", 55_000, 1)),
                                   (-1, acc("bit", 55_000)), (1, acc("bit", 55_000, 1))]),
    }
    found = {}
    for name, (sizes, terms) in readouts.items():
        if not set(sizes) <= have:
            continue
        used = [r for (f, size), by_seed in runs.items() for by_m in by_seed.values() for m, r in by_m.items()
                if size in sizes and m in (1, chosen.get((f, size)))]
        try:
            check_pairable(used)
        except ValueError as error:  # reported, never paired across hosts or code
            found[name] = {"verdict": "not pairable", "verdict_t": "not pairable", "why": str(error)}
            continue
        # Registered for this arm: one seed has no SE, so it is provisional under both rules.
        found[name] = _provisional_without_spread(decide(combine(terms())))
    return dict(sorted(found.items()))


def at_chosen(rows, chosen_ladders: dict) -> list[dict]:
    """The finished ladder runs at their ladder's chosen multiple (`chosen_ladders`: convergence()'s
    output or a committed convergence.json), every seed: a converged arm as one sweep's table, whose rows
    keep their model family ('vit' for the 'vit_lighter' ladder), as the protocol-budget formulas read them."""
    chosen = {(c["family"], c["size"]): c["chosen"] for c in chosen_ladders.values()}
    return [r for (ladder, size), by_seed in ladders(rows).items() for by_m in by_seed.values()
            for m, r in by_m.items() if m == chosen.get((ladder, size))]


# The arms whose read-outs depend on the budget, re-decided at converged budgets (R1c-R3c, M1c, M3c, D4c):
# arm: (its read-outs, their formulas on (arm rows, plain rows), the (family, size) runs they read of the
# arm and of the plain arm).
_BOTH = ("vit", "bit")
PLAIN_LADDERS = tuple(ladder_sweep.MODELS)  # the plain arm's ladders, named by their family
BUDGET_ARMS = {
    "reg": (("R1", "R2", "R3"), regularisation_arm,
            [(f, n) for f in _BOTH for n in (*SMALL, 55_000)], [(f, n) for f in _BOTH for n in (*SMALL, 55_000)]),
    "size": (("M1", "M3"), lambda arm, plain: model_size_arm(arm + plain),
             [(f, n) for f in _BOTH for n in (550, 55_000)], [(f, n) for f in _BOTH for n in (550, 55_000)]),
    "deit": (("D4",), lambda arm, plain: deit_arm([], arm, plain), [("deit", 55_000)], [("bit", 55_000)]),
}


def budget_arm(arm: str, arm_rows, plain_rows) -> dict:
    """`arm`'s read-outs at converged budgets, each name with a 'c' (R1c...), from both arms' runs at their
    chosen multiples (at_chosen); {} until every run they read has finished. Every seed's runs, the arm's
    and the plain arm's, must share one pair_key, else each read-out is 'not pairable'. M2 is not
    re-decided (experiments/README.md)."""
    names, formulas, arm_needs, plain_needs = BUDGET_ARMS[arm]

    def used(rows, needs):
        return [r for r in rows if r.get("status") == "finished" and (r["family"], r["train_size"]) in needs]
    arm_used, plain_used = used(arm_rows, arm_needs), used(plain_rows, plain_needs)
    if not set(arm_needs) <= {(r["family"], r["train_size"]) for r in arm_used} or \
            not set(plain_needs) <= {(r["family"], r["train_size"]) for r in plain_used}:
        return {}
    try:
        check_pairable(arm_used + plain_used)
    except ValueError as error:
        return {f"{name}c": {"verdict": "not pairable", "verdict_t": "not pairable", "why": str(error)}
                for name in names}
    decided = formulas(arm_used, plain_used)
    # M3 has its own rule (FLOPs at a target accuracy), not a Q against an SE: one seed leaves it decided.
    return {f"{name}c": decided[name] if name == "M3" else _provisional_without_spread(decided[name])
            for name in names}


def _provisional_without_spread(decided: dict) -> dict:
    if decided.get("df") is None:
        decided["verdict"] = decided["verdict_t"] = "provisional (n = 1)"
    return decided


def replicates(rows, other_rows) -> dict:
    """Per run name finished in both: the same config and seed trained twice (e.g. on two hosts or
    code versions). Test accuracy at the best step and best validation accuracy of each (points), their
    differences (first minus second) and each run's pair_key: the size of what a host or code change
    alone moves."""
    other = {r["name"]: r for r in other_rows if r.get("status") == "finished"}
    found = {}
    for r in rows:
        o = other.get(r["name"])
        if r.get("status") != "finished" or o is None:
            continue
        found[r["name"]] = {
            "test_at_best": (100 * r["accuracy"], 100 * o["accuracy"]),
            "test_difference": 100 * (r["accuracy"] - o["accuracy"]),
            "val_difference": 100 * (r["best_val_accuracy"] - o["best_val_accuracy"]),
            "pair_keys": (r.get("pair_key"), o.get("pair_key"))}
    return dict(sorted(found.items()))


def tuning(rows) -> dict:
    """Per 'family_n<size>' of experiments/tuning.py's runs: best validation accuracy (points) of each
    (lr, weight decay), the pick (the highest) and the grid edges it sits on (then the grid extends)."""
    found = {}
    for r in rows:
        if r.get("status") == "finished":
            config = r["config"]
            found.setdefault((r["family"], r["train_size"]), {})[(config["lr"], config["weight_decay"])] = (
                100 * r["best_val_accuracy"])
    out = {}
    for (family, size), grid in sorted(found.items()):
        (lr, wd), best = max(grid.items(), key=lambda item: item[1])
        rates, decays = sorted({k[0] for k in grid}), sorted({k[1] for k in grid})
        edges = [name for name, value, axis in (("lowest lr", lr, rates[0]), ("highest lr", lr, rates[-1]),
                                               ("lowest wd", wd, decays[0]), ("highest wd", wd, decays[-1]))
                 if value == axis]
        out[f"{family}_n{size}"] = {
            "pick": {"lr": lr, "weight_decay": wd, "val": best}, "edges": edges,
            "grid": [{"lr": k[0], "weight_decay": k[1], "val": v} for k, v in sorted(grid.items())]}
    return out


def _numbers(r: dict) -> str:
    """Q with both thresholds and how Q was computed, as far as the read-out has them."""
    if "tau" not in r:
        return f"Q = {r['q']:+.2f} ({r['how']})" if "q" in r else r.get("how", "")
    tau_t = "n/a" if r.get("tau_t") is None else f"{r['tau_t']:.2f}"
    return f"Q = {r['q']:+.2f}, tau = {r['tau']:.2f}, tau_t = {tau_t} ({r['how']})"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data_scaling", help="the plain arm's sweep (or results) directory")
    for arm in ("regularisation", "model_size", "transfer", "swin", "deit", "deit_aug"):
        parser.add_argument(f"--{arm}", help=f"the {arm} sweep's (or results) directory")
    parser.add_argument("--patch_size", nargs="+", help="the patch_size sweep's (or results) directory, and others "
                                                         "whose runs it shares (model_size's, for patch 4)")
    parser.add_argument("--self_supervised", help="experiments/self_supervised.py's sweep (or results) directory")
    parser.add_argument("--knn_dino", nargs="+", help="the DINO run directory holding its knn_n<N>_s<S>.json files")
    parser.add_argument("--knn_vit", nargs="+", help="the plain arm's ViT run directories with their knn_n<N>_s<S>.json")
    parser.add_argument("--segmentation", help="cls_segmentation.json of `vitjax analyze` on the DINO run, --beside "
                                               "the plain arm's 55k ViT")
    parser.add_argument("--convergence", nargs="+", help="experiments/convergence.py's sweep (or results) directories "
                                                         "(its parts): the budget ladder and C1-C4 at each family's "
                                                         "converged budget")
    parser.add_argument("--primed", nargs="+", help="experiments/tuning.py:part=primed's sweep (or results) "
                                                    "directories: C1'-C4', the C read-outs on the tuned optimisers")
    parser.add_argument("--tuned_ladders", nargs="+",
                        help="experiments/tuning.py:part=ladders's and ladder_seeds's sweep (or results) directories: "
                             "C2t and C4t, at the multiples the tuned optimisers' own seed-0 ladders chose")
    parser.add_argument("--chosen", help="convergence.json of a committed ladder: C1-C4 (and C1'-C4') take each "
                                         "family's converged multiple from it, not from the seed-0 ladders of "
                                         "--convergence")
    parser.add_argument("--replicates", nargs=2, metavar=("DIR", "OTHER"),
                        help="two sweep (or results) directories training runs of the same names: each shared "
                             "run's accuracy in both and the difference")
    parser.add_argument("--sam_init", nargs="+", help="directories holding experiments/sam_init.py's SAM run "
                                                      "directories (a sweep workdir, its parts): I1-I6")
    parser.add_argument("--arms", nargs="+", metavar="ARM=DIR[+DIR...]",
                        help="experiments/convergence.py:part=arm(_seeds),arm=ARM's sweep (or results) directories, "
                             f"ARM one of {', '.join(BUDGET_ARMS)}: its read-outs at converged budgets (R1c...), "
                             "each arm at the multiples of its own seed-0 ladders, against the plain runs its "
                             "part trained beside it (else --convergence's)")
    parser.add_argument("--added_seeds", nargs="+",
                        help="experiments/decide_seeds.py's sweep (or results) directories: their finished runs join "
                             "the tables of --data_scaling, --swin, --self_supervised, --deit, --transfer and "
                             "--patch_size whose seed groups they belong to, for W1, W2, U2, U3 (DINO), T1, D1 "
                             "and S2 only (each seed they add on one pair_key)")
    parser.add_argument("--tuning", help="experiments/tuning.py's sweep (or results) directory: each family's pick")
    parser.add_argument("--out", help="write the read-outs as JSON here")
    parser.add_argument("--markdown", action="store_true", help="also print the plain arm's table (markdown)")
    return parser


def budget_arms(arm_dirs: dict, plain_rows, chosen: dict | None) -> dict:
    """R1c... from {arm: its sweep directories}, each arm at its own seed-0 ladders' multiples (its ladders
    by name, so that arms may share a directory and their controls). Its controls (the plain runs an
    arm's part trains beside it, experiments/convergence.py) are the plain terms where its directories
    hold them, else `plain_rows` (--convergence's) are; either at the plain ladders' multiples `chosen`
    (else those of the seed-0 ladders among `plain_rows`)."""
    chosen = convergence(plain_rows) if chosen is None else chosen
    found = {}
    for arm, dirs in arm_dirs.items():
        rows = merged_rows(dirs)
        controls = [r for r in rows if ladder_of(r.get("name", "")) in PLAIN_LADDERS]
        own = [r for r in rows if ladder_of(r.get("name", "")) in ladder_sweep.ARMS[arm].ladders]
        found.update(budget_arm(arm, at_chosen(own, convergence(own)), at_chosen(controls or plain_rows, chosen)))
    return found


def _tables(args) -> dict:
    """The tables on the command line that --added_seeds joins, by with_added_seeds' names."""
    paths = {"plain": args.data_scaling, "swin": args.swin, "self_supervised": args.self_supervised,
             "deit": args.deit, "deit_aug": args.deit_aug, "transfer": args.transfer}
    tables = {name: table.read(path) for name, path in paths.items() if path}
    if args.patch_size:
        tables["patch_size"] = [row for path in args.patch_size for row in table.read(path)]
    return tables


def _added_seeds(tables: dict, added) -> dict:
    """with_added_seeds, saying which added runs joined no table given (a table left off the command
    line, or a run whose config is not the one its table registers): they are in no read-out."""
    joined = {id(r) for rows in tables.values() for r in in_groups_of(rows, added)}
    strays = [r["name"] for r in added if r.get("status") == "finished" and id(r) not in joined]
    if strays:
        print(f"--added_seeds: {len(strays)} finished runs in no seed group of the tables given, left out: "
              f"{', '.join(strays)}", file=sys.stderr)
    return with_added_seeds(tables, added)


def _arm_dirs(parser, specs) -> dict:
    """--arms' ARM=DIR+DIR... as {arm: [dirs]}; a wrong spelling is the parser's error."""
    found = {}
    for spec in specs or ():
        arm, _, dirs = spec.partition("=")
        if arm not in BUDGET_ARMS or not dirs:
            parser.error(f"--arms {spec!r}: give ARM=DIR[+DIR...], ARM one of {', '.join(BUDGET_ARMS)}")
        found[arm] = dirs.split("+")
    return found


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    arm_dirs = _arm_dirs(parser, args.arms)
    if arm_dirs and not (args.convergence or args.chosen):
        parser.error("--arms needs --chosen experiments/results/convergence/convergence.json (the plain ladders' "
                     "multiples, at which the arms' controls count) or --convergence (the plain ladders)")
    if args.added_seeds and not (args.swin or args.self_supervised or args.deit or args.transfer or args.patch_size):
        parser.error("--added_seeds joins the tables of --swin, --self_supervised, --deit, --transfer or "
                     "--patch_size (with --data_scaling, the plain runs they pair with): give those it adds to")
    if args.primed and not args.chosen:  # the primed runs hold no ladder: nothing else says which rung counts
        parser.error("--primed needs --chosen experiments/results/convergence/convergence.json (the plain "
                     "ladders' multiples, at which the tuned re-runs train)")
    found = {}
    if args.data_scaling:
        rows = table.read(args.data_scaling)
        found.update(plain_arm(rows))
        if args.markdown:
            print(markdown_table(rows) + "\n")
        if args.regularisation:
            found.update(regularisation_arm(table.read(args.regularisation), rows))
        if args.swin:
            found.update(swin_arm(table.read(args.swin), rows))
        if args.self_supervised:
            found.update(self_supervised_arm(table.read(args.self_supervised), rows))
        if args.deit or args.deit_aug:
            found.update(deit_arm(*(table.read(path) if path else [] for path in (args.deit, args.deit_aug)), rows))
    if args.model_size:
        found.update(model_size_arm(table.read(args.model_size)))
    if args.patch_size:
        found.update(patch_size_arm([row for path in args.patch_size for row in table.read(path)]))
    if args.transfer:
        found.update(transfer_arm(table.read(args.transfer)))
    if args.knn_dino and args.knn_vit:
        found.update(knn_arm(args.knn_dino, args.knn_vit))
    if args.segmentation:
        found.update(segmentation_arm(args.segmentation))
    chosen = None
    if args.chosen:
        with open(args.chosen) as f:
            chosen = json.load(f)
    plain_ladders = merged_rows(args.convergence) if args.convergence else []
    if args.convergence:
        found.update(converged_arm(plain_ladders, chosen))
    found.update(budget_arms(arm_dirs, plain_ladders, chosen))
    if args.primed:
        found.update({f"{name}'": r for name, r in converged_arm(merged_rows(args.primed), chosen).items()})
    if args.tuned_ladders:  # its own seed-0 ladders choose: no --chosen
        found.update({f"{name}t": r for name, r in converged_arm(merged_rows(args.tuned_ladders)).items()})
    if args.added_seeds:
        found.update(_added_seeds(_tables(args), merged_rows(args.added_seeds)))
    if args.sam_init:
        found.update(sam_init_arm(args.sam_init))
    if args.replicates:
        first, second = (merged_rows([d]) for d in args.replicates)
        for name, r in replicates(first, second).items():
            print(f"{name}: test at best {r['test_at_best'][0]:.2f} / {r['test_at_best'][1]:.2f} "
                  f"({r['test_difference']:+.2f}), best validation {r['val_difference']:+.2f}")
    if args.tuning:
        for name, point in tuning(table.read(args.tuning)).items():
            edges = f"; on the grid edge: {', '.join(point['edges'])}" if point["edges"] else ""
            print(f"{name}: pick lr {point['pick']['lr']:g}, wd {point['pick']['weight_decay']:g} "
                  f"({point['pick']['val']:.2f}% validation){edges}")
    for name, r in found.items():
        print(f"{name}: {r['verdict']:12s} t-based: {r['verdict_t']:12s} {_numbers(r)}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(found, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
