"""Matplotlib drawings of the analyses, one function per figure; each writes one PNG and returns its path.

The Agg backend is selected on import so figures render on headless machines (and in tests) without
a display; nothing here computes statistics, it only draws arrays produced elsewhere.
"""
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (must follow the backend choice)
from matplotlib.patches import Rectangle  # noqa: E402
import numpy as np  # noqa: E402


def _save(fig, path: str) -> str:
    from vitjax import rundir  # jax is loaded by now; on several processes (a pod) process 0 alone writes
    if rundir.is_writer():
        fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)  # figures are large and many analyses may run in one process
    return path


def _tick_every(n: int) -> int:
    return max(1, int(np.ceil(n / 8)))


def _mosaic(similarity: np.ndarray) -> np.ndarray:
    """The [rows, cols, rows, cols] maps laid out as one image, tile (r, c) holding patch (r, c)'s map,
    with one-pixel gaps (NaN, drawn white) between tiles."""
    rows, cols = similarity.shape[:2]
    mosaic = np.full((rows * (rows + 1) - 1, cols * (cols + 1) - 1), np.nan)
    for r in range(rows):
        for c in range(cols):
            mosaic[r * (rows + 1):r * (rows + 1) + rows, c * (cols + 1):c * (cols + 1) + cols] = similarity[r, c]
    return mosaic


def posemb_similarity(similarities: dict[str, np.ndarray], path: str) -> str:
    """The paper's grid of small maps, one panel per model (titled by its key), on one colour scale.

    Tile (r, c) is patch (r, c)'s similarity to every patch. One mosaic image a panel rather than
    rows*cols subplots keeps a 24x24 grid (576 tiles) quick to draw.
    """
    first = next(iter(similarities.values()))
    rows, cols = first.shape[:2]
    size = min(8.0, 3.0 + 0.3 * max(rows, cols))
    fig, axes = plt.subplots(1, len(similarities), figsize=(size * len(similarities) + 1, size),
                             squeeze=False, layout="constrained")
    row_ticks = range(0, rows, _tick_every(rows))
    col_ticks = range(0, cols, _tick_every(cols))
    for ax, (label, similarity) in zip(axes[0], similarities.items()):
        image = ax.imshow(_mosaic(similarity), cmap="viridis", vmin=-1, vmax=1, interpolation="nearest")
        ax.set_yticks([r * (rows + 1) + (rows - 1) / 2 for r in row_ticks], [str(r + 1) for r in row_ticks])
        ax.set_xticks([c * (cols + 1) + (cols - 1) / 2 for c in col_ticks], [str(c + 1) for c in col_ticks])
        ax.set_ylabel("Input patch row")
        ax.set_xlabel("Input patch column")
        ax.set_title(label)
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="Cosine similarity")
    fig.suptitle("Position embedding similarity")
    return _save(fig, path)


# The controls beside a trained model (initialised, another run): greys, told apart by marker and shade.
CONTROL_STYLES = (dict(color="0.25", marker="x"), dict(color="0.6", marker="^"), dict(color="0.45", marker="s"))


def attention_distance(distances: dict[str, np.ndarray], path: str, *, uniform_distance: float | None = None,
                       title: str = "Mean attention distance") -> str:
    """Each head's mean attention distance against its layer (paper Fig. 7 right).

    `distances` maps a label to [layers, heads]: the first (the trained model) is drawn one colour a
    head, the rest (controls) in greys beside it, each control its own marker, shade and column, so a
    reader sees whether training moved the heads and which control a dot belongs to.
    """
    (label, trained), *controls = distances.items()
    layers, heads = trained.shape
    x = np.arange(1, layers + 1)
    # One column per model inside each layer's slot: trained leftmost, controls to its right.
    offsets = np.linspace(-0.2, 0.2, len(controls) + 1) if controls else np.zeros(1)
    fig, ax = plt.subplots(figsize=(6.5, 4.5), layout="constrained")
    for i, (control_label, control) in enumerate(controls):
        ax.scatter(np.repeat(x + offsets[i + 1], heads), control.ravel(), s=18,
                   label=f"{control_label}: every head", **CONTROL_STYLES[i % len(CONTROL_STYLES)])
    colours = plt.get_cmap("tab20")(np.arange(heads) % 20)
    for head in range(heads):
        ax.scatter(x + offsets[0], trained[:, head], s=18, color=colours[head],
                   label=(f"{label}, head {head + 1}" if heads <= 16 else (label if head == 0 else None)))
    if uniform_distance is not None:
        ax.axhline(uniform_distance, color="black", linestyle="--", linewidth=1, label="uniform attention")
    ax.set_xlabel("Network depth (layer)")
    ax.set_ylabel("Mean attention distance (pixels)")
    ax.set_xticks(np.arange(1, layers + 1, _tick_every(layers)))
    ax.set_xlim(0.5, layers + 0.5)
    highest = max([trained.max(), uniform_distance or 0.0] + [control.max() for _, control in controls])
    ax.set_ylim(0, 1.1 * highest)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    return _save(fig, path)


