"""Image-caption pairs made here (issue 40 item 5): grey items (Fashion-MNIST's, or the synthetic patterns)
tinted, scaled and placed on a black canvas, each with a caption that says so:

    "a small red sneaker at the top left"        "a large blue ankle boot in the centre"

    images, labels = make_split(base_images, base_labels, "train", seed=0, canvas=48)   # uint8 [N, 48, 48, 3]
    captions()[labels[i]]                                                               # pair i's caption

`data.name = "captions"` (data.captions: base, seed, canvas, num_train, num_test) makes these the train
and test splits of a run (vitjax/data/sources.py). Pair i of a split is drawn from item i of the base
split and a key of (seed, split) alone, so it is the same whatever else the run takes: same seed, same
pairs, at every size of num_train.

A pair's label is its composition's id: (item, colour, size, position), 10 x 4 x 2 x 5 = 400 of them,
one caption each. So the pipeline carries captions as integer labels (exact resume and padded
evaluation batches come for free) and the objective turns labels into tokens with one table
(vitjax/objectives/contrastive_objective.py). Held out: one colour per item (`held_out`: colour index
= item index mod 4, e.g. no yellow sneaker), 10 of the 40 colour-item pairs, never drawn for training
pairs and drawn as often as the others for test pairs, so zero-shot classification of colour-item pairs
(vitjax/evaluate/caption_evals.py) can be scored on compositions the model never saw.

Drawing: the item's grey level times the colour's RGB (pure red, green, blue, yellow: the named
channels carry the item, the others stay 0); 'large' keeps the item's size, 'small' halves it (2x2
means); the position puts the item's box flush with the named corner or centred, moved by up to
JITTER pixels each way (kept on the canvas), so no two pairs of a composition sit at exactly the same
place. Rendering 20,000 pairs at 48x48 takes about a second.
"""
import numpy as np

ITEMS = ("t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle boot")
COLOURS = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255), "yellow": (255, 255, 0)}
SIZES = ("small", "large")
# Where the item's box goes, as (row, column) fractions of the free space, and how a caption says it.
POSITIONS = {"top left": ((0.0, 0.0), "at the top left"), "top right": ((0.0, 1.0), "at the top right"),
             "centre": ((0.5, 0.5), "in the centre"), "bottom left": ((1.0, 0.0), "at the bottom left"),
             "bottom right": ((1.0, 1.0), "at the bottom right")}
JITTER = 2
COLOUR_NAMES = tuple(COLOURS)
POSITION_NAMES = tuple(POSITIONS)
NUM_COMPOSITIONS = len(ITEMS) * len(COLOURS) * len(SIZES) * len(POSITIONS)
_SPLIT_TAGS = {"train": 11, "test": 12}  # apart from the synthetic source's tags, which may share the seed


def held_out(item, colour):
    """Whether the colour-item pair (indices, or arrays of them) is kept out of training pairs."""
    return np.asarray(colour) == np.asarray(item) % len(COLOURS)


def composition_id(item, colour, size, position):
    """The label of a composition (indices, or arrays of them)."""
    return ((np.asarray(item) * len(COLOURS) + colour) * len(SIZES) + size) * len(POSITIONS) + position


def attributes(ids):
    """(item, colour, size, position) indices of composition ids: `composition_id`'s inverse."""
    rest, position = np.divmod(np.asarray(ids), len(POSITIONS))
    rest, size = np.divmod(rest, len(SIZES))
    item, colour = np.divmod(rest, len(COLOURS))
    return item, colour, size, position


def caption(ids) -> str:
    """The caption of one composition id."""
    item, colour, size, position = (int(a) for a in attributes(ids))
    return f"a {SIZES[size]} {COLOUR_NAMES[colour]} {ITEMS[item]} {POSITIONS[POSITION_NAMES[position]][1]}"


def captions() -> list[str]:
    """Every composition's caption, indexed by its id (held-out ones too: test pairs have them)."""
    return [caption(i) for i in range(NUM_COMPOSITIONS)]


