r"""The mIoU table of experiments/sam_init.py's SAM runs (issue 39 item 6): each arm (encoder at random, from
vitjax's MAE, from a supervised ViT) on the seen and the unseen classes' test canvases, after 1, 3 and 5
clicks and for a box prompt, each seed's value and the mean ± SE over seeds, all at the run's
best-validation step.

    python experiments/sam_table.py runs/sam_init [more sweep dirs] --out experiments/results/sam_init/miou

writes miou.csv (one row per run and metric) and miou.md (one row per arm, mean ± SE and n), and prints
the markdown. Runs are found, paired and refused exactly as by `readouts.py --sam_init` (its
`sam_values`): a run finished in two of the directories is an error. The read-outs I1-I6 are decided
by readouts.py, not here: this table is what they are computed from, for a reader to see.
Tests: `python -m pytest tests/sweep/test_sam_table.py`.
"""
import argparse
import csv
import os
import sys

from vitjax.config import load_module

_HERE = os.path.dirname(os.path.abspath(__file__))
readouts = load_module(os.path.join(_HERE, "readouts.py"))
sweep = load_module(os.path.join(_HERE, "sam_init.py"))
spread = load_module(os.path.join(_HERE, "decision_figure.py")).spread

GROUPS = ("seen", "unseen")
PROMPTS = {"1click": "1 click", "3click": "3 clicks", "5click": "5 clicks", "box": "box"}
METRICS = tuple(f"{group}_{prompt}" for group in GROUPS for prompt in PROMPTS)
ARM_LABELS = {"random": "random init", "mae": "vitjax MAE", "vit": "supervised ViT"}


def cells(values: dict) -> dict:
    """{(arm, metric): decision_figure.spread of {seed: points}} (seeds, values, mean, SE: None with one
    seed) from readouts.sam_values' output."""
    found = {}
    for arm in sweep.ARMS:
        for metric in METRICS:
            seeds = {seed: run[metric] for (a, seed), run in values.items() if a == arm and metric in run}
            if seeds:
                found[arm, metric] = spread(seeds)
    return found


def markdown(table: dict) -> str:
    """One row per arm; a column per group and prompt: 'mean ± SE' in mIoU points, n seeds in the last."""
    header = ["encoder at init", *(f"{group}, {label}" for group in GROUPS for label in PROMPTS.values()), "seeds"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for arm in sweep.ARMS:
        row = [ARM_LABELS[arm]]
        seeds = set()
        for metric in METRICS:
            cell = table.get((arm, metric))
            if cell is None:
                row.append("-")
                continue
            seeds.update(cell["seeds"])
            row.append(f"{cell['mean']:.1f}" + ("" if cell["se"] is None else f" ± {cell['se']:.1f}"))
        row.append(", ".join(str(s) for s in sorted(seeds)) or "-")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def write(table: dict, out: str) -> None:
    """`out`.csv (arm, seed, group, prompt, miou points) and `out`.md."""
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["arm", "seed", "group", "prompt", "miou_points"])
        for (arm, metric), cell in table.items():
            group, prompt = metric.split("_", 1)
            for seed, value in zip(cell["seeds"], cell["values"]):
                writer.writerow([arm, seed, group, prompt, f"{value:.4f}"])
    with open(out + ".md", "w") as f:
        f.write(markdown(table) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep_dirs", nargs="+", help="directories holding experiments/sam_init.py's SAM runs")
    parser.add_argument("--out", help="write OUT.csv and OUT.md (e.g. experiments/results/sam_init/miou)")
    args = parser.parse_args(argv)
    for sweep_dir in args.sweep_dirs:
        if not os.path.isdir(sweep_dir):
            parser.error(f"{sweep_dir} is not a directory; pass the sweep's --workdir")
    try:
        table = cells(readouts.sam_values(args.sweep_dirs))
    except ValueError as error:
        sys.exit(f"sam_table.py: error: {error}")
    if not table:
        sys.exit(f"sam_table.py: error: no finished SAM run of experiments/sam_init.py in {', '.join(args.sweep_dirs)}")
    print(markdown(table))
    if args.out:
        write(table, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
