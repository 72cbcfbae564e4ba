r"""The budget ladder's table and figure: accuracy against training length for each family and size,
each point's converged budget marked (the rule: experiments/protocol.py's converged_rung).

    python experiments/convergence_report.py runs/convergence --out experiments/results/convergence
    python experiments/convergence_report.py experiments/results/convergence runs/convergence --out ...  # parts merged
    python experiments/convergence_report.py runs/arms --arm deit --out experiments/results/convergence/arms/deit

Writes OUT/convergence.json (experiments/readouts.py's `convergence`), OUT/convergence.md (one row per
family and size: each rung's epochs, best validation accuracy, test accuracy at that step, the gain
over the previous rung and the chosen budget) and OUT/convergence.png (a panel per size: best
validation accuracy, which chooses, solid; test accuracy at that step, which never does, dashed).
"""
import argparse
import json
import os
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from vitjax.config import load_module  # noqa: E402
from vitjax.sweep.plots import FAMILY_NAME, FAMILY_STYLE  # noqa: E402

_here = os.path.dirname(os.path.abspath(__file__))
readouts = load_module(os.path.join(_here, "readouts.py"))
ladder = load_module(os.path.join(_here, "convergence.py"))


def ladder_label(point: dict) -> str:
    """A ladder's name in tables and legends: its family's, or an arm's (experiments/convergence.py)."""
    return ladder.ARM_LABELS.get(point["family"]) or FAMILY_NAME[point["family"]]


def style(point: dict) -> tuple:
    """(colour, marker): its family's colour; an arm's ladder drawn hollow beside the plain one."""
    colour, marker = FAMILY_STYLE[point.get("model_family", point["family"])]
    return colour, marker, "none" if point["family"] in ladder.ARM_LABELS else "full"


def markdown(found: dict) -> str:
    lines = ["| family | images | rung | epochs | steps | best val acc | gain over previous rung | test acc at best | "
             "wall (s) | chosen |", "|---|---|---|---|---|---|---|---|---|---|"]
    for point in found.values():
        previous = None
        for m, rung in point["rungs"].items():
            gain = "" if previous is None else f"{rung['val'] - previous:+.2f}"
            mark = ("**chosen, capped**" if point["capped"] else "**chosen**") if m == point["chosen"] else ""
            lines.append(f"| {ladder_label(point)} | {point['size']:,} | {m}x | {rung['epochs']:,.1f} | "
                         f"{rung['steps']:,} | {rung['val']:.2f} | {gain} | {rung['test_at_best']:.2f} | "
                         f"{rung['wall_seconds']:,.0f} | {mark} |")
            previous = rung["val"]
    return "\n".join(lines) + "\n"


def figure(found: dict, path: str) -> None:
    sizes = sorted({p["size"] for p in found.values()})
    width = max(4.2 * len(sizes), 7.0)
    fig, axes = plt.subplots(1, len(sizes), figsize=(width, 4.4), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        for point in (p for p in found.values() if p["size"] == size):
            colour, marker, fill = style(point)
            rungs = list(point["rungs"].values())
            epochs = [r["epochs"] for r in rungs]
            ax.plot(epochs, [r["val"] for r in rungs], marker=marker, color=colour, fillstyle=fill,
                    label=f"{ladder_label(point)}: validation (chooses)")
            ax.plot(epochs, [r["test_at_best"] for r in rungs], marker=marker, color=colour, linestyle="--",
                    fillstyle="none", alpha=0.7, label=f"{ladder_label(point)}: test at best step")
            chosen = point["rungs"][point["chosen"]]
            ax.scatter([chosen["epochs"]], [chosen["val"]], s=220, facecolors="none", edgecolors=colour,
                       linewidths=2, zorder=5)
            if point["capped"]:
                ax.annotate("capped", (chosen["epochs"], chosen["val"]), textcoords="offset points",
                            xytext=(-10, 10), ha="right", color=colour, fontsize=9)
        ax.margins(y=0.15)  # room above the top rung for its "capped" label, inside the panel
        ax.set_xscale("log", base=2)
        ticks = sorted({r["epochs"] for p in found.values() if p["size"] == size for r in p["rungs"].values()})
        ax.set_xticks(ticks, [f"{t:,.0f}" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("training epochs (log scale)")
        ax.set_ylabel("accuracy (%)")
        ax.set_title(f"{size:,} training images")
        ax.grid(alpha=0.3)
    labelled = {}  # every family's entries, whichever panel drew them
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            labelled.setdefault(label, handle)
    # Below the panels: inside one it hid the ladders' points (the 55k ViT's ringed rung).
    fig.legend(labelled.values(), labelled.keys(), fontsize=8, loc="lower center", ncol=2, frameon=False)
    tallest = max(m for point in found.values() for m in point["rungs"])
    rungs = ladder.CLIMB if tallest > ladder.LADDER.multiples[-1] else ladder.LADDER
    title = (f"Budget ladder, seed 0: {rungs.describe()}. Ringed: the converged budget (the next rung gains <= "
             f"{readouts.protocol.CONVERGENCE_FLOOR} validation points)")
    fig.suptitle(textwrap.fill(title, int(width * 13)), fontsize=9)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dirs", nargs="+", help="experiments/convergence.py's sweep (or results) directories, "
                                                      "one per part (e.g. the committed results and a new part)")
    parser.add_argument("--out", required=True, help="where the table, JSON and figure go")
    parser.add_argument("--arm", choices=sorted(ladder.ARMS),
                        help="only this arm's ladders (arms may share a workdir; their controls are no ladders)")
    args = parser.parse_args(argv)
    found = readouts.convergence(readouts.merged_rows(args.sweep_dirs))
    if args.arm:
        found = {key: point for key, point in found.items() if point["family"] in ladder.ARMS[args.arm].ladders}
    if not found:
        sys.exit(f"no ladder{' of arm ' + args.arm if args.arm else ''} in {' '.join(args.sweep_dirs)} has "
                 f"all its rungs finished yet")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "convergence.json"), "w") as f:
        json.dump(found, f, indent=1)
    text = markdown(found)
    with open(os.path.join(args.out, "convergence.md"), "w") as f:
        f.write(text)
    figure(found, os.path.join(args.out, "convergence.png"))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
