"""`vitjax plot DIR --out FIGDIR`: the ViT paper's sweep figures from a sweep's results table.

    data_scaling.png / .csv   accuracy vs labelled training examples (data.train_size), log x, one line per
                              model (paper Figs. 3-4): test accuracy, and few-shot linear accuracy for each k
    family_gap.png / .csv     one family's accuracy minus the other's (BiT minus ViT) at each size, paired
                              by seed: does the ResNet's lead shrink as data grows?
    compute.png / .csv        test accuracy vs training compute (FLOPs, log x), every setting a point, each
                              family's Pareto front a staircase (Fig. 5)
    patch_size.png / .csv     ViT accuracy and training throughput (img/s) vs patch size

Every point is a group of finished runs that differ only in their training seed (aggregate.py): its mean,
with the sample std over the seeds as error bars where a group has more than one run (the titles say over
how many). The accuracy is the test accuracy at the best validation step where the runs had a validation
split, else the final step's; the y axis says which. A sweep file's TITLE and BUDGET (in DIR/sweep.json)
go into each figure's title.

DIR and --out may be bucket URLs (gs://...; written through vitjax/storage.py).

Each figure is written beside the table of groups it was drawn from. A figure whose runs are missing
(fewer than two data sizes, no FLOPs, fewer than two patch sizes) is skipped with the reason.
"""
import csv
import io
import json
import math
import os
import re
import textwrap

from vitjax import storage
from vitjax.sweep import aggregate

FAMILY_STYLE = {"vit": ("tab:blue", "o"), "bit": ("tab:orange", "s"), "hybrid": ("tab:green", "^"),
                "deit": ("tab:purple", "v"), "swin": ("tab:red", "P")}
FAMILY_NAME = {"vit": "ViT", "bit": "BiT (ResNet)", "hybrid": "Hybrid", "deit": "DeiT (distilled ViT)",
               "swin": "Swin"}
COUNT_UNITS = ((1e9, "B"), (1e6, "M"), (1e3, "k"))
# What may vary along a data-scaling curve: the data, and a budget that grows with it (sweep/budget.py).
DATA_AXIS = ("data.train_size", "total_steps", "total_epochs", "total_examples")
FLOP_UNITS = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
# The few-shot probes' panel titles (vitjax/evaluate/fewshot.py), alone and beside the other probe.
PROBE_TITLES = {"fewshot": ("Linear few-shot probe on frozen features",
                            "Linear few-shot probe, the classes trained on"),
                "transfer": ("Linear few-shot transfer probe on frozen features",
                             "Linear few-shot transfer probe, classes never trained on")}


def _style(family):
    return FAMILY_STYLE.get(family, ("tab:gray", "D"))


def _shots(groups, probe="fewshot") -> list[int]:
    """The k of the `probe`'s (fewshot: in-domain, transfer: unseen classes) accuracy columns the groups have."""
    found = {int(m.group(1)) for g in groups for k in g
             if (m := re.fullmatch(rf"{probe}_(\d+)shot_mean", k)) and g[k] is not None}
    return sorted(found)


def _groups(groups, column: str, varying: tuple, min_points: int = 2) -> list[tuple[str, str, list]]:
    """Lines of a figure: seed groups whose configs differ only in the `varying` dotted keys, with at
    least `min_points` distinct values of `column` (the x-axis). Returns (label, colour, groups) sorted by
    model name; lines of one model name (two arms' sweeps drawn together) add their runs' name prefix."""
    lines_of = {}
    for group in groups:
        flat = aggregate.comparable(group.get("config"))
        signature = json.dumps({k: v for k, v in flat.items() if k not in varying}, sort_keys=True, default=str)
        lines_of.setdefault(signature, []).append(group)
    split = [(line, budget) for members in lines_of.values() for line, budget in _split_budgets(members, column)]
    kept = sorted(((m, b) for m, b in split if len({g[column] for g in m}) >= min_points),
                  key=lambda mb: (mb[0][0]["model"], _run_prefix(mb[0]), mb[1] or 0))
    arms_of = {}  # model name: the arms (run-name prefixes) with a line of it
    for m, _ in kept:
        arms_of.setdefault(m[0]["model"], set()).add(_run_prefix(m))
    colours = _line_colours([m[0]["family"] for m, _ in kept], [_run_prefix(m) for m, _ in kept])
    return [(_line_label(m, budget, len(arms_of[m[0]["model"]]) > 1), colour, m)
            for (m, budget), colour in zip(kept, colours)]


