"""The Swin Transformer (Liu et al. 2021): a hierarchical ViT whose attention stays inside local windows.

The image is cut into PxP patches, embedded and normalised. Stages follow, each at half the resolution
and twice the width of the one before: from the second stage on, a patch merging layer concatenates
each 2x2 neighbourhood (4C channels), normalises it and projects it to 2C. Inside a stage, blocks
attend within non-overlapping WxW windows, every other block with the windows shifted by W/2 (a
cyclic roll of the map, a mask that keeps the regions the roll brought together apart, the roll
undone), so information crosses window borders from one block to the next. Attention adds a learned
bias per head and relative offset, read from a table of (2W-1)^2 rows by a constant index. A final
norm, the mean over positions and a linear head make the classifier.

    model = Swin(num_classes=1000, variant="T")      # Swin-T/4, window 7, at 224x224
    vitjax train --config configs/fashion_mnist/swin.py --workdir runs/swin

Parameters, shapes and order of operations follow timm's `SwinTransformer` (1.0), so its weights load
(vitjax/interop/timm_swin.py) and give its logits: LayerNorm with eps 1e-5, patch merging at the start
of stages 2..n, the shift mask's -100 added to the scores. Where a stage's resolution is no larger than
the window, the window shrinks to the resolution and the shift is off, as in timm and the official code.
Unlike timm, sizes that would need padding (a resolution the window does not divide, an odd one before
patch merging) are refused with the sizes that work.
"""
import dataclasses
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from vitjax.models.attention import HeadsMerge, HeadsProjection, check_heads, fused_projections
from vitjax.models.layernorm import LayerNorm
from vitjax.models.transformer import DropPath, MlpBlock
from vitjax.models.vit import PatchEmbedding

MASKED = -100.0  # added to the scores of pairs the shift mask separates, as the reference does
EPSILON = 1e-5  # torch's LayerNorm default, which Swin's releases use


def on_rows(fn, x, kept: int = 1):
    """`fn` applied to x viewed as rows [-1, *x.shape[-kept:]], each output viewed back with x's leading axes.

    Swin's projections act on [b, windows, n, c] (patch merging on [b, H, W, 4c]); their weight gradients
    contract over all the leading axes, and XLA:CPU first copies the activations into a transposed layout
    for that, where a product over one row axis it takes as it lies. On rows, the Swin-T train step
    (224, batch 8) copies ~390 MB less and ran 1.08x faster (experiments/results/bench/README.md,
    "Swin's products on rows"). The views are free; the maths is unchanged.
    """
    lead = x.shape[:-kept]
    out = fn(x.reshape(-1, *x.shape[-kept:]))
    if isinstance(out, (list, tuple)):
        return [y.reshape(*lead, *y.shape[1:]) for y in out]
    return out.reshape(*lead, *out.shape[1:])


@dataclasses.dataclass(frozen=True)
class Size:
    embed_dim: int
    depths: tuple[int, ...]
    num_heads: tuple[int, ...]


# Swin paper Table 7 (patch 4, window 7 at 224x224).
SIZES = {
    "T": Size(96, (2, 2, 6, 2), (3, 6, 12, 24)),
    "S": Size(96, (2, 2, 18, 2), (3, 6, 12, 24)),
    "B": Size(128, (2, 2, 18, 2), (4, 8, 16, 32)),
    "L": Size(192, (2, 2, 18, 2), (6, 12, 24, 48)),
}


@dataclasses.dataclass(frozen=True)
class StagePlan:
    """One stage at one input size: its map's (height, width), window and shift, per axis."""
    resolution: tuple[int, int]
    window: tuple[int, int]
    shift: tuple[int, int]


def _norm(name, dtype, param_dtype):
    return LayerNorm(epsilon=EPSILON, dtype=dtype, param_dtype=param_dtype, name=name)