def displayable(image: np.ndarray) -> np.ndarray:
    """A preprocessed image (any value range, C=1 or 3) scaled to [0, 1] for imshow."""
    image = np.asarray(image, np.float64)
    low, high = image.min(), image.max()
    image = (image - low) / (high - low) if high > low else np.zeros_like(image)
    if image.shape[-1] == 1:
        return image[..., 0]
    if image.shape[-1] != 3:
        return image.mean(axis=-1)  # no natural colour rendering for other channel counts
    return image


def _bare(ax, title=None):
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=8)


def _overlay(ax, image, pixel_map, vmax, title=None):
    """`pixel_map` (already one cell a token, at the patch grid's pixel size) over the image, drawn
    'nearest' so no detail appears inside a token's cell."""
    height, width = image.shape[:2]
    ax.imshow(displayable(image), cmap="gray", interpolation="nearest")
    ax.imshow(pixel_map, cmap="inferno", alpha=0.6, vmin=0, vmax=vmax, interpolation="nearest",
              extent=(0, pixel_map.shape[1], pixel_map.shape[0], 0))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    _bare(ax, title)


def _map_columns(subfig, images, rollout, cls, heads, vmax_rollout, vmax_cls):
    """One model's block of the attention-map figure: its rollout, then a CLS map per head."""
    axes = subfig.subplots(len(images), 1 + heads, squeeze=False)
    rollout_title = "Rollout (CLS)" if cls is not None else "Rollout (mean of patches)"
    for i, image in enumerate(images):
        _overlay(axes[i, 0], image, rollout[i], vmax_rollout[i], rollout_title if i == 0 else None)
        for h in range(heads):
            _overlay(axes[i, 1 + h], image, cls[i, h], vmax_cls[i], f"CLS, head {h + 1}" if i == 0 else None)


def _row_max(maps: list) -> np.ndarray:
    # One colour scale per image, shared by the models: a flat map must look flat beside a peaked one.
    present = [m.reshape(len(m), -1) for m in maps if m is not None]
    return np.max(np.concatenate(present, axis=1), axis=1) if present else None


def attention_maps(images: np.ndarray, maps: dict[str, tuple], path: str, *, max_heads: int = 12) -> str:
    """One row per image: the input, then for each model (the key labels its block) the rollout map
    and the last layer's CLS map per head.

    `maps` holds (rollout [n, h, w], cls [n, heads, h, w] or None) per model, already upsampled to
    pixels one cell a token (attention.to_pixels). Colours run from 0 to the image's largest value
    over all models' maps of that kind, so the models' maps compare directly.
    """
    count = len(images)
    first_cls = next(iter(maps.values()))[1]
    heads = 0 if first_cls is None else min(first_cls.shape[1], max_heads)
    vmax_rollout = _row_max([rollout for rollout, _ in maps.values()])
    vmax_cls = _row_max([cls for _, cls in maps.values()])
    cell = 1.5
    fig = plt.figure(figsize=(cell * (1 + len(maps) * (1 + heads)) + 0.3, cell * count + 0.8), layout="constrained")
    blocks = fig.subfigures(1, 1 + len(maps), width_ratios=[1] + [1 + heads] * len(maps), wspace=0.02)
    input_axes = blocks[0].subplots(count, 1, squeeze=False)[:, 0]
    for i, ax in enumerate(input_axes):
        ax.imshow(displayable(images[i]), cmap="gray", interpolation="nearest")
        _bare(ax, "Input" if i == 0 else None)
    blocks[0].suptitle(" ", fontsize=10)  # aligns the input column with the labelled blocks
    for block, (label, (rollout, cls)) in zip(blocks[1:], maps.items()):
        _map_columns(block, images, rollout, cls, heads, vmax_rollout, vmax_cls)
        block.suptitle(label, fontsize=10)
    suptitle = "Attention rollout across layers"
    if first_cls is not None:
        suptitle += " and last-layer CLS attention per head"
        if heads < first_cls.shape[1]:
            suptitle += f" (first {heads} of {first_cls.shape[1]} heads)"
    fig.suptitle(suptitle + "; one colour scale per image and kind of map, shared by the models", fontsize=10)
    return _save(fig, path)


