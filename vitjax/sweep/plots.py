"""`vitjax plot DIR --out FIGDIR`: the ViT paper's sweep figures from a sweep's results table.

    data_scaling.png / .csv   accuracy vs pre-training set size, log x, one line per model (paper Figs. 3-4):
                              full test accuracy, and few-shot linear accuracy for each k
    compute.png / .csv        test accuracy vs training compute (FLOPs, log x), by model family (Fig. 5)
    patch_size.png / .csv     ViT accuracy and training throughput (img/s) vs patch size

Each figure is written beside the table it was drawn from. A figure whose runs are missing (fewer than
two data sizes, no FLOPs, fewer than two patch sizes) is skipped with the reason. Only finished runs are
drawn.
"""
import csv
import json
import os
import re

from vitjax.rundir import flatten

FAMILY_STYLE = {"vit": ("tab:blue", "o"), "bit": ("tab:orange", "s"), "hybrid": ("tab:green", "^")}
FAMILY_NAME = {"vit": "ViT", "bit": "BiT (ResNet)", "hybrid": "Hybrid"}


def _style(family):
    return FAMILY_STYLE.get(family, ("tab:gray", "D"))


def _shots(rows) -> list[int]:
    found = {int(m.group(1)) for r in rows for k in r if (m := re.fullmatch(r"fewshot_(\d+)shot", k))}
    return sorted(found)


def _groups(rows, column: str, varying: tuple, min_points: int = 2) -> list[tuple[str, str, list]]:
    """Lines of a figure: runs whose configs differ only in the `varying` dotted keys, with at least
    `min_points` distinct values of the table `column` (the x-axis). Returns (label, colour, runs) sorted
    by label; a family with one line gets its own colour, several lines get the default cycle."""
    groups = {}
    for row in rows:
        flat = flatten(row.get("config") or {})
        signature = json.dumps({k: v for k, v in flat.items() if k not in varying and not k.startswith("mesh.")},
                               sort_keys=True, default=str)
        groups.setdefault(signature, []).append(row)
    kept = [members for members in groups.values() if len({r[column] for r in members}) >= min_points]
    lines, used = [], {}
    for members in sorted(kept, key=lambda m: m[0]["model"]):
        label = members[0]["model"]
        used[label] = used.get(label, 0) + 1
        lines.append((label if used[label] == 1 else f"{label} ({used[label]})", members))
    per_family = {}
    for _, members in lines:
        per_family[members[0]["family"]] = per_family.get(members[0]["family"], 0) + 1
    cycle = [f"C{i}" for i in range(10)]
    return [(label, _style(m[0]["family"])[0] if per_family[m[0]["family"]] == 1 else cycle[i % 10], m)
            for i, (label, m) in enumerate(lines)]


def _write_csv(path, rows, columns):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def _figure(ncols):
    import matplotlib
    matplotlib.use("Agg")  # headless: no display on training machines or in tests
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, ncols, figsize=(5.2 * ncols, 4.0), squeeze=False)
    return plt, fig, axes[0]