def _line_label(members, budget: float | None, name_arm: bool) -> str:
    """The model's name, its arm where two arms draw one model, and its budget where a ladder's rungs
    share the figure: 'ViT w64 d6 p4 (vit_lighter), 2x budget'."""
    label = members[0]["model"] + (f" ({_run_prefix(members)})" if name_arm else "")
    return label + (f", {budget:g}x budget" if budget else "")


def _split_budgets(members, column: str) -> list[tuple[list, float | None]]:
    """A line's groups as lines with one group per x. Several groups at one x differ in their budget (a
    ladder's rungs, experiments/convergence.py): each goes on the line of its budget, the examples it
    trained on as a multiple of the shortest at its x (2.0: '2x budget'), not on one line that would pass
    through one of them at random. A line with one group per x stays whole (None: no budget named)."""
    at = {}
    for g in members:
        at.setdefault(g[column], []).append(g)
    if all(len(same) == 1 for same in at.values()):
        return [(members, None)]

    def runs(groups):
        return sorted(r for g in groups for r in g.get("runs", []))
    if any(not g.get("examples_seen") for g in members):
        raise Skipped(f"several runs at one {column} and no examples_seen to tell their budgets apart: "
                      f"{runs(members)}")
    shortest = {x: min(g["examples_seen"] for g in same) for x, same in at.items()}
    by_budget = {}
    for g in members:
        by_budget.setdefault(round(g["examples_seen"] / shortest[g[column]], 2), []).append(g)
    for line in by_budget.values():
        xs = [g[column] for g in line]
        if len(xs) != len(set(xs)):
            raise Skipped(f"runs at one {column} with the same budget differ in something the figure cannot "
                          f"tell apart: {runs(line)}")
    return [(line, multiple) for multiple, line in sorted(by_budget.items())]


def _run_prefix(members) -> str:
    """What the run names share before the size and seed ('deitaug' of deitaug_n550_s0, ...): it tells
    apart lines of one model from different sweeps, which name their runs after their arm."""
    prefix = os.path.commonprefix([name for g in members for name in g.get("runs", [])])
    return re.sub(r"([_\-]*n\d*)?([_\-]*s\d*)?[_\-]*$", "", prefix) or "?"


