r"""The re-decided data-scaling study in one figure: each family at its converged budget, test accuracy at the
best validation step against training-set size, with the tuned optimiser (experiments/tuning.py:part=primed)
and with the configs' plain one (experiments/convergence.py); and the gap G* = BiT - ViT, paired within a
seed and averaged over seeds. Error bars: the standard error over seeds (none with one seed).

    R=experiments/results
    python experiments/decision_figure.py --tuned $R/tuning/primed_s{0,1,2,3,4} \
        --plain $R/convergence/{onehost,small,seeds,part2} --chosen $R/convergence/convergence.json \
        --out $R/tuning/decision

Writes OUT.png and OUT.json (per arm, family and size: every seed's accuracy, mean, SE; G* likewise, from
the runs of each seed that share a pair_key). The rung of each family and size is the committed ladder's
choice (`--chosen`), for both optimisers, as registered for C1'-C4'.
"""
import argparse
import json
import math
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from vitjax.config import load_module  # noqa: E402
from vitjax.sweep.plots import FAMILY_NAME, FAMILY_STYLE  # noqa: E402

readouts = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "readouts.py"))
FAMILIES = ("vit", "bit")
ARMS = {"tuned": "-", "plain": "--"}  # line style of each optimiser
DODGE = {"tuned": 0.97, "plain": 1.03}  # x offsets on the log axis, so error bars at one size stay apart


def spread(values: dict) -> dict:
    """{seed: value} -> the seeds, values, mean and standard error (None below two seeds)."""
    seeds = sorted(values)
    points = [values[s] for s in seeds]
    se = statistics.stdev(points) / math.sqrt(len(points)) if len(points) > 1 else None
    return {"seeds": seeds, "values": [round(v, 4) for v in points], "mean": round(statistics.fmean(points), 4),
            "se": None if se is None else round(se, 4)}


def arm_points(dirs, chosen: dict) -> dict:
    """{'accuracy': {family: {size: spread}}, 'gap': {size: spread of BiT - ViT per seed}} of one arm's
    runs at the chosen rungs; a seed's gap only where its two runs share a pair_key."""
    runs = readouts.ladders(readouts.merged_rows(dirs))
    picked = {}  # (family, size) -> {seed: row}
    for (family, size), by_seed in runs.items():
        rung = chosen.get((family, size))
        if family in FAMILIES and rung is not None:
            picked[family, size] = {seed: by_m[rung] for seed, by_m in by_seed.items() if rung in by_m}
    accuracy, gap = {family: {} for family in FAMILIES}, {}
    for (family, size), by_seed in sorted(picked.items()):
        accuracy[family][size] = spread({s: 100 * r["accuracy"] for s, r in by_seed.items()})
    for size in sorted({size for _, size in picked}):
        vit, bit = picked.get(("vit", size), {}), picked.get(("bit", size), {})
        paired = {s: 100 * (bit[s]["accuracy"] - vit[s]["accuracy"]) for s in set(vit) & set(bit)
                  if bit[s]["pair_key"] == vit[s]["pair_key"]}
        if paired:
            gap[size] = spread(paired)
    return {"accuracy": accuracy, "gap": gap}


def _errorbar(ax, points: dict, label: str, colour: str, marker: str, linestyle: str, dodge: float) -> None:
    sizes = sorted(points)
    ax.errorbar([n * dodge for n in sizes], [points[n]["mean"] for n in sizes], yerr=[points[n]["se"] or 0 for n in sizes],
                color=colour, marker=marker, linestyle=linestyle, capsize=3,
                fillstyle="full" if linestyle == "-" else "none",
                label=f"{label} (seeds per size: {', '.join(str(len(points[n]['seeds'])) for n in sizes)})")


def _listed(seeds: list) -> str:
    return ", ".join(map(str, seeds))


def figure(found: dict, path: str) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.5, 4.8))
    for arm, linestyle in ARMS.items():
        for family in FAMILIES:
            colour, marker = FAMILY_STYLE[family]
            _errorbar(left, found[arm]["accuracy"][family], f"{FAMILY_NAME[family]}, {arm}", colour, marker,
                      linestyle, DODGE[arm])
        _errorbar(right, found[arm]["gap"], f"BiT - ViT, {arm}", "black", "D", linestyle, DODGE[arm])
    sizes = sorted({n for arm in found.values() for points in arm["accuracy"].values() for n in points})
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("training images (log scale)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right" if ax is left else "upper right")
    left.set_ylabel("test accuracy at the best validation step (%)")
    left.set_title("Each family at its converged budget: mean ± SE over seeds", fontsize=9)
    right.axhline(0, color="grey", linewidth=0.8)
    right.set_ylabel("BiT minus ViT, paired within a seed (accuracy points)")
    right.set_title("G* = BiT - ViT: mean ± SE of the per-seed differences", fontsize=9)
    seeds = {arm: sorted({s for points in v["accuracy"].values() for p in points.values() for s in p["seeds"]})
             for arm, v in found.items()}
    fig.suptitle("Fashion-MNIST, converged budgets (the committed ladder's rung per family and size)\ntuned: each "
                 f"family's lr and weight decay picked on validation, seeds {_listed(seeds['tuned'])}; plain: the "
                 f"configs' Adam 2e-3, wd 1e-4, seeds {_listed(seeds['plain'])}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuned", nargs="+", required=True, help="tuning.py:part=primed's sweep directories")
    parser.add_argument("--plain", nargs="+", required=True, help="convergence.py's sweep directories")
    parser.add_argument("--chosen", required=True, help="the committed convergence.json")
    parser.add_argument("--out", required=True, help="OUT.png and OUT.json are written")
    args = parser.parse_args(argv)
    with open(args.chosen) as f:
        chosen = {(c["family"], c["size"]): c["chosen"] for c in json.load(f).values()}
    found = {"tuned": arm_points(args.tuned, chosen), "plain": arm_points(args.plain, chosen)}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    figure(found, args.out + ".png")
    with open(args.out + ".json", "w") as f:
        json.dump({arm: {"accuracy": {fam: {str(n): p for n, p in pts.items()} for fam, pts in v["accuracy"].items()},
                         "gap": {str(n): p for n, p in v["gap"].items()}} for arm, v in found.items()}, f, indent=1)
    print(f"wrote {args.out}.png and {args.out}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
