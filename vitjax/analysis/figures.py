"""Matplotlib drawings of the analyses, one function per figure; each writes one PNG and returns its path.

The Agg backend is selected on import so figures render on headless machines (and in tests) without
a display; nothing here computes statistics, it only draws arrays produced elsewhere.
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (must follow the backend choice)
import numpy as np  # noqa: E402


def _save(fig, path: str) -> str:
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)  # figures are large and many analyses may run in one process
    return path


def _tick_every(n: int) -> int:
    return max(1, int(np.ceil(n / 8)))


def posemb_similarity(similarity: np.ndarray, path: str) -> str:
    """The paper's grid of small maps: tile (r, c) is patch (r, c)'s similarity to every patch.

    Drawn as one mosaic image with one-pixel gaps (NaN, shown white) rather than rows*cols subplots,
    which keeps a 24x24 grid (576 tiles) quick to draw.
    """
    rows, cols = similarity.shape[:2]
    mosaic = np.full((rows * (rows + 1) - 1, cols * (cols + 1) - 1), np.nan)
    for r in range(rows):
        for c in range(cols):
            mosaic[r * (rows + 1):r * (rows + 1) + rows, c * (cols + 1):c * (cols + 1) + cols] = similarity[r, c]
    size = min(12.0, 3.0 + 0.35 * max(rows, cols))
    fig, ax = plt.subplots(figsize=(size, size))
    image = ax.imshow(mosaic, cmap="viridis", vmin=-1, vmax=1, interpolation="nearest")
    row_ticks = range(0, rows, _tick_every(rows))
    col_ticks = range(0, cols, _tick_every(cols))
    ax.set_yticks([r * (rows + 1) + (rows - 1) / 2 for r in row_ticks], [str(r + 1) for r in row_ticks])
    ax.set_xticks([c * (cols + 1) + (cols - 1) / 2 for c in col_ticks], [str(c + 1) for c in col_ticks])
    ax.set_ylabel("Input patch row")
    ax.set_xlabel("Input patch column")
    ax.set_title("Position embedding similarity")
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="Cosine similarity")
    return _save(fig, path)


def attention_distance(distance: np.ndarray, path: str, *, uniform_distance: float | None = None,
                       title: str = "Mean attention distance") -> str:
    """Dots for each head's mean attention distance against its layer (paper Fig. 7 right)."""
    layers, heads = distance.shape
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    colours = plt.get_cmap("tab20")(np.arange(heads) % 20)
    for head in range(heads):
        ax.scatter(np.arange(1, layers + 1), distance[:, head], s=18, color=colours[head],
                   label=f"Head {head + 1}" if heads <= 16 else None)
    if uniform_distance is not None:
        ax.axhline(uniform_distance, color="grey", linestyle="--", linewidth=1, label="uniform attention")
    ax.set_xlabel("Network depth (layer)")
    ax.set_ylabel("Mean attention distance (pixels)")
    ax.set_xticks(np.arange(1, layers + 1, _tick_every(layers)))
    ax.set_xlim(0.5, layers + 0.5)
    ax.set_ylim(bottom=0)
    ax.set_title(title)
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


def _overlay(ax, image, attention_map, title=None):
    height, width = image.shape[:2]
    ax.imshow(displayable(image), cmap="gray")
    ax.imshow(attention_map, cmap="inferno", alpha=0.6, extent=(0, width, height, 0), interpolation="bilinear")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=8)


def attention_maps(images: np.ndarray, rollout: np.ndarray, cls: np.ndarray | None, path: str, *,
                   max_heads: int = 12) -> str:
    """One row per image: the input, its rollout map, then the last layer's CLS map per head."""
    count = len(rollout)
    heads = 0 if cls is None else min(cls.shape[1], max_heads)
    columns = 2 + heads
    fig, axes = plt.subplots(count, columns, figsize=(1.6 * columns, 1.6 * count), squeeze=False)
    rollout_title = "Rollout (CLS)" if cls is not None else "Rollout (mean of patches)"
    for i in range(count):
        axes[i, 0].imshow(displayable(images[i]), cmap="gray")
        axes[i, 0].set_xticks([])
        axes[i, 0].set_yticks([])
        if i == 0:
            axes[i, 0].set_title("Input", fontsize=8)
        _overlay(axes[i, 1], images[i], rollout[i], rollout_title if i == 0 else None)
        for h in range(heads):
            _overlay(axes[i, 2 + h], images[i], cls[i, h], f"CLS, head {h + 1}" if i == 0 else None)
    suptitle = "Attention rollout across layers"
    if cls is not None:
        suptitle += " and last-layer CLS attention per head"
        if heads < cls.shape[1]:
            suptitle += f" (first {heads} of {cls.shape[1]} heads)"
    fig.suptitle(suptitle, fontsize=10)
    return _save(fig, path)


def filter_components(components: np.ndarray, explained: np.ndarray, path: str, *, title: str,
                      columns: int = 7) -> str:
    """Each principal component as a small kh x kw image, labelled with its share of the variance."""
    count = len(components)
    rows = int(np.ceil(count / columns))
    columns = min(columns, count)
    fig, axes = plt.subplots(rows, columns, figsize=(1.3 * columns, 1.45 * rows + 0.4), squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    for i, (component, share) in enumerate(zip(components, explained)):
        ax = axes[i // columns, i % columns]
        ax.imshow(displayable(component), cmap="gray", interpolation="nearest")
        ax.set_title(f"PC{i + 1} {100 * share:.1f}%", fontsize=7)
    fig.suptitle(f"Principal components of the {title}", fontsize=9)
    return _save(fig, path)