def _line_colours(families, prefixes=None) -> list[str]:
    """The family's colour for its own line (the one whose runs are named after the family, e.g. the plain
    arm's vit_n550_s0 beside a fine-tuned dino_ft_...; else its first line), so a family looks the same in
    every figure; its further lines take tab10 colours no family here uses."""
    prefixes = prefixes or [None] * len(families)
    reserved = {_style(family)[0] for family in families}
    spare = [c for c in ("tab:green", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:gray") if c not in reserved]
    home = {}
    for i, (family, prefix) in enumerate(zip(families, prefixes)):
        if family not in home or (prefix == family and prefixes[home[family]] != family):
            home[family] = i
    return [_style(family)[0] if home[family] == i or not spare else spare.pop(0)
            for i, family in enumerate(families)]


def _write_csv(path, groups, columns):
    """The figure's table: one line per group (seeds and runs space-separated, a NaN std empty)."""
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(aggregate.csv_row(g) for g in groups)
    storage.write_text(path, text.getvalue())  # a local path or a bucket's (gs://)
    return path


def _figure(ncols):
    """One row of `ncols` panels: (plt, fig, list of axes)."""
    return _panels(ncols, per_row=ncols, panel=(5.6, 4.6), title_height=0.0)


def _save(plt, fig, path):
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, dpi=130, format="png")
    plt.close(fig)
    storage.write_bytes(path, image.getvalue())  # a local path or a bucket's (gs://)
    return path


class Skipped(Exception):
    pass


# --- what every figure shares: labels, titles, error bars, ticks ----------------------------------

def accuracy_label(groups) -> str:
    """The y axis: which test accuracy the groups' `accuracy` is (table.headline_accuracy)."""
    sources = {g.get("accuracy_from") for g in groups}
    if sources == {"best_val"}:
        return "test accuracy at best validation [%]"
    if sources == {"final"}:
        return "test accuracy (final step) [%]"
    return "test accuracy (at best validation, else final step) [%]"


def seed_note(groups) -> str:
    """'mean ± std over 3 seeds' (or '1-3 seeds'), or 'one run per point' when no setting was repeated."""
    counts = sorted({g["n"] for g in groups})
    if counts == [1]:
        return "one run per point (a single seed)"
    seeds = f"{counts[0]} seeds" if len(counts) == 1 else f"{counts[0]}-{counts[-1]} seeds"
    return f"mean ± std over {seeds}"


def _title(fig, meta, groups, what: str, note: str = "") -> None:
    """The figure's title: the sweep's TITLE (else `what`), its BUDGET, how many seeds each point has and
    a `note` on what the figure leaves out."""
    meta = meta or {}
    width = int(fig.get_figwidth() * 14)
    lines = [meta.get("title") or what]
    if meta.get("budget"):
        lines.append(f"budget: {meta['budget']}")
    lines.append(seed_note(groups) + (f"; {note}" if note else ""))
    fig.suptitle("\n".join(textwrap.fill(line, width) for line in lines), fontsize=9)


def _errorbar(ax, xs, groups, metric, **style):
    """Means of `metric` (fractions, drawn as %) at xs, with the seeds' std as error bars where n > 1."""
    means = [100 * g[f"{metric}_mean"] for g in groups]
    stds = [g[f"{metric}_std"] for g in groups]
    yerr = [0.0 if s is None or math.isnan(s) else 100 * s for s in stds]
    return ax.errorbar(xs, means, yerr=yerr if any(yerr) else None, capsize=3, **style)


def _short(n: float, units=COUNT_UNITS) -> str:
    """1000 -> '1k', 1500000 -> '1.5M', 500 -> '500' (FLOP_UNITS: 3.2e12 -> '3.2T'): tick labels."""
    for scale, suffix in units:
        if n >= scale:
            return f"{n / scale:.3g}{suffix}"
    return f"{n:.3g}"


# A factor between neighbouring ticks: at 1.29 (6.82T, 8.78T) two five-character labels overlapped.
TICK_GAP = 1.5


def _value_ticks(ax, values, units=COUNT_UNITS) -> None:
    """A log x axis whose ticks are the values themselves in plain numbers (500, 1.7k, 55k; 3.2T FLOPs)
    rather than powers of ten; of values closer than TICK_GAP only the first gets a tick."""
    ticks = []
    for value in sorted(set(values)):
        if not ticks or value >= TICK_GAP * ticks[-1]:
            ticks.append(value)
    ax.set_xscale("log")
    ax.set_xticks(ticks, [_short(v, units) for v in ticks])
    ax.minorticks_off()


def _linear_ticks(ax, units=COUNT_UNITS) -> None:
    """A linear x axis with a few ticks in plain numbers (9.9T): for values within a factor of ~3."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(4))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: _short(value, units) if value > 0 else "0"))


# --- (a) accuracy vs data size --------------------------------------------------------------------

def data_scaling(rows, out, meta=None) -> list[str]:
    groups = [g for g in aggregate.groups(rows) if g.get("train_size")]
    lines = _groups(groups, "train_size", DATA_AXIS)
    if not lines:
        raise Skipped("needs finished runs of at least two training-set sizes (data.train_size) that differ "
                      "in nothing else")
    drawn = [g for _, _, members in lines for g in members]
    probes = {probe: _shots(drawn, probe) for probe in PROBE_TITLES if _shots(drawn, probe)}
    plt, fig, axes = _figure(1 + len(probes))
    styles = ["-", "--", "-.", ":"]
    table = []
    sizes = sorted({g["train_size"] for g in drawn})
    for label, color, members in lines:
        members = sorted(members, key=lambda g: g["train_size"])
        marker = _style(members[0]["family"])[1]
        _errorbar(axes[0], [g["train_size"] for g in members], members, "accuracy", marker=marker, color=color,
                  linestyle="none")
        _gapped_line(axes[0], sizes, members, "accuracy", color=color, marker=marker, label=label)
        for ax, (probe, shots) in zip(axes[1:], probes.items()):
            for i, k in enumerate(shots):
                probed = [g for g in members if g.get(f"{probe}_{k}shot_mean") is not None]
                if probed:
                    _errorbar(ax, [g["train_size"] for g in probed], probed, f"{probe}_{k}shot", marker=marker,
                              color=color, linestyle="none", markersize=4)
                    _gapped_line(ax, sizes, probed, f"{probe}_{k}shot", color=color, linestyle=styles[i % 4])
        table += [{**g, "line": label} for g in members]
    axes[0].set_title("Test accuracy", fontsize=9)
    axes[0].set_ylabel(accuracy_label(drawn))
    axes[0].legend(fontsize=7)
    for ax, (probe, shots) in zip(axes[1:], probes.items()):
        _fewshot_legend(ax, lines, shots, styles)
        ax.set_title(PROBE_TITLES[probe][len(probes) > 1], fontsize=9)
    for ax in axes:
        _value_ticks(ax, [g["train_size"] for g in drawn])
        ax.set_xlabel("labelled training examples (data.train_size)")
        ax.grid(True, which="both", alpha=0.3)
    _title(fig, meta, drawn, "Accuracy vs training-set size")
    columns = ["line", "family", "model", "train_size", "n", "seeds", *_stat_columns(["accuracy"]), "accuracy_from",
               *_stat_columns(["test_accuracy", "best_val_accuracy"], ("mean",)),
               *_stat_columns([f"{probe}_{k}shot" for probe, shots in probes.items() for k in shots], ("mean", "std")),
               "params", "train_flops", "examples_seen", "runs"]
    return [_save(plt, fig, storage.join(out, "data_scaling.png")),
            _write_csv(storage.join(out, "data_scaling.csv"), table, columns)]


def _gapped_line(ax, sizes, members, metric, **style) -> None:
    """Joins a line's points, broken at each size of the figure the line has no run at (a line drawn
    across such a size would claim an accuracy nobody measured)."""
    by_size = {g["train_size"]: 100 * g[f"{metric}_mean"] for g in members}
    ax.plot(sizes, [by_size.get(size, math.nan) for size in sizes], **style)


def _stat_columns(metrics, stats=aggregate.STATS) -> list[str]:
    return [f"{m}_{stat}" for m in metrics for stat in stats]


def _fewshot_legend(ax, lines, shots, styles) -> None:
    """One legend entry per model (colour) and per k (line style) instead of one per pair."""
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color=color, marker=_style(m[0]["family"])[1], label=label)
               for label, color, m in lines]
    handles += [Line2D([], [], color="gray", linestyle=styles[i % 4], label=f"{k}-shot")
                for i, k in enumerate(shots)]
    ax.legend(handles=handles, fontsize=7)
    ax.set_ylabel("few-shot accuracy [%]")


# --- (a') the gap between two families, seed by seed ------------------------------------------------

def family_gap(rows, out, meta=None) -> list[str]:
    """The first family's accuracy minus the second's at each training-set size (BiT minus ViT), paired by
    seed (aggregate.family_difference): the paper's claim is that this gap shrinks as data grows."""
    families = sorted({r.get("family") for r in rows if r.get("train_size")})
    if len(families) != 2:
        raise Skipped(f"needs exactly two model families at several training-set sizes, got {families}")
    first, second = sorted(families, key=lambda f: f != "bit")  # BiT minus ViT where both are there
    points = []
    for size in sorted({r["train_size"] for r in rows if r.get("train_size")}):
        try:
            diff = aggregate.family_difference(rows, first, second, size)
        except ValueError as error:  # several settings of one family at this size: pair them explicitly
            raise Skipped(str(error)) from None
        if diff["n"]:
            points.append({"train_size": size, "runs": [], **{k: diff[k] for k in ("n", "seeds", "mean", "std")},
                           "differences": " ".join(f"{d:.4f}" for d in diff["differences"])})
    if len(points) < 2:
        raise Skipped("needs paired runs (the same seed in both families) at two or more training-set sizes")
    plt, fig, axes = _figure(1)
    ax = axes[0]
    stds = [0.0 if p["std"] is None or math.isnan(p["std"]) else 100 * p["std"] for p in points]
    ax.errorbar([p["train_size"] for p in points], [100 * p["mean"] for p in points],
                yerr=stds if any(stds) else None, capsize=3, marker="o", color="tab:purple")
    ax.axhline(0, color="gray", linewidth=0.8)
    _value_ticks(ax, [p["train_size"] for p in points])
    ax.set_xlabel("labelled training examples (data.train_size)")
    names = FAMILY_NAME.get(first, first), FAMILY_NAME.get(second, second)
    ax.set_ylabel(f"{names[0]} minus {names[1]} [accuracy points]")
    ax.grid(True, which="both", alpha=0.3)
    _title(fig, meta, [{"n": p["n"]} for p in points], f"{names[0]} minus {names[1]}")
    ax.set_title(f"{accuracy_label(aggregate.groups(rows))[:-4]}; paired by seed: mean ± std of the per-seed "
                 f"differences", fontsize=8)
    return [_save(plt, fig, storage.join(out, "family_gap.png")),
            _write_csv(storage.join(out, "family_gap.csv"), points,
                       ["train_size", "n", "seeds", "mean", "std", "differences"])]