def colour_item_pairs() -> list[dict]:
    """The zero-shot classes: each colour-item pair as template fields, indexed by item * 4 + colour."""
    return [{"colour": colour, "item": item} for item in ITEMS for colour in COLOUR_NAMES]


def colour_item_pair(ids):
    """The zero-shot class (`colour_item_pairs`' index) of composition ids."""
    item, colour, _, _ = attributes(ids)
    return item * len(COLOURS) + colour


def make_split(base_images, base_labels, split: str, *, seed: int, canvas: int, size=None):
    """(uint8 images [n, canvas, canvas, 3], int64 composition ids [n]): the first n (`size`; None: all)
    pairs of `split` ('train' or 'test'), item i of the base split (uint8 [N, h, w, C] any channels,
    labels 0..9) drawn as pair i. See the module docstring."""
    if split not in _SPLIT_TAGS:
        raise ValueError(f"caption pairs come in splits 'train' and 'test', not {split!r}")
    items = np.asarray(base_labels).astype(np.int64)
    height, width = np.shape(base_images)[1:3]
    if max(height, width) > canvas:
        raise ValueError(f"items of {height}x{width} pixels do not fit a canvas of {canvas}: set "
                         f"data.captions.canvas >= {max(height, width)}")
    if len(items) and (items.min() < 0 or items.max() >= len(ITEMS)):
        raise ValueError(f"caption items are labelled 0..{len(ITEMS) - 1} ({', '.join(ITEMS)}); the base split "
                         f"has labels {items.min()}..{items.max()}")
    colour, size_index, position, jitter = _draw(items, split, seed)
    n = len(items) if size is None else min(int(size), len(items))
    grey = np.asarray(base_images[:n], np.float32).mean(axis=-1)
    images = np.zeros((n, canvas, canvas, 3), np.uint8)
    for i in range(n):
        images[i] = _render(grey[i], colour[i], size_index[i], position[i], jitter[i], canvas)
    return images, composition_id(items[:n], colour[:n], size_index[:n], position[:n]).astype(np.int64)


def _draw(items, split: str, seed: int):
    """Each pair's colour, size, position and jitter, from one key of (seed, split) over the whole base
    split: pair i's draws do not depend on how many pairs are taken."""
    rng = np.random.default_rng([seed, _SPLIT_TAGS[split]])
    n = len(items)
    uniform, size, position = rng.random(n), rng.integers(0, len(SIZES), n), rng.integers(0, len(POSITIONS), n)
    jitter = rng.integers(-JITTER, JITTER + 1, (n, 2))
    if split == "test":
        colour = (uniform * len(COLOURS)).astype(np.int64)
    else:  # one of the item's seen colours, each as likely
        allowed = np.array([[c for c in range(len(COLOURS)) if not held_out(k, c)] for k in range(len(ITEMS))])
        colour = allowed[items, (uniform * allowed.shape[1]).astype(np.int64)]
    return colour, size, position, jitter


def _render(grey, colour: int, size: int, position: int, jitter, canvas: int):
    """One uint8 [canvas, canvas, 3] image: the grey item [h, w] tinted, scaled and placed."""
    if SIZES[size] == "small":
        h, w = grey.shape[0] // 2 * 2, grey.shape[1] // 2 * 2
        grey = grey[:h, :w].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
    h, w = grey.shape
    (row_fraction, col_fraction), _ = POSITIONS[POSITION_NAMES[position]]
    top = int(np.clip(round(row_fraction * (canvas - h)) + jitter[0], 0, canvas - h))
    left = int(np.clip(round(col_fraction * (canvas - w)) + jitter[1], 0, canvas - w))
    image = np.zeros((canvas, canvas, 3), np.uint8)
    rgb = np.asarray(COLOURS[COLOUR_NAMES[colour]], np.float32) / 255
    image[top:top + h, left:left + w] = np.round(grey[..., None] * rgb).astype(np.uint8)
    return image
