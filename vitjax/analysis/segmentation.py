"""Does a ViT's CLS attention pick out the object? The DINO paper's test of its emergent-segmentation
claim (Caron et al. 2021, Sec. 4.2.1 and Table 7), made measurable on images without mask annotations.

For each image and each head of the last layer, keep the smallest set of patches that holds `mass`
(0.6, the paper's threshold) of the CLS query's attention over the patches, and score it against the
object's patches by the Jaccard index |A n B| / |A u B|. The object's patches are read off the image
where the object lies on a uniform background, as Fashion-MNIST's garments do on exact black: a pixel
is object when it is brighter than the image's darkest value by more than `pixel_threshold` of the
image's range (averaged over channels), and a patch is object when more than half of its pixels are.
On natural images that rule means nothing; pass real masks to `jaccard` instead.

Two references say what a score means: the same model at initialisation (vitjax/analysis/control.py),
and `permuted_jaccard`, the same masks placed at random (each mask's patch count kept, its positions
shuffled): a head whose mask beats its permuted self looks at where the object is, not only at how much
of the image it covers.
"""
import numpy as np

MASS = 0.6  # attention mass kept per head (DINO's visualisation and Jaccard threshold)
PIXEL_THRESHOLD = 0.1  # of the image's range above its darkest value: an object pixel
PERMUTATIONS, PERMUTATION_SEED = 20, 0


def object_patches(images: np.ndarray, grid: tuple[int, int], patch: int, *,
                   pixel_threshold: float = PIXEL_THRESHOLD) -> np.ndarray:
    """[n, H, W, C] -> [n, rows, cols] bool: the patches more than half of whose pixels are object."""
    images = np.asarray(images, np.float64).mean(axis=-1)[:, :grid[0] * patch, :grid[1] * patch]
    low = images.min(axis=(1, 2), keepdims=True)
    span = images.max(axis=(1, 2), keepdims=True) - low
    bright = images > low + pixel_threshold * span
    cells = bright.reshape(len(images), grid[0], patch, grid[1], patch)
    return cells.mean(axis=(2, 4)) > 0.5


def mass_masks(maps: np.ndarray, mass: float = MASS) -> np.ndarray:
    """[..., rows, cols] attention (each map sums to one) -> bool masks of the same shape: the fewest
    patches, largest first, whose attention adds up to at least `mass` (ties broken by position)."""
    maps = np.asarray(maps, np.float64)
    flat = maps.reshape(-1, maps.shape[-2] * maps.shape[-1])
    order = np.argsort(-flat, axis=1, kind="stable")
    ranked = np.take_along_axis(flat, order, axis=1)
    before = np.cumsum(ranked, axis=1) - ranked  # mass of the patches ranked above each one
    keep_ranked = before < mass * ranked.sum(axis=1, keepdims=True)
    keep = np.zeros_like(keep_ranked)
    np.put_along_axis(keep, order, keep_ranked, axis=1)
    return keep.reshape(maps.shape)


def jaccard(masks: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """|A n B| / |A u B| over the last two axes; `truth` broadcasts against `masks` (e.g. [n, 1, r, c]
    against [n, heads, r, c]). Two empty masks score 1."""
    masks, truth = np.asarray(masks, bool), np.asarray(truth, bool)
    inter = np.logical_and(masks, truth).sum(axis=(-2, -1))
    union = np.logical_or(masks, truth).sum(axis=(-2, -1))
    return np.divide(inter, union, out=np.ones(np.broadcast(inter, union).shape), where=union > 0)


def permuted_jaccard(masks: np.ndarray, truth: np.ndarray, *, draws: int = PERMUTATIONS,
                     seed: int = PERMUTATION_SEED) -> np.ndarray:
    """`jaccard` of each mask with its patches shuffled over the grid, averaged over `draws` shuffles:
    the score a mask of that size gets at positions unrelated to the image."""
    masks = np.asarray(masks, bool)
    rng = np.random.default_rng(seed)
    flat = masks.reshape(-1, masks.shape[-2] * masks.shape[-1])
    total = np.zeros(masks.shape[:-2])
    for _ in range(draws):
        shuffled = rng.permuted(flat, axis=1).reshape(masks.shape)
        total += jaccard(shuffled, truth)
    return total / draws


def score(cls_maps: np.ndarray, images: np.ndarray, grid: tuple[int, int], patch: int, *,
          mass: float = MASS) -> dict:
    """The read-out for one model: `cls_maps` [n, heads, rows, cols] (attention.cls_maps) of `images`.

    Returns per-head means over the images ('per_head' Jaccard and 'per_head_permuted'), their mean
    over heads ('mean', 'mean_permuted') with the standard error over images ('mean_se'), each image's
    mean over heads ('per_image', 'per_image_permuted': for differences paired by image), the best
    head's ('best_head' index from 0, 'best'), and the object's share of the patches and the masks'
    ('object_share', 'mask_share')."""
    truth = object_patches(images, grid, patch)[:, None]
    masks = mass_masks(cls_maps, mass)
    scores, permuted = jaccard(masks, truth), permuted_jaccard(masks, truth)  # [images, heads]
    per_head, per_image = scores.mean(axis=0), scores.mean(axis=1)
    best = int(np.argmax(per_head))
    se = float(per_image.std(ddof=1) / np.sqrt(len(per_image))) if len(per_image) > 1 else float("nan")
    return {"per_head": per_head, "per_head_permuted": permuted.mean(axis=0), "mean": float(per_head.mean()),
            "mean_permuted": float(permuted.mean()), "mean_se": se, "per_image": per_image,
            "per_image_permuted": permuted.mean(axis=1), "best_head": best, "best": float(per_head[best]),
            "object_share": float(truth.mean()), "mask_share": float(masks.mean())}