# --- (b) accuracy vs compute ----------------------------------------------------------------------

def pareto_front(groups) -> list[dict]:
    """The groups no other beats with fewer or equal FLOPs: the upper-left staircase of mean accuracy
    against train_flops, in order of FLOPs."""
    front, best = [], -math.inf
    for group in sorted(groups, key=lambda g: (g["train_flops"], -g["accuracy_mean"])):
        if group["accuracy_mean"] > best:
            front.append(group)
            best = group["accuracy_mean"]
    return front


def _annotate(ax, members) -> None:
    """Names each point of a panel by its model where the series holds several (the panel is one size)."""
    if len({g["model"] for g in members}) < 2:
        return
    for g in members:
        ax.annotate(g["model"], (g["train_flops"], 100 * g["accuracy_mean"]), fontsize=6, xytext=(4, -2),
                    textcoords="offset points")


def _compute_series(groups) -> list[tuple[str, str, str, list]]:
    """The compute figure's point sets and Pareto fronts: one per family, split by the runs' name prefix
    where one family holds two arms' runs of the same model and size (DeiT with and without its
    augmentation): their fronts are different recipes', not one. Returns (label, colour, marker, groups)."""
    series = {}
    for family in sorted({g["family"] for g in groups}):
        members = [g for g in groups if g["family"] == family]
        arms = {_run_prefix([g]) for g in members}
        clash = len({(g["model"], g.get("train_size")) for g in members}) < len(members) and len(arms) > 1
        for g in members:
            series.setdefault((family, _run_prefix([g]) if clash else None), []).append(g)
    # Ordered by arm name, as _groups orders lines: an arm keeps its colour in both figures.
    ordered = sorted(series.items(), key=lambda item: (item[0][0], item[0][1] or ""))
    colours = _line_colours([family for (family, _), _ in ordered])
    return [(FAMILY_NAME.get(family, family) + (f" ({arm})" if arm else ""), colour, _style(family)[1], members)
            for ((family, arm), members), colour in zip(ordered, colours)]


