"""What a ViT attends to: attention weights per layer, mean attention distance, and attention rollout.

Weights come from the model itself: `MultiHeadAttention` sows its [batch, heads, q, k] softmax into
the 'intermediates' collection when that collection is mutable, so no model code is duplicated here.

Prefix tokens (the CLS token) have no place on the image grid. Both the distance and the CLS maps
therefore look only at patch tokens: the CLS query row and the CLS key column are dropped and each
remaining row is renormalised to sum to one ("where, among the patches, does this query look?").
Rollout keeps every token, since information reaching the CLS token through itself is part of the
flow it measures; only its final read-out is restricted to the patch keys (and renormalised).
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

ATTENTION_MODULE = "MultiHeadDotProductAttention_0"
WEIGHTS = "attention_weights"


# --- Collecting weights -------------------------------------------------------------------------

def encoder_attention(intermediates) -> list[np.ndarray]:
    """The encoder's attention weights, one [batch, heads, q, k] array per layer, first layer first.

    Reads unrolled blocks (`Transformer/encoderblock_{i}`) and a scanned stack (`Transformer/encoderblock`,
    whose sown weights carry a leading layer axis). Other attention modules (a MAP head's probe) are
    not encoder layers and are left out.
    """
    blocks = dict(intermediates.get("Transformer", {}))
    if "encoderblock" in blocks:  # nn.scan: one entry stacked over layers
        (stacked,) = blocks["encoderblock"][ATTENTION_MODULE][WEIGHTS]
        return [np.asarray(w) for w in stacked]
    numbered = sorted((int(name.rsplit("_", 1)[1]), block) for name, block in blocks.items()
                      if name.startswith("encoderblock_"))
    layers = []
    for _, block in numbered:
        (weights,) = block[ATTENTION_MODULE][WEIGHTS]
        layers.append(np.asarray(weights))
    return layers


@functools.lru_cache(maxsize=8)
def _jitted_apply(model):
    # Cached per (hashable, frozen) module so chunks of one run share one compilation.
    def apply(params, images):
        _, state = model.apply({"params": params}, images, mutable=["intermediates"])
        return state["intermediates"]
    return jax.jit(apply)


def attention_weights(model, params, images) -> list[np.ndarray]:
    """Runs `model` on `images` and returns its encoder attention, [batch, heads, q, k] per layer."""
    intermediates = _jitted_apply(model)(params, jnp.asarray(images, jnp.float32))
    layers = encoder_attention(jax.device_get(intermediates))
    if not layers:
        raise ValueError(f"{type(model).__name__} recorded no encoder attention weights; the attention "
                         f"analysis needs a ViT (Transformer/encoderblock_*)")
    return layers


# --- Geometry -----------------------------------------------------------------------------------

def patch_centres(grid: tuple[int, int], patch: int) -> np.ndarray:
    """[rows*cols, 2] pixel coordinates (y, x) of patch centres, row-major like the token order."""
    rows, cols = np.meshgrid(np.arange(grid[0]), np.arange(grid[1]), indexing="ij")
    return (np.stack([rows.ravel(), cols.ravel()], axis=1) + 0.5) * patch


def patch_distances(grid: tuple[int, int], patch: int) -> np.ndarray:
    """[N, N] Euclidean distances in pixels between patch centres."""
    centres = patch_centres(grid, patch)
    return np.linalg.norm(centres[:, None, :] - centres[None, :, :], axis=-1)


def to_pixels(maps: np.ndarray, patch: int) -> np.ndarray:
    """[..., rows, cols] -> [..., rows*patch, cols*patch]: each token becomes a patch x patch cell of
    its own value. Nearest-neighbour on purpose: a smooth (bilinear) upsampling would draw detail
    inside a patch that the attention, one number per token, does not have."""
    maps = np.asarray(maps)
    return np.repeat(np.repeat(maps, patch, axis=-2), patch, axis=-1)


def num_prefix_tokens(weights: np.ndarray, grid: tuple[int, int]) -> int:
    """Tokens before the patch grid (1 for a CLS token, 0 for 'gap'), read off the sequence length."""
    extra = weights.shape[-1] - grid[0] * grid[1]
    if extra < 0 or weights.shape[-2] != weights.shape[-1]:
        raise ValueError(f"attention of shape {weights.shape} does not fit a {grid[0]}x{grid[1]} patch grid")
    return extra


def patch_attention(weights: np.ndarray, num_prefix: int) -> np.ndarray:
    """[..., q, k] -> [..., N, N]: prefix queries and keys dropped, rows renormalised to sum to one."""
    patches = np.asarray(weights, np.float64)[..., num_prefix:, num_prefix:]
    total = patches.sum(axis=-1, keepdims=True)
    # A row can only be all zero if a query put all its weight on CLS; it then looks at no patch.
    return np.divide(patches, total, out=np.zeros_like(patches), where=total > 0)


# --- Mean attention distance (ViT paper Fig. 7 right) --------------------------------------------

def mean_attention_distance(weights: np.ndarray, grid: tuple[int, int], patch: int) -> np.ndarray:
    """[batch, heads, q, k] -> [batch, heads]: pixel distance to the keys, weighted by attention,
    averaged over query patches. The analogue of a CNN's receptive field size."""
    attention = patch_attention(weights, num_prefix_tokens(weights, grid))
    per_query = np.einsum("bhqk,qk->bhq", attention, patch_distances(grid, patch))
    return per_query.mean(axis=-1)


# --- Attention rollout (Abnar & Zuidema 2020) ----------------------------------------------------

def attention_rollout(layers: list[np.ndarray]) -> np.ndarray:
    """[batch, q, k]: how much each output token draws on each input token through all layers.

    Each layer's heads are averaged; the residual connection is modelled by adding the identity and
    renormalising rows, (A + I) / 2; the per-layer matrices are then multiplied, last layer leftmost.
    """
    rollout = None
    for weights in layers:
        mixed = np.asarray(weights, np.float64).mean(axis=1)
        mixed = mixed + np.eye(mixed.shape[-1])
        mixed = mixed / mixed.sum(axis=-1, keepdims=True)
        rollout = mixed if rollout is None else mixed @ rollout
    if rollout is None:
        raise ValueError("attention rollout needs at least one layer of attention weights")
    return rollout


def rollout_maps(layers: list[np.ndarray], grid: tuple[int, int]) -> np.ndarray:
    """[batch, rows, cols]: the CLS token's rollout over the patches (renormalised to sum to one).

    Without a CLS token (pool 'gap' or 'map' read all patch tokens), the average over the patch
    queries stands in for what reaches the classifier.
    """
    rollout = attention_rollout(layers)
    prefix = num_prefix_tokens(layers[0], grid)
    reads = rollout[:, 0, prefix:] if prefix else rollout.mean(axis=1)
    reads = reads / reads.sum(axis=-1, keepdims=True)
    return reads.reshape(-1, *grid)


def cls_maps(last_layer: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """[batch, heads, q, k] -> [batch, heads, rows, cols]: the CLS query's attention over patches,
    renormalised without the CLS key. Raises if the model has no CLS token."""
    prefix = num_prefix_tokens(last_layer, grid)
    if prefix == 0:
        raise ValueError("the model has no CLS token (pool is not 'tok'), so there is no CLS attention")
    row = np.asarray(last_layer, np.float64)[:, :, 0, prefix:]
    row = row / row.sum(axis=-1, keepdims=True)
    return row.reshape(*row.shape[:2], *grid)


# --- Over a set of images ------------------------------------------------------------------------

def chunk_size(model, grid: tuple[int, int], budget_bytes: int = 1 << 30) -> int:
    """Images per forward pass so that one pass's attention weights (every layer, float32) stay
    within `budget_bytes`: 16 for ViT-B/16 at 224, 2 for ViT-L/16 at 384."""
    size, _ = model.dims()
    tokens = grid[0] * grid[1] + 1
    per_image = size.depth * size.num_heads * tokens * tokens * 4
    return int(np.clip(budget_bytes // per_image, 1, 16))


def summarize(model, params, images: np.ndarray, grid: tuple[int, int], patch: int, *,
              num_show: int = 8, chunk: int | None = None) -> dict:
    """Attention statistics of `model` over `images`, `chunk` images a pass (default: chunk_size)
    so that the weights of a large model never sit in memory all at once.

    Returns 'distance' [layers, heads] (pixels, mean over images and query patches), 'rollout'
    [num_show, rows, cols], and 'cls' [images, heads, rows, cols] (every image: the segmentation
    read-out scores them all; figures draw the first num_show) or None without a CLS token.
    """
    chunk = chunk or chunk_size(model, grid)
    num_show = max(1, num_show)
    params = jax.device_put(params)  # once, not with every chunk
    distances, rollouts, cls = [], [], []
    has_cls = True
    for start in range(0, len(images), chunk):
        layers = attention_weights(model, params, images[start:start + chunk])
        distances.append(np.stack([mean_attention_distance(w, grid, patch) for w in layers], axis=1))
        has_cls = num_prefix_tokens(layers[-1], grid) > 0
        if has_cls:
            cls.append(cls_maps(layers[-1], grid))
        show = max(0, num_show - start)
        if show:
            rollouts.append(rollout_maps([w[:show] for w in layers], grid))
    per_image = np.concatenate(distances)  # [images, layers, heads]
    return {
        "distance": per_image.mean(axis=0),
        "rollout": np.concatenate(rollouts),
        "cls": np.concatenate(cls) if has_cls else None,
        "num_images": len(images),
    }
