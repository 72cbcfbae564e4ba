"""Segmentation canvases made here (issue 39 item 5): several grey items (Fashion-MNIST's, or the synthetic
patterns) at random scales and positions on a black canvas, overlapping, each with the mask of its visible
pixels, for promptable segmentation (vitjax/objectives/sam.py).

    canvases, groups = make_split(base_images, base_labels, "train", seed=0, canvas=64)   # uint8 [n, 64, 64, 3]
    pixels, item_ids, classes = canvases[i, ..., 0], canvases[i, ..., 1], canvases[i, ..., 2]
    masks = item_ids[None] == np.arange(1, ITEMS + 1)[:, None, None]                       # [items, 64, 64]

A canvas is packed into one uint8 image so that the pipeline carries it as any image (exact resume and
padded evaluation batches come for free; pp strings must leave it as it is, e.g. ''): channel 0 the grey
pixels, channel 1 which item each pixel shows (0 background, k the k-th item drawn), channel 2 that item's
class + 1. An item's mask is its own pixels brighter than MASK_THRESHOLD after scaling; items are drawn in
order, each over the earlier ones where its mask is (elsewhere it is transparent), so an item's mask is
what is left visible of it: occlusion respected. Every item keeps at least MIN_VISIBLE of its own mask,
so that each is a target worth prompting: the placements are redrawn until it does, up to PLACEMENT_TRIES
times, after which the last draw stands (`visible_fractions` tells how much of each item shows; how often
that happens is not measured yet; every item of the default settings' first 2,000 training canvases keeps
at least 20 pixels).

Class-disjoint split: training canvases hold items of the `seen` classes only, drawn from the training
images; test canvases alternate (canvas i: seen when i is even, unseen when odd) between items of the
seen classes and items of the other classes, all drawn from the test images. The label of a canvas
(`groups`) is SEEN (0) or UNSEEN (1). Canvas i is drawn from a key of (seed, split, i) alone: the same
whatever the split's size.

Default seen classes (0, 1, 4, 5, 8: T-shirt, trouser, coat, sandal, bag): each unseen class (pullover,
dress, shirt, sneaker, ankle boot) has a seen cousin, so the unseen classes are new objects rather than a
new domain. Rendering 2,000 64x64 canvases of 3 items took 2.6 s on this project's 2-core host (loaded).
"""
import numpy as np

SEEN, UNSEEN = 0, 1
PIXELS, ITEM_IDS, ITEM_CLASSES = 0, 1, 2  # the channels of a packed canvas
SEEN_CLASSES = (0, 1, 4, 5, 8)
NUM_CLASSES = 10  # of the base dataset: Fashion-MNIST's, and the synthetic source's default
MASK_THRESHOLD = 24  # grey level (0-255) above which a scaled item pixel belongs to the item
MIN_VISIBLE = 0.3  # the share of an item's own mask that later items may not cover
PLACEMENT_TRIES = 32
_SPLIT_TAGS = {"train": 21, "test": 22}  # apart from the synthetic source's and the captions' tags


def unseen_classes(seen) -> tuple[int, ...]:
    return tuple(k for k in range(NUM_CLASSES) if k not in set(seen))


def check_settings(canvas: int, num_items: int, scale: tuple[int, int], seen) -> None:
    """ValueError naming the fix for settings no canvas can be drawn with."""
    low, high = scale
    if not 1 <= num_items <= 255:
        raise ValueError(f"num_items={num_items}: a canvas holds 1 to 255 items (channel 1 numbers them)")
    if not 4 <= low <= high <= canvas:
        raise ValueError(f"scale={tuple(scale)}: item sides in pixels, 4 <= low <= high <= canvas ({canvas})")
    seen = tuple(seen)
    if not seen or any(not 0 <= k < NUM_CLASSES for k in seen) or len(set(seen)) != len(seen):
        raise ValueError(f"seen_classes={seen}: distinct class ids in 0..{NUM_CLASSES - 1}, at least one")
    if not unseen_classes(seen):
        raise ValueError(f"seen_classes={seen} leaves no class unseen; keep some out for evaluation")