def compute(rows, out, meta=None) -> list[str]:
    """Accuracy against training FLOPs, a panel per training-set size: a Pareto front compares ways of
    spending compute on the same data, so each series' front is drawn within one size only."""
    groups = [g for g in aggregate.groups(rows) if (g.get("train_flops") or 0) > 0]
    if not groups:
        raise Skipped("needs finished runs with train_flops in their results")
    sizes = sorted({g.get("train_size") or 0 for g in groups})
    plt, fig, axes = _panels(len(sizes))
    table, series = [], _compute_series(groups)
    for ax, size in zip(axes, sizes):
        for label, color, marker, members in series:
            here = [g for g in members if (g.get("train_size") or 0) == size]
            if here:
                table += _draw_front(ax, here, label, color, marker)
        _linear_ticks(ax, FLOP_UNITS)
        ax.margins(x=0.2)
        ax.set_title(f"{_short(size)} training images" if size else "training set as configured", fontsize=9)
        ax.set_xlabel("training FLOPs (train steps only)")
        ax.set_ylabel(accuracy_label(groups))
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes[len(sizes):]:
        ax.set_visible(False)
    axes[0].legend(fontsize=7, title="line: Pareto front", title_fontsize=7)
    _title(fig, meta, groups, "Accuracy vs training compute", note="FLOPs: XLA's cost analysis of a train step x "
           "steps; validation passes, a teacher's training and a pre-training are not counted")
    columns = ["family", "model", "train_size", "patch_size", "n", "seeds", *_stat_columns(["accuracy"]),
               "accuracy_from", "train_flops", "flops_per_step", "params", "pareto", "runs"]
    return [_save(plt, fig, storage.join(out, "compute.png")),
            _write_csv(storage.join(out, "compute.csv"), table, columns)]