def relative_position_index(window_h: int, window_w: int) -> np.ndarray:
    """[n, n] ints, n = window_h * window_w: the bias-table row of each (query, key) pair of a window.

    The offset (dy, dx) = query - key, shifted to start at 0, in row-major order over the
    (2 window_h - 1) x (2 window_w - 1) possible offsets. A constant, not a parameter.
    """
    rows, cols = np.meshgrid(np.arange(window_h), np.arange(window_w), indexing="ij")
    rows, cols = rows.reshape(-1), cols.reshape(-1)
    dy = rows[:, None] - rows[None, :] + window_h - 1
    dx = cols[:, None] - cols[None, :] + window_w - 1
    return dy * (2 * window_w - 1) + dx


def window_partition(x, window):
    """[b, H, W, c] -> [b, windows, window_h * window_w, c], windows and their pixels in row-major order."""
    batch, height, width, channels = x.shape
    wh, ww = window
    x = x.reshape(batch, height // wh, wh, width // ww, ww, channels).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(batch, (height // wh) * (width // ww), wh * ww, channels)


def window_merge(windows, window, height: int, width: int):
    """The inverse of `window_partition`: [b, windows, window_h * window_w, c] -> [b, H, W, c]."""
    batch, channels = windows.shape[0], windows.shape[-1]
    wh, ww = window
    x = windows.reshape(batch, height // wh, width // ww, wh, ww, channels).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(batch, height, width, channels)


def to_windows(x, window, shift):
    """[b, H, W, c] -> the windows of a block with this `shift`: the map rolled back by it, partitioned."""
    if any(shift):
        x = jnp.roll(x, (-shift[0], -shift[1]), axis=(1, 2))
    return window_partition(x, window)


def from_windows(windows, window, shift, height: int, width: int):
    """The inverse of `to_windows`: the windows merged into the map, the roll undone."""
    x = window_merge(windows, window, height, width)
    return jnp.roll(x, shift, axis=(1, 2)) if any(shift) else x


def shift_mask(resolution, window, shift) -> np.ndarray:
    """[windows, n, n] float32 added to the scores of a shifted block: 0 where query and key lie in the
    same region of the rolled map, MASKED where the roll brought them together from opposite edges.

    Along each axis the rolled map has three regions: [0, size - window), [size - window, size - shift)
    and [size - shift, size); a window may straddle the last two, which were not neighbours before.
    """
    labels = np.zeros(resolution, np.int32)
    regions = [(slice(0, size - w), slice(size - w, size - s), slice(size - s, size))
               for size, w, s in zip(resolution, window, shift)]
    for i, rows in enumerate(regions[0]):
        for j, cols in enumerate(regions[1]):
            labels[rows, cols] = 3 * i + j
    labels = window_partition(labels[None, :, :, None], window)[0, :, :, 0]  # [windows, n]
    return np.where(labels[:, :, None] == labels[:, None, :], 0.0, MASKED).astype(np.float32)


class WindowAttention(nn.Module):
    """Multi-head self-attention inside each window, with a learned relative-position bias: the windows
    of a block (`to_windows` of its map, at its `shift`) [b, windows, n, c] -> [b, windows, n, c]. A
    shift masks the pairs the cyclic roll brought together from opposite edges of the map, whose
    `resolution` (H, W) it needs.

    The projections are the ViT's (`query`, `key`, `value` kernels [c, heads, head_dim], `out`
    [heads, head_dim, c]), so its logical axis names apply; the bias table is
    [(2 window_h - 1)(2 window_w - 1), heads]. Windows stay an axis of their own rather than being
    folded into the batch, so the per-window mask and per-head bias broadcast over the batch instead
    of being tiled to it.
    """
    num_heads: int
    window: tuple[int, int]
    shift: tuple[int, int] = (0, 0)
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    def _bias(self):
        """[heads, n, n]: the table's row for each (query, key) offset."""
        wh, ww = self.window
        table = self.param("relative_position_bias_table", nn.with_logical_partitioning(
            nn.initializers.truncated_normal(0.02), (None, "heads")),
            ((2 * wh - 1) * (2 * ww - 1), self.num_heads), self.param_dtype)
        return jnp.take(table, relative_position_index(wh, ww), axis=0).transpose(2, 0, 1)

    @nn.compact
    def __call__(self, windows, resolution):
        channels = windows.shape[-1]
        check_heads(channels, self.num_heads)
        head_dim = channels // self.num_heads
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        projections = [HeadsProjection(self.num_heads, head_dim, name=name, **dtypes)
                       for name in ("query", "key", "value")]
        # [b, windows, n, heads, head_dim] each
        query, key, value = on_rows(lambda rows: fused_projections(rows, projections, self.dtype), windows)
        scores = jnp.einsum("bwqhd,bwkhd->bwhqk", query, key, preferred_element_type=jnp.float32)
        scores = scores * head_dim ** -0.5 + self._bias().astype(jnp.float32)
        if any(self.shift):  # [windows, 1, n, n]: the same for every head
            scores = scores + jnp.asarray(shift_mask(tuple(resolution), self.window, self.shift))[:, None]
        weights = jax.nn.softmax(scores, axis=-1)
        y = jnp.einsum("bwhqk,bwkhd->bwqhd", weights.astype(value.dtype), value)
        return on_rows(HeadsMerge(channels, name="out", **dtypes), y, kept=2)


class SwinBlock(nn.Module):
    """Pre-norm (shifted-)window attention and MLP, each a residual branch with stochastic depth.

    Its input and output are the windows of its own `shift` ([b, windows, n, c], `to_windows`): the
    norms and the MLP act on each token alone, so the block never needs the map's own layout (the stage
    moves tokens between two blocks' windows once, rather than each block partitioning and merging).
    A shift of (0, 0) gives regular windows.
    """
    num_heads: int
    window: tuple[int, int]
    shift: tuple[int, int]
    mlp_dim: int
    dropout_rate: float = 0.0
    deterministic: bool = True
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, windows, resolution, droppath_rate=0.0):
        batch, count, tokens, channels = windows.shape
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        y = _norm("LayerNorm_0", **dtypes)(windows)
        y = WindowAttention(self.num_heads, self.window, self.shift, name="attention", **dtypes)(y, resolution)
        y = nn.Dropout(self.dropout_rate)(y, deterministic=self.deterministic)
        x = windows + DropPath(self.deterministic)(y, droppath_rate)
        # As a sequence of tokens, the MLP's activations carry the ViT's logical names.
        x = nn.with_logical_constraint(x.reshape(batch, count * tokens, channels), ("batch", "length", "embed"))
        y = on_rows(MlpBlock(self.mlp_dim, self.dropout_rate, self.deterministic, name="MlpBlock_0", **dtypes),
                    _norm("LayerNorm_1", **dtypes)(x))
        x = x + DropPath(self.deterministic)(y, droppath_rate)
        return x.reshape(batch, count, tokens, channels)


def merge_neighbours(x):
    """[b, H, W, c] -> [b, H/2, W/2, 4c]: each 2x2 neighbourhood's channels concatenated in the
    reference's order x0 = (row 0, col 0), x1 = (1, 0), x2 = (0, 1), x3 = (1, 1)."""
    batch, height, width, channels = x.shape
    # [b, H/2, row, W/2, col, c] -> [b, H/2, W/2, col, row, c]: the column offset major, as x0..x3 are.
    x = x.reshape(batch, height // 2, 2, width // 2, 2, channels).transpose(0, 1, 3, 4, 2, 5)
    return x.reshape(batch, height // 2, width // 2, 4 * channels)


class PatchMerging(nn.Module):
    """[b, H, W, c] -> [b, H/2, W/2, 2c]: each 2x2 neighbourhood concatenated (`merge_neighbours`, in
    the reference's order, so its weights apply), LayerNorm, Linear 4c -> 2c without bias.

    The reduction is a 2x2 stride-2 convolution flattened, hence its kernel's logical names: 'conv_in',
    and 'embed' for the next stage's width.
    """
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        channels = x.shape[-1]
        x = _norm("norm", self.dtype, self.param_dtype)(merge_neighbours(x))
        reduction = nn.Dense(2 * channels, use_bias=False, dtype=self.dtype, param_dtype=self.param_dtype,
                             kernel_init=nn.with_logical_partitioning(nn.initializers.xavier_uniform(),
                                                                      ("conv_in", "embed")), name="reduction")
        return on_rows(reduction, x)


class SwinStage(nn.Module):
    """Patch merging (every stage but the first) and `len(droppath_rates)` blocks, regular and shifted
    windows in turn. [b, H, W, c] -> [b, H', W', c']; between its blocks the tokens stay in the windows'
    layout, moved once where the shift changes (a step 1.03x faster than partitioning and merging in
    every block, at the noise's edge: experiments/results/bench/README.md, "Swin's windows kept per stage")."""
    num_heads: int
    plan: StagePlan
    mlp_ratio: float
    downsample: bool
    droppath_rates: tuple[float, ...]
    dropout_rate: float = 0.0
    deterministic: bool = True
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        if self.downsample:
            x = PatchMerging(name="downsample", **dtypes)(x)
        mlp_dim = int(x.shape[-1] * self.mlp_ratio)
        height, width, window = x.shape[1], x.shape[2], self.plan.window
        shift = (0, 0)
        windows = to_windows(x, window, shift)
        for j, rate in enumerate(self.droppath_rates):
            block_shift = tuple(self.plan.shift) if j % 2 else (0, 0)
            if block_shift != shift:  # from the last block's windows to this one's, one move per shift change
                windows = to_windows(from_windows(windows, window, shift, height, width), window, block_shift)
                shift = block_shift
            windows = SwinBlock(self.num_heads, window, shift, mlp_dim, self.dropout_rate, self.deterministic,
                                name=f"block_{j}", **dtypes)(windows, (height, width), rate)
        return from_windows(windows, window, shift, height, width)


def _axis_plan(size: int, patch: int, window: int, stages: int) -> list[tuple[int, int, int]] | None:
    """[(resolution, window, shift)] of each stage along one image axis, or None where `size` needs
    padding: not a multiple of the patch, an odd resolution before merging, or one the window does not
    divide while larger than it."""
    if size % patch:
        return None
    resolution, plan = size // patch, []
    for i in range(stages):
        if i > 0:
            if resolution % 2:
                return None
            resolution //= 2
        if resolution <= window:
            plan.append((resolution, resolution, 0))
        elif resolution % window:
            return None
        else:
            plan.append((resolution, window, window // 2))
    return plan


def valid_sizes(size: int, patch: int, window: int, stages: int, count: int = 4) -> list[int]:
    """Up to `count` image sides below `size` and `count` above it that need no padding."""
    valid = lambda s: _axis_plan(s, patch, window, stages) is not None  # noqa: E731
    below = [s for s in range(patch, size + 1, patch) if valid(s)][-count:]
    # Every multiple of patch * window * 2^(stages - 1) is valid, so `count` of them lie below the limit.
    limit = size + count * patch * window * 2 ** (stages - 1)
    above = [s for s in range((size // patch + 1) * patch, limit + 1, patch) if valid(s)][:count]
    return below + above


class Swin(nn.Module):
    """Swin classifier. `Swin(num_classes=1000, variant="T")` for Swin-T ("S", "B", "L" likewise); every
    dimension can be overridden (`patch_size`, `window_size`, `embed_dim`, `depths`, `num_heads` per
    stage, `mlp_ratio`), or all of the last three given with `variant=None`.

    `droppath_rate`: stochastic depth, growing linearly over all blocks from 0 to this rate (timm's and
    the official schedule); off when `train` is False. `dropout_rate`: after the attention and in the
    MLP. The head is zero-initialised by default, as the ViT's, so training starts from uniform
    predictions.
    """
    num_classes: int
    variant: str | None = "T"
    patch_size: int = 4
    window_size: int = 7
    embed_dim: int | None = None
    depths: tuple[int, ...] | None = None
    num_heads: tuple[int, ...] | None = None
    mlp_ratio: float = 4.0
    dropout_rate: float = 0.0
    droppath_rate: float = 0.0
    head_zero_init: bool = True
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    def dims(self) -> Size:
        """The resolved Size: the variant's, with explicit overrides applied."""
        if self.variant is not None:
            if self.variant not in SIZES:
                raise ValueError(f"unknown Swin variant {self.variant!r}; choose one of {list(SIZES)}, or "
                                 f"variant=None with embed_dim, depths and num_heads")
            size = SIZES[self.variant]
        else:
            missing = [f for f in ("embed_dim", "depths", "num_heads") if getattr(self, f) is None]
            if missing:
                raise ValueError(f"Swin without a variant needs {missing}; pass them or variant='T' etc.")
            size = Size(0, (), ())
        size = Size(self.embed_dim or size.embed_dim, tuple(self.depths or size.depths),
                    tuple(self.num_heads or size.num_heads))
        if len(size.depths) != len(size.num_heads) or not size.depths:
            raise ValueError(f"Swin needs one depth and one head count per stage; got depths={size.depths} "
                             f"and num_heads={size.num_heads}")
        return size

    def stages(self, height: int, width: int) -> list[StagePlan]:
        """Each stage's resolution, window and shift for `height` x `width` images; ValueError naming
        the sizes that work where these would need padding."""
        size = self.dims()
        if self.patch_size <= 0 or self.window_size <= 0:
            raise ValueError(f"Swin needs a positive patch_size and window_size; got {self.patch_size} and "
                             f"{self.window_size}")
        plans = []
        for side, name in ((height, "height"), (width, "width")):
            plan = _axis_plan(side, self.patch_size, self.window_size, len(size.depths))
            if plan is None:
                sizes = valid_sizes(side, self.patch_size, self.window_size, len(size.depths))
                raise ValueError(
                    f"image {name} {side} does not fit Swin with patch_size={self.patch_size}, "
                    f"window_size={self.window_size} and {len(size.depths)} stages: it must be a multiple of "
                    f"the patch size, halve evenly before each patch merging, and at each stage be no larger "
                    f"than the window or a multiple of it. Valid sizes near {side}: {sizes}")
            plans.append(plan)
        return [StagePlan((rh, rw), (wh, ww), (sh, sw)) for (rh, wh, sh), (rw, ww, sw) in zip(*plans)]

    def check_input_shape(self, image_shape) -> None:
        """Raises ValueError for inputs this configuration cannot take (no compilation needed)."""
        size = self.dims()
        for i, heads in enumerate(size.num_heads):
            check_heads(size.embed_dim * 2 ** i, heads)
        if len(image_shape) != 3:
            raise ValueError(f"images must be [batch, height, width, channels]; got a single image "
                             f"shape of rank {len(image_shape)}: {tuple(image_shape)}")
        self.stages(*image_shape[:2])

    @nn.compact
    def __call__(self, images, *, train=False):
        self.check_input_shape(images.shape[1:])
        size = self.dims()
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        x = PatchEmbedding(size.embed_dim, self.patch_size, name="embedding", **dtypes)(images.astype(self.dtype))
        x = _norm("embedding_norm", **dtypes)(x)
        rates = np.linspace(0.0, self.droppath_rate, sum(size.depths)).tolist()
        first = np.cumsum((0,) + size.depths)
        for i, plan in enumerate(self.stages(*images.shape[1:3])):
            x = SwinStage(size.num_heads[i], plan, self.mlp_ratio, i > 0, tuple(rates[first[i]:first[i + 1]]),
                          self.dropout_rate, not train, name=f"stage_{i}", **dtypes)(x)
        x = jnp.mean(_norm("norm", **dtypes)(x), axis=(1, 2))
        self.sow("intermediates", "pre_logits", x)
        head_init = nn.initializers.zeros if self.head_zero_init else nn.initializers.lecun_normal()
        logits = nn.Dense(self.num_classes, kernel_init=head_init, name="head", **dtypes)(x)
        return logits.astype(jnp.float32)
