r"""Warmup-stable-decay against cosine at the same budget, from runs the study already has: each plain
ladder's 1x rung (experiments/convergence.py: WSD, the last 20% a linear cooldown) beside the 8-epoch
run of the same family, size and seed (experiments/data_scaling.py: warmup then cosine), every other
setting equal (steps, warmup, rate, decay, batch, subset).

    python experiments/schedule_check.py experiments/results/data_scaling experiments/results/convergence \
        experiments/results/convergence/*/

The ladders assume that a WSD rung is as good a run as a cosine one of its length (Hagele et al. 2024
report WSD matching cosine): this prints each pair's difference (WSD - cosine, points of best
validation accuracy and of test accuracy at that step), the mean, SD and SE per family and overall,
and the difference of the two families' means, the part of it that could move a family gap. Not a
registered read-out: an exploratory check. The pairs cross hosts and code (the 8-epoch runs predate
pair keys), where one config and seed moved by up to 0.63 points between hosts.
"""
import argparse
import os
import statistics
import sys

from vitjax.config import load_module
from vitjax.sweep import table

readouts = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "readouts.py"))
FAMILIES = readouts.PLAIN_LADDERS  # the plain arm's ladders, named by their family


def pairs(cosine_rows, ladder_rows) -> dict:
    """{(family, size, seed): (WSD row, cosine row)} for every finished plain 1x rung with a twin."""
    cosine = {(r["family"], r["train_size"], r["seed"]): r for r in cosine_rows if r.get("status") == "finished"}
    found = {}
    for (ladder, size), by_seed in readouts.ladders(ladder_rows).items():
        for seed, rungs in by_seed.items():
            twin, wsd = cosine.get((ladder, size, seed)), rungs.get(1)
            if ladder in FAMILIES and wsd and twin and twin["steps"] == wsd["steps"]:
                found[ladder, size, seed] = (wsd, twin)
    return found


def _spread(values) -> str:
    se = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else float("nan")
    return f"{statistics.mean(values):+.2f} (SE {se:.2f}, n = {len(values)})"


def report(found: dict) -> str:
    lines = ["| family | images | seed | WSD - cosine, best validation | test at best |", "|---|---|---|---|---|"]
    by_family = {}
    for (family, size, seed), (wsd, cosine) in sorted(found.items()):
        val = 100 * (wsd["best_val_accuracy"] - cosine["best_val_accuracy"])
        test = 100 * (wsd["accuracy"] - cosine["accuracy"])
        by_family.setdefault(family, []).append((val, test))
        lines.append(f"| {family} | {size:,} | {seed} | {val:+.2f} | {test:+.2f} |")
    lines.append("")
    for family, diffs in sorted(by_family.items()):
        lines.append(f"{family}: validation {_spread([v for v, _ in diffs])}, test {_spread([t for _, t in diffs])}")
    every = [d for diffs in by_family.values() for d in diffs]
    lines.append(f"all: validation {_spread([v for v, _ in every])}, test {_spread([t for _, t in every])}")
    if set(by_family) == set(FAMILIES):
        mean = {f: statistics.mean(t for _, t in by_family[f]) for f in FAMILIES}
        lines.append(f"BiT - ViT of the test differences: {mean['bit'] - mean['vit']:+.2f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cosine", help="experiments/data_scaling.py's sweep (or results) directory")
    parser.add_argument("ladders", nargs="+", help="experiments/convergence.py's sweep (or results) directories")
    args = parser.parse_args(argv)
    ladder_rows = [row for directory in args.ladders for row in table.read(directory)]
    found = pairs(table.read(args.cosine), ladder_rows)
    if not found:
        parser.error("no 1x rung has an 8-epoch twin of the same family, size, seed and steps")
    print(report(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
