r"""Decides the study's pre-registered read-outs (experiments/README.md) from the sweeps' tables.

    python experiments/readouts.py --data_scaling experiments/results/data_scaling \
        --out experiments/results/readouts.json

Each read-out is a quantity Q in accuracy points, predicted Q > 0, with threshold
tau = max(2 SE, 0.5 points): **holds** when Q > tau, **fails** when Q < -tau, else **inconclusive**.
Q is a sum of terms coef * acc(family, n). When every term has the same >= 2 seeds, Q is computed seed
by seed and SE = std / sqrt(n) over those seeds (paired: the families share each seed's subset, and the
subsets are nested across sizes); otherwise each term's mean and SE are combined in quadrature. Read-outs
whose sweep is missing from the command line are listed as not run.
"""
import argparse
import json
import math
import statistics
import sys

from vitjax.sweep import aggregate, table

FLOOR = 0.5  # points: above the test set's own sampling error (0.3 at 90%) and the old run-to-run spread


def values(rows, family, size, metric="accuracy") -> dict:
    """{seed: metric in points} of one family's runs at `size`."""
    return {s: 100 * v for s, v in aggregate.by_seed(aggregate.members(rows, family, size), metric).items()}


def combine(terms) -> dict:
    """Q, SE and how they were computed, from [(coef, {seed: points}), ...]."""
    common = set.intersection(*(set(v) for _, v in terms))
    if len(common) >= 2 and all(set(v) == common for _, v in terms):
        per_seed = [sum(c * v[s] for c, v in terms) for s in sorted(common)]
        return {"q": statistics.fmean(per_seed), "se": statistics.stdev(per_seed) / math.sqrt(len(per_seed)),
                "how": f"paired over seeds {sorted(common)}", "per_seed": per_seed}
    if len(common) >= 2:  # pair over the seeds every term has; the others' extra seeds are left out
        return combine([(c, {s: v[s] for s in common}) for c, v in terms])
    q = sum(c * statistics.fmean(v.values()) for c, v in terms)
    se = math.sqrt(sum((c * statistics.stdev(v.values())) ** 2 / len(v) for c, v in terms if len(v) > 1))
    return {"q": q, "se": se, "how": "means, SEs in quadrature"}


def decide(result: dict, *, at_least: bool = False) -> dict:
    """Adds tau and the verdict; `at_least`: Q > -tau counts as holds ("as good within noise")."""
    tau = max(2 * result["se"], FLOOR)
    if at_least:
        verdict = "holds" if result["q"] > -tau else "fails"
    else:
        verdict = "holds" if result["q"] > tau else "fails" if result["q"] < -tau else "inconclusive"
    return {**result, "tau": tau, "verdict": verdict}


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
    if not early and result["verdict"] == "holds":
        result["verdict"] = "fails"
    return result


def _late_best_check(rows) -> dict:
    """P5: at 55k every run's best step is in the last quarter of its steps."""
    runs = _runs_at(rows, 55_000)
    late = all(r["best_step"] >= 0.75 * r["steps"] for r in runs)
    return {"verdict": "holds" if late else "fails",
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data_scaling", help="the plain arm's sweep (or results) directory")
    parser.add_argument("--out", help="write the read-outs as JSON here")
    parser.add_argument("--markdown", action="store_true", help="also print the plain arm's table (markdown)")
    args = parser.parse_args(argv)
    found = {}
    if args.data_scaling:
        rows = table.read(args.data_scaling)
        found.update(plain_arm(rows))
        if args.markdown:
            print(markdown_table(rows) + "\n")
    for name, r in found.items():
        numbers = f"Q = {r['q']:+.2f} points, tau = {r['tau']:.2f} ({r['how']})" if "q" in r else ""
        print(f"{name}: {r['verdict']:12s} {numbers}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(found, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