def _panels(n: int, per_row: int = 3, panel=(4.6, 3.9), title_height: float = 0.8):
    """A figure of n panels of `panel` inches, at most `per_row` a row; returns (plt, fig, flat list of axes)."""
    import matplotlib
    matplotlib.use("Agg")  # headless: no display on training machines or in tests
    import matplotlib.pyplot as plt
    cols, rows = min(n, per_row), -(-n // per_row)
    fig, axes = plt.subplots(rows, cols, figsize=(panel[0] * cols, panel[1] * rows + title_height), squeeze=False)
    return plt, fig, [ax for row in axes for ax in row]


def _draw_front(ax, members, label, color, marker) -> list[dict]:
    """One series' points and Pareto front in one panel; returns its table rows."""
    front = pareto_front(members)
    _errorbar(ax, [g["train_flops"] for g in members], members, "accuracy", color=color, marker=marker,
              linestyle="none", label=label)
    # Carried on to the series' largest budget: the best accuracy bought with at most x FLOPs.
    xs = [g["train_flops"] for g in front] + [max(g["train_flops"] for g in members)]
    ys = [100 * g["accuracy_mean"] for g in front] + [100 * front[-1]["accuracy_mean"]]
    ax.step(xs, ys, where="post", color=color, alpha=0.6, linewidth=1.2)
    _annotate(ax, members)
    return [{**g, "pareto": any(g is f for f in front)} for g in members]


# --- (c) patch size -------------------------------------------------------------------------------

def patch_size(rows, out, meta=None) -> list[str]:
    groups = [g for g in aggregate.groups(rows) if g.get("patch_size") and g.get("family") in ("vit", "hybrid")]
    # A paper-scale ViT sets its patch through the variant name (B/16 vs B/32).
    lines = _groups(groups, "patch_size", ("model.patch_size", "model.variant"))
    if not lines:
        raise Skipped("needs finished ViT runs of at least two patch sizes (model.patch_size) that differ in "
                      "nothing else")
    plt, fig, axes = _figure(2)
    table = []
    sizes = {g.get("train_size") for _, _, members in lines for g in members}
    for label, color, members in lines:
        members = sorted(members, key=lambda g: g["patch_size"])
        twin = re.search(r" \(\d+\)$", label)  # _groups numbers the lines that share a model name
        label = re.sub(r"(/| p)\d+$", "", members[0]["model"])  # the patch is the x-axis
        if len(sizes) > 1:  # lines that differ in their training set say which
            label += f", {members[0]['train_size']:,} images"
        elif twin:
            label += twin.group()
        marker = _style(members[0]["family"])[1]
        _errorbar(axes[0], [g["patch_size"] for g in members], members, "accuracy", marker=marker, color=color,
                  label=label)
        rates = [(g["patch_size"], g["img_per_sec"]) for g in members if g.get("img_per_sec")]
        if rates:
            axes[1].plot(*zip(*rates), marker=marker, color=color, label=label)
        table += [{**g, "line": label, "tokens": _tokens(g)} for g in members]
    axes[0].set_ylabel(accuracy_label(table))
    axes[0].set_title("Accuracy vs patch size", fontsize=9)
    axes[1].set_ylabel("training throughput [img/s]")
    axes[1].set_yscale("log")
    from matplotlib.ticker import FuncFormatter
    # 300, 1000: not 3x10^2; of the minor ticks only 2, 3 and 5 times a power of ten are named.
    axes[1].yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    axes[1].yaxis.set_minor_formatter(FuncFormatter(lambda y, _: f"{y:g}" if f"{y:e}"[0] in "235" else ""))
    axes[1].set_title("Training throughput (median of logged windows; mean over seeds)", fontsize=9)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ticks = sorted({g["patch_size"] for g in table})
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.set_xlabel("patch size [pixels]")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    _title(fig, meta, table, "Patch size")
    columns = ["line", "model", "patch_size", "tokens", "n", "seeds", *_stat_columns(["accuracy"]), "accuracy_from",
               "img_per_sec", "flops_per_step", "train_flops", "params", "runs"]
    return [_save(plt, fig, storage.join(out, "patch_size.png")),
            _write_csv(storage.join(out, "patch_size.csv"), table, columns)]


def _tokens(group):
    shape, patch = group.get("image_shape"), group["patch_size"]
    return (shape[0] // patch) * (shape[1] // patch) if shape and patch else None


FIGURES = {"data_scaling": data_scaling, "family_gap": family_gap, "compute": compute, "patch_size": patch_size}


def plot(sweep_dir: str, out: str | None = None, beside=(), title: str | None = None) -> dict:
    """Draws every figure the sweep's finished runs allow; returns {'written': {...}, 'skipped': {...}} and
    'without_accuracy', the finished runs no figure can draw (no test accuracy).

    `beside`: other sweeps' directories whose finished runs are drawn too (a new arm beside the runs it
    is compared with), each line still one sweep's runs; a name already drawn is not taken twice.
    `title` replaces the sweep file's TITLE in the figures."""
    from vitjax import rundir
    from vitjax.sweep import table
    for path in (sweep_dir, *beside):
        if not storage.isdir(path):
            raise FileNotFoundError(f"{path} is not a directory; pass a sweep's --workdir")
    rows = [r for r in table.read(sweep_dir) if r.get("status") == "finished"]
    for path in beside:
        names = {r["name"] for r in rows}
        rows += [r for r in table.read(path) if r.get("status") == "finished" and r["name"] not in names]
    if not rows:
        raise FileNotFoundError(f"no finished runs in {' '.join([sweep_dir, *beside])}: pass a sweep's --workdir "
                                f"(it holds {table.JSON} or run directories with {rundir.RESULTS})")
    meta = rundir.read_json(sweep_dir, table.SWEEP) or {}
    if title:
        meta = {**meta, "title": title}
    out = out or storage.join(sweep_dir, "figures")
    storage.makedirs(out)
    # Runs scored otherwise (a dual encoder's zero-shot accuracy, SAM's mIoU) have no place on these axes.
    unscored = sorted(r["name"] for r in rows if r.get("accuracy") is None)
    result = {"out": out, "runs": len(rows), "without_accuracy": unscored, "written": {}, "skipped": {}}
    for name, draw in FIGURES.items():
        try:
            result["written"][name] = draw(rows, out, meta)
        except Skipped as reason:
            result["skipped"][name] = str(reason)
    return result
