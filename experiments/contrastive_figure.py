r"""Issue 40 item 6's study in one figure: (a) zero-shot accuracy on held-out colour-item pairs against batch
size, sigmoid and softmax loss; (b) the LiT arms (a locked ViT, MAE or DINO image tower, or both towers from
scratch), held-out and seen pairs. Every number is `vitjax eval --captions` at the run's best-validation step
(experiments/contrastive_readouts.py reads the same files and refuses any other step).

    python experiments/contrastive_figure.py runs/contrastive --out experiments/results/contrastive/lit/figure

Writes OUT.png and OUT.json (per loss and batch, per arm: every seed's accuracy, the mean and the standard
error over seeds). A panel whose runs have not finished says so instead of drawing.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from vitjax.config import load_module  # noqa: E402
from vitjax.data import captions  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
reader = load_module(os.path.join(_HERE, "contrastive_readouts.py"))
spread = load_module(os.path.join(_HERE, "decision_figure.py")).spread
sweep = reader.sweep
LOSS_STYLE = {"sigmoid": dict(color="tab:red", marker="o"), "softmax": dict(color="tab:blue", marker="s")}
ARM_LABEL = {"scratch": "both from scratch", "vit": "locked ViT", "mae": "locked MAE", "dino": "locked DINO"}
GROUP_STYLE = {"held_out": dict(color="black", marker="o"), "seen": dict(color="tab:grey", marker="^")}


def collect(sweep_dirs) -> dict:
    """{'batch': {loss: {batch: spread}}, 'lit': {arm: {'held_out'|'seen': spread}}} of the finished runs."""
    batch_names = {sweep.batch_name(loss, b, s): (loss, b) for loss in sweep.LOSSES for b in sweep.BATCHES
                   for s in sweep.SEEDS}
    lit_names = {sweep.lit_name(arm, s): arm for arm in sweep.ARMS for s in sweep.SEEDS}
    runs = reader.run_values(sweep_dirs, [*batch_names, *lit_names])
    batch, lit = {}, {}
    for name, run in runs.items():
        if name in batch_names:
            loss, b = batch_names[name]
            batch.setdefault(loss, {}).setdefault(b, {})[run["seed"]] = run["held_out"]
        else:
            for group in GROUP_STYLE:
                lit.setdefault(lit_names[name], {}).setdefault(group, {})[run["seed"]] = run[group]
    return {"batch": {loss: {b: spread(v) for b, v in sorted(by.items())} for loss, by in batch.items()},
            "lit": {arm: {g: spread(v) for g, v in groups.items()} for arm, groups in lit.items()}}


def _point(ax, x, s, style, label=None):
    ax.scatter([x] * len(s["values"]), s["values"], s=10, alpha=0.35, color=style["color"], marker=style["marker"])
    ax.errorbar([x], [s["mean"]], yerr=[s["se"] or 0], capsize=3, label=label, linestyle="none", **style)


def draw_batch(ax, batch: dict) -> None:
    seeds = sorted({len(point["seeds"]) for by in batch.values() for point in by.values()})
    ax.set_title(f"(a) sigmoid vs softmax, {sweep.STEPS:,} steps at every batch"
                 + (f", {'/'.join(map(str, seeds))} seeds per point" if seeds else ""), fontsize=10)
    if not batch:
        ax.text(0.5, 0.5, "batch_s<seed> parts not run yet", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    for loss, by in batch.items():
        sizes = list(by)
        ax.plot(sizes, [by[b]["mean"] for b in sizes], color=LOSS_STYLE[loss]["color"], linewidth=1)
        for i, b in enumerate(sizes):
            _point(ax, b * (0.96 if loss == "sigmoid" else 1.04), by[b], LOSS_STYLE[loss], loss if i == 0 else None)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sweep.BATCHES, [f"{b:,}" for b in sweep.BATCHES])
    ax.set_xlabel("batch size (pairs per step)")
    ax.set_ylabel("zero-shot accuracy, held-out pairs (%)")
    ax.legend(fontsize=8)


def draw_lit(ax, lit: dict) -> None:
    if not lit:
        ax.set_title("(b) LiT: locked image tower vs both from scratch", fontsize=10)
        ax.text(0.5, 0.5, "lit part not run yet", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    arms = [arm for arm in sweep.ARMS if arm in lit]
    seeds = sorted({len(lit[arm]["held_out"]["seeds"]) for arm in arms})
    ax.set_title("(b) LiT: locked image tower vs both from scratch\n"
                 f"batch {sweep.LIT_BATCH}, sigmoid loss, {sweep.STEPS:,} steps, "
                 f"{'/'.join(map(str, seeds))} seeds per arm", fontsize=10)
    for i, arm in enumerate(arms):
        for j, (group, style) in enumerate(GROUP_STYLE.items()):
            label = group.replace("_", "-") + " pairs" if i == 0 else None
            _point(ax, i + (j - 0.5) * 0.25, lit[arm][group], style, label)
    classes = len(captions.colour_item_pairs())
    ax.axhline(100 / classes, color="tab:grey", linestyle=":", linewidth=1, label=f"chance (1 in {classes})")
    ax.set_xticks(range(len(arms)), [ARM_LABEL[a] for a in arms])
    ax.set_ylabel("zero-shot accuracy (%)")
    ax.legend(fontsize=8)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep_dirs", nargs="+", help="directories holding experiments/contrastive.py's runs")
    parser.add_argument("--out", required=True, help="path stem: writes OUT.png and OUT.json")
    args = parser.parse_args(argv)
    try:
        found = collect(args.sweep_dirs)
    except ValueError as error:
        sys.exit(f"contrastive_figure: error: {error}")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
    draw_batch(left, found["batch"])
    draw_lit(right, found["lit"])
    fig.suptitle("Dual encoders on the caption data: test pairs at each run's best validation step; "
                 "mean ± SE over seeds (dots: seeds)", fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)) or ".", exist_ok=True)
    fig.savefig(args.out + ".png", dpi=120)
    with open(args.out + ".json", "w") as f:
        json.dump(found, f, indent=1, sort_keys=True, default=str)
    print(f"wrote {args.out}.png and {args.out}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