def make_split(base_images, base_labels, split: str, *, seed: int, canvas: int = 64, size: int = 1000,
               num_items: int = 3, scale: tuple[int, int] = (20, 40), seen=SEEN_CLASSES):
    """(uint8 canvases [size, canvas, canvas, 3], int64 groups [size]) of `split` ('train' or 'test'),
    items drawn from `base_images` (uint8 [N, h, w, C], grey or averaged to grey) by `base_labels`."""
    if split not in _SPLIT_TAGS:
        raise ValueError(f"canvases come in splits 'train' and 'test', not {split!r}")
    check_settings(canvas, num_items, scale, seen)
    if split == "test" and size % 2:
        raise ValueError(f"test canvases alternate seen and unseen classes: use an even size, not {size}")
    grey = np.asarray(base_images, np.float32).mean(axis=-1)
    labels = np.asarray(base_labels).astype(np.int64)
    pools = {SEEN: np.flatnonzero(np.isin(labels, seen)), UNSEEN: np.flatnonzero(~np.isin(labels, seen))}
    groups = np.zeros(size, np.int64) if split == "train" else np.arange(size, dtype=np.int64) % 2
    for group in set(groups.tolist()):
        if not len(pools[group]):
            raise ValueError(f"the base {split} split has no item of the "
                             f"{'seen' if group == SEEN else 'unseen'} classes")
    out = np.zeros((size, canvas, canvas, 3), np.uint8)
    for i in range(size):
        rng = np.random.default_rng([seed, _SPLIT_TAGS[split], i])
        chosen = rng.choice(pools[groups[i]], size=num_items)
        out[i] = draw_canvas(rng, grey[chosen], labels[chosen], canvas, scale)
    return out, groups


def draw_canvas(rng, item_pixels, item_classes, canvas: int, scale: tuple[int, int]) -> np.ndarray:
    """One packed canvas [canvas, canvas, 3] of the items (grey [k, h, w], classes [k]) in drawing order."""
    sides = rng.integers(scale[0], scale[1] + 1, size=len(item_pixels))
    scaled = [resize_bilinear(pixels, side) for pixels, side in zip(item_pixels, sides)]
    masks = [pixels > MASK_THRESHOLD for pixels in scaled]
    for _ in range(PLACEMENT_TRIES):
        corners = [rng.integers(0, canvas - side + 1, size=2) for side in sides]
        packed = compose(scaled, masks, item_classes, corners, canvas)
        if visible_fractions(packed, masks).min() >= MIN_VISIBLE:
            break
    return packed


def compose(scaled, masks, item_classes, corners, canvas: int) -> np.ndarray:
    """Each item pasted over the earlier ones where its own mask is; the packed canvas."""
    packed = np.zeros((canvas, canvas, 3), np.uint8)
    for k, (pixels, mask, (top, left)) in enumerate(zip(scaled, masks, corners)):
        side = pixels.shape[0]
        window = packed[top:top + side, left:left + side]
        window[mask, 0] = np.clip(np.round(pixels[mask]), 0, 255).astype(np.uint8)
        window[mask, 1] = k + 1
        window[mask, 2] = int(item_classes[k]) + 1
    return packed


def visible_fractions(packed, masks) -> np.ndarray:
    """[k]: each item's visible pixels over its own mask's pixels."""
    counts = np.bincount(packed[..., 1].ravel(), minlength=len(masks) + 1)[1:len(masks) + 1]
    return counts / np.maximum([mask.sum() for mask in masks], 1)


def item_masks(packed, items: int) -> np.ndarray:
    """bool [..., items, H, W]: the visible mask of each item of packed canvases [..., H, W, 3]."""
    ids = np.asarray(packed)[..., 1]
    return ids[..., None, :, :] == np.arange(1, items + 1)[:, None, None]


def item_classes(packed, items: int) -> np.ndarray:
    """int [..., items]: each item's class (-1 for an item with no visible pixel) of packed canvases."""
    packed = np.asarray(packed)
    masks = item_masks(packed, items)
    classes = np.where(masks, packed[..., None, :, :, 2].astype(np.int64) - 1, -1)
    return classes.max(axis=(-2, -1))


def resize_bilinear(pixels, side: int) -> np.ndarray:
    """A square grey image [h, w] resampled to [side, side], bilinear with half-pixel centres (float32)."""
    height, width = pixels.shape

    def taps(size_in):
        position = np.clip((np.arange(side) + 0.5) * size_in / side - 0.5, 0, size_in - 1)
        low = np.floor(position).astype(np.int64)
        high = np.minimum(low + 1, size_in - 1)
        return low, high, (position - low).astype(np.float32)

    (r0, r1, fr), (c0, c1, fc) = taps(height), taps(width)
    top = pixels[r0][:, c0] * (1 - fc) + pixels[r0][:, c1] * fc
    bottom = pixels[r1][:, c0] * (1 - fc) + pixels[r1][:, c1] * fc
    return (top * (1 - fr[:, None]) + bottom * fr[:, None]).astype(np.float32)