def _save(plt, fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


class Skipped(Exception):
    pass


# --- (a) accuracy vs data size --------------------------------------------------------------------

def data_scaling(rows, out) -> list[str]:
    rows = [r for r in rows if r.get("train_size") and r.get("test_accuracy") is not None]
    lines = _groups(rows, "train_size", ("data.train_size",))
    if not lines:
        raise Skipped("needs finished runs of at least two training-set sizes (data.train_size) that differ "
                      "in nothing else")
    shots = _shots(rows)
    plt, fig, axes = _figure(2 if shots else 1)
    styles = ["-", "--", "-.", ":"]
    table = []
    for label, color, members in lines:
        members = sorted(members, key=lambda r: r["train_size"])
        marker = _style(members[0]["family"])[1]
        axes[0].plot([r["train_size"] for r in members], [100 * r["test_accuracy"] for r in members],
                     marker=marker, color=color, label=label)
        for i, k in enumerate(shots):
            points = [(r["train_size"], 100 * r[f"fewshot_{k}shot"]) for r in members
                      if r.get(f"fewshot_{k}shot") is not None]
            if points:
                axes[1].plot(*zip(*points), marker=marker, color=color, linestyle=styles[i % 4], markersize=4)
        for r in members:
            table.append({"model": label, "family": r["family"], "train_size": r["train_size"],
                          "test_accuracy": r["test_accuracy"], "params": r.get("params"),
                          "train_flops": r.get("train_flops"), "name": r["name"],
                          **{f"fewshot_{k}shot": r.get(f"fewshot_{k}shot") for k in shots}})
    axes[0].set_title("Full training: test accuracy")
    if shots:
        # One legend entry per model (colour) and per k (line style) instead of one per pair.
        from matplotlib.lines import Line2D
        handles = [Line2D([], [], color=color, marker=_style(m[0]["family"])[1], label=label)
                   for label, color, m in lines]
        handles += [Line2D([], [], color="gray", linestyle=styles[i % 4], label=f"{k}-shot")
                    for i, k in enumerate(shots)]
        axes[1].legend(handles=handles, fontsize=7)
        axes[1].set_title("Linear few-shot probe on frozen features")
    sizes = sorted({r["train_size"] for r in table})
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(sizes, [_short(n) for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("pre-training examples (data.train_size)")
        ax.set_ylabel("accuracy [%]")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    columns = ["model", "family", "train_size", "test_accuracy", *[f"fewshot_{k}shot" for k in shots],
               "params", "train_flops", "name"]
    return [_save(plt, fig, os.path.join(out, "data_scaling.png")),
            _write_csv(os.path.join(out, "data_scaling.csv"), table, columns)]


def _short(n: int) -> str:
    """1000 -> '1k', 1500000 -> '1.5M': tick labels for set sizes."""
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.3g}{suffix}"
    return str(n)


# --- (b) accuracy vs compute ----------------------------------------------------------------------

def compute(rows, out) -> list[str]:
    rows = [r for r in rows if (r.get("train_flops") or 0) > 0 and r.get("test_accuracy") is not None]
    if not rows:
        raise Skipped("needs finished runs with train_flops in their results")
    plt, fig, axes = _figure(1)
    ax = axes[0]
    for family in sorted({r["family"] for r in rows}):
        members = [r for r in rows if r["family"] == family]
        color, marker = _style(family)
        ax.scatter([r["train_flops"] for r in members], [100 * r["test_accuracy"] for r in members],
                   color=color, marker=marker, label=FAMILY_NAME.get(family, family))
        for r in members:
            ax.annotate(r["name"], (r["train_flops"], 100 * r["test_accuracy"]), fontsize=6, xytext=(3, 3),
                        textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("training compute [FLOPs] (XLA cost analysis x steps)")
    ax.set_ylabel("test accuracy [%]")
    ax.set_title("Accuracy vs training compute")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    table = [{k: r.get(k) for k in ("name", "family", "model", "train_size", "train_flops", "params",
                                      "test_accuracy")} for r in rows]
    return [_save(plt, fig, os.path.join(out, "compute.png")),
            _write_csv(os.path.join(out, "compute.csv"), table, list(table[0]))]


# --- (c) patch size -------------------------------------------------------------------------------

def patch_size(rows, out) -> list[str]:
    rows = [r for r in rows if r.get("patch_size") and r.get("test_accuracy") is not None
            and r.get("family") in ("vit", "hybrid")]
    # A paper-scale ViT sets its patch through the variant name (B/16 vs B/32).
    lines = _groups(rows, "patch_size", ("model.patch_size", "model.variant"))
    if not lines:
        raise Skipped("needs finished ViT runs of at least two patch sizes (model.patch_size) that differ in "
                      "nothing else")
    plt, fig, axes = _figure(2)
    table = []
    for label, color, members in lines:
        members = sorted(members, key=lambda r: r["patch_size"])
        label = re.sub(r"(/| p)\d+$", "", label)  # the patch is the x-axis
        marker = _style(members[0]["family"])[1]
        axes[0].plot([r["patch_size"] for r in members], [100 * r["test_accuracy"] for r in members],
                     marker=marker, color=color, label=label)
        rates = [(r["patch_size"], r["img_per_sec"]) for r in members if r.get("img_per_sec")]
        if rates:
            axes[1].plot(*zip(*rates), marker=marker, color=color, label=label)
        for r in members:
            table.append({"model": label, "patch_size": r["patch_size"], "tokens": _tokens(r),
                          "test_accuracy": r["test_accuracy"], "img_per_sec": r.get("img_per_sec"),
                          "flops_per_step": r.get("flops_per_step"), "params": r.get("params"), "name": r["name"]})
    axes[0].set_ylabel("test accuracy [%]")
    axes[0].set_title("Accuracy vs patch size")
    axes[1].set_ylabel("training throughput [img/s]")
    axes[1].set_yscale("log")
    axes[1].set_title("Training throughput (median of logged windows)")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ticks = sorted({r["patch_size"] for r in table})
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.set_xlabel("patch size [pixels]")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    columns = ["model", "patch_size", "tokens", "test_accuracy", "img_per_sec", "flops_per_step", "params", "name"]
    return [_save(plt, fig, os.path.join(out, "patch_size.png")),
            _write_csv(os.path.join(out, "patch_size.csv"), table, columns)]


def _tokens(row):
    shape, patch = row.get("image_shape"), row["patch_size"]
    return (shape[0] // patch) * (shape[1] // patch) if shape and patch else None


FIGURES = {"data_scaling": data_scaling, "compute": compute, "patch_size": patch_size}


def plot(sweep_dir: str, out: str | None = None) -> dict:
    """Draws every figure the sweep's finished runs allow; returns {'written': {...}, 'skipped': {...}}."""
    from vitjax.sweep import table
    if not os.path.isdir(sweep_dir):
        raise FileNotFoundError(f"{sweep_dir} is not a directory; pass a sweep's --workdir")
    rows = [r for r in table.read(sweep_dir) if r.get("status") == "finished"]
    out = out or os.path.join(sweep_dir, "figures")
    os.makedirs(out, exist_ok=True)
    result = {"out": out, "runs": len(rows), "written": {}, "skipped": {}}
    for name, draw in FIGURES.items():
        try:
            result["written"][name] = draw(rows, out)
        except Skipped as reason:
            result["skipped"][name] = str(reason)
    return result