def _component_grid(subfig, components, explained, label, columns):
    count = len(components)
    rows = int(np.ceil(count / columns))
    columns = min(columns, count)
    axes = subfig.subplots(rows, columns, squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    for i, (component, share) in enumerate(zip(components, explained)):
        ax = axes[i // columns, i % columns]
        ax.imshow(displayable(component), cmap="gray", interpolation="nearest")
        ax.set_title(f"PC{i + 1} {100 * share:.1f}%", fontsize=7)
    subfig.suptitle(label, fontsize=9)


def _spectrum(ax, spectra: dict[str, np.ndarray], random: np.ndarray):
    """Variance share per component: each model's line, and the random-filter band (min-max, mean)."""
    x = np.arange(1, random.shape[1] + 1)
    ax.fill_between(x, 100 * random.min(axis=0), 100 * random.max(axis=0), color="0.85",
                    label=f"random Gaussian filters, min-max of {len(random)} draws")
    ax.plot(x, 100 * random.mean(axis=0), color="0.45", linestyle="--", linewidth=1,
            label="random Gaussian filters, mean")
    styles = [dict(color="tab:blue", marker="o"), dict(color="tab:orange", marker="s")]
    for (label, spectrum), style in zip(spectra.items(), styles * len(spectra)):
        ax.plot(np.arange(1, len(spectrum) + 1), 100 * spectrum, markersize=3, linewidth=1.2, label=label, **style)
    ax.set_yscale("log")
    ax.set_xlabel("Principal component (largest variance first)")
    ax.set_ylabel("Variance explained (%)")
    ax.set_title("Variance spectrum against random filters of the same shape", fontsize=9)
    ax.legend(fontsize=7, frameon=False)


def filter_components(pcas: dict[str, tuple], spectra: dict[str, np.ndarray], random: np.ndarray, path: str, *,
                      title: str, columns: int = 7) -> str:
    """Top: each model's principal components (a small kh x kw image each, labelled with its share of
    the variance), side by side. Bottom: the models' variance spectra against the band of random
    Gaussian filters (`random`, [draws, components]), which tells structure from sampling noise."""
    rows = max(int(np.ceil(len(components) / columns)) for components, _ in pcas.values())
    width = max(6.0, 1.2 * min(columns, 28) * len(pcas))
    fig = plt.figure(figsize=(width, 1.35 * rows + 4.2), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.35 * rows + 0.4, 3.4])
    grids = top.subfigures(1, len(pcas), wspace=0.05, squeeze=False)[0]
    for grid, (label, (components, explained)) in zip(grids, pcas.items()):
        _component_grid(grid, components, explained, label, columns)
    _spectrum(bottom.subplots(), spectra, random)
    fig.suptitle(f"Principal components of the {title}", fontsize=10)
    return _save(fig, path)


def mae_reconstructions(originals: np.ndarray, panels: dict[str, np.ndarray], path: str) -> str:
    """One row per image, one column per panel (the key is its title; NaN pixels are drawn blank),
    every panel of a row on the original's value range, so brightness compares across the row."""
    count, columns = len(originals), len(panels)
    cell = 1.4
    fig, axes = plt.subplots(count, columns, figsize=(cell * columns + 0.3, cell * count + 0.6), squeeze=False,
                             layout="constrained")
    for i in range(count):
        low, high = float(np.min(originals[i])), float(np.max(originals[i]))
        for j, (title, images) in enumerate(panels.items()):
            image = np.clip((np.asarray(images[i], np.float64) - low) / max(high - low, 1e-12), 0, 1)
            image = np.where(np.isnan(image), 1.0, image)  # masked patches: blank (white)
            image = image[..., 0] if image.shape[-1] == 1 else image
            axes[i, j].imshow(image, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
            _bare(axes[i, j], title if i == 0 else None)
    fig.suptitle("MAE reconstructions (visible patches: the input's; masked: the model's)", fontsize=10)
    return _save(fig, path)


def cls_segmentation(scores: dict[str, dict], examples: dict, path: str, *, title: str) -> str:
    """Left: each model's mean Jaccard per head of its CLS attention mask against the object's patches
    (bars) and of the same masks placed at random (black ticks). Right, one row per example image: the
    image, its object patches, and each model's mask of its best head (vitjax/analysis/segmentation.py).

    `scores` {model label: segmentation.score(...)}; `examples` {'images' [n, H, W, C], 'objects'
    [n, H, W] and 'masks' {model label: [n, H, W]}, all masks already one cell a token in pixels}."""
    labels = list(scores)
    count = len(examples["images"])
    fig = plt.figure(figsize=(5.5 + 1.3 * (2 + len(labels)), max(3.2, 1.3 * count + 0.9)), layout="constrained")
    left, right = fig.subfigures(1, 2, width_ratios=[5.5, 1.3 * (2 + len(labels))])
    ax = left.subplots()
    heads = len(scores[labels[0]]["per_head"])
    width = 0.8 / len(labels)
    for i, label in enumerate(labels):
        x = np.arange(heads) + (i - (len(labels) - 1) / 2) * width
        s = scores[label]
        ax.bar(x, s["per_head"], width, label=f"{label}: mean {s['mean']:.3f} (random placement {s['mean_permuted']:.3f})")
        ax.scatter(x, s["per_head_permuted"], marker="_", color="black", s=120, zorder=3,
                   label="same masks, patches placed at random" if i == 0 else None)
    ax.set_xticks(np.arange(heads), [str(h + 1) for h in range(heads)])
    ax.set_xlabel("Head of the last layer")
    ax.set_ylabel("Jaccard index with the object's patches")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title(textwrap.fill(title, 80), fontsize=9)
    axes = right.subplots(count, 2 + len(labels), squeeze=False)
    for row, image in enumerate(examples["images"]):
        panels = [("Input", displayable(image)), ("Object patches", examples["objects"][row])]
        # Model labels run long ("Initialised (seed 0, untrained)"): wrapped to the panel's width.
        panels += [(f"{textwrap.fill(label, 18)}\nbest head {scores[label]['best_head'] + 1}",
                    examples["masks"][label][row]) for label in labels]
        for column, (name, picture) in enumerate(panels):
            axes[row, column].imshow(picture, cmap="gray", interpolation="nearest", vmin=0, vmax=1)
            _bare(axes[row, column], name if row == 0 else None)
    return _save(fig, path)


def _prompt_panel(ax, pixels, target, part: dict, row: int, title=None):
    """A canvas with the shown mask filled, the target outlined and the prompt drawn (points as a
    clicked pixel's column and row; a box's corners are inclusive pixels, so its edges sit half a pixel out)."""
    ax.imshow(pixels, cmap="gray", vmin=0, vmax=255, interpolation="nearest")
    ax.imshow(np.ma.masked_where(~part["mask"][row], np.ones(target.shape)), cmap="cool", alpha=0.45,
              vmin=0, vmax=1, interpolation="nearest")
    if target.any():
        ax.contour(target.astype(float), levels=[0.5], colors="yellow", linewidths=0.8)
    if part["points"] is not None:
        for (x, y), label in zip(part["points"][row], part["labels"][row]):
            if label >= 0:  # -1 pads a round whose prediction left no error to click on
                ax.plot(x, y, "+" if label == 1 else "x", color="lime" if label == 1 else "red", ms=7, mew=1.6)
    if part["box"] is not None:
        x0, y0, x1, y1 = part["box"][row]
        ax.add_patch(Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0 + 1, y1 - y0 + 1, fill=False, edgecolor="cyan",
                               linewidth=1.0))
    ax.set_xlim(-0.5, target.shape[1] - 0.5)
    ax.set_ylim(target.shape[0] - 0.5, -0.5)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel(f"IoU {float(part['iou'][row]):.2f}", fontsize=7, labelpad=1)
    if title:
        ax.set_title(title, fontsize=7)


def sam_prompts(pixels: np.ndarray, targets: np.ndarray, answers: dict[str, dict], prompts: list[str],
                row_labels: list[str], path: str, *, title: str) -> str:
    """One row per item: its canvas with the item outlined, then for each model (the key of `answers`,
    vitjax/analysis/sam_prompts.py's prompts of that model) one panel per prompt: the mask shown (filled),
    positive clicks (+, green), negative ones (x, red), the box (cyan), and the IoU under it."""
    count, columns = len(pixels), 1 + len(answers) * len(prompts)
    cell = 1.15
    fig, axes = plt.subplots(count, columns, figsize=(cell * columns + 0.6, (cell + 0.2) * count + 0.8),
                             squeeze=False, layout="constrained")
    for row in range(count):
        ax = axes[row, 0]
        ax.imshow(pixels[row], cmap="gray", vmin=0, vmax=255, interpolation="nearest")
        if targets[row].any():
            ax.contour(targets[row].astype(float), levels=[0.5], colors="yellow", linewidths=0.8)
        _bare(ax, "Canvas, target" if row == 0 else None)
        ax.set_ylabel(row_labels[row], fontsize=7)
        for m, (label, parts) in enumerate(answers.items()):
            for p, prompt in enumerate(prompts):
                header = f"{textwrap.fill(label, 22)}\n{prompt}" if p == 0 else prompt
                _prompt_panel(axes[row, 1 + m * len(prompts) + p], pixels[row], targets[row], parts[prompt], row,
                              header if row == 0 else None)
    fig.suptitle(textwrap.fill(title, 40 * max(2, columns // 3)), fontsize=9)
    return _save(fig, path)
