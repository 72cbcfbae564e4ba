"""SAM's image encoder (Kirillov et al. 2023): a plain ViT made for 1024x1024 inputs, after ViTDet.

16x16 patches are embedded and given a learned absolute position embedding on the 64x64 grid. Most blocks
attend only inside non-overlapping 14x14 windows (the grid is zero-padded to a multiple of the window
after the block's norm, and the padded tokens are keys like any other, as in the reference); a few blocks
(`global_attn_indexes`, every quarter of the depth) attend over the whole grid. Every attention adds
decomposed relative-position terms: for query q at (row y, column x) and key at (y', x'),
q . R_h[y - y'] + q . R_w[x - x'], with R_h and R_w learned tables of 2 S - 1 rows (S: the window, or the
grid for global blocks) shared by the heads. A neck of a 1x1 convolution, a channel LayerNorm, a 3x3
convolution and another channel LayerNorm, neither convolution with a bias, maps the grid to 256 channels.

    encoder = ImageEncoder(width=768, depth=12, num_heads=12, global_attn_indexes=(2, 5, 8, 11))
    embeddings = encoder.apply({"params": params}, images)   # [b, 1024, 1024, 3] -> [b, 64, 64, 256]

Arrays are NHWC here (the reference is NCHW). vitjax/models/sam.py assembles the whole model.
"""
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from vitjax.models.attention import HeadsMerge, fused_projections, qkv_projections
from vitjax.models.layernorm import LayerNorm
from vitjax.models.swin import window_merge, window_partition
from vitjax.models.transformer import MlpBlock
from vitjax.models.vit import PatchEmbedding

EPSILON = 1e-6  # the reference's LayerNorm (blocks) and LayerNorm2d (neck) both use 1e-6


def relative_index(size: int) -> np.ndarray:
    """[size, size] ints: the table row i - j + size - 1 of query position i and key position j."""
    positions = np.arange(size)
    return positions[:, None] - positions[None, :] + size - 1


def relative_position_attention(query, key, value, rel_pos_h, rel_pos_w, grid: tuple[int, int]):
    """Attention over a [rows, cols] grid with decomposed relative-position terms, one head at a time.

    query, key, value [b, rows*cols, heads, head_dim] -> [b, rows*cols, heads, head_dim]. The score of
    query q at (y, x) and key k at (y', x') is q . k / sqrt(head_dim) + q . R_h[y - y'] + q . R_w[x - x'],
    with q unscaled in the two terms as in the reference; `rel_pos_h` [2 rows - 1, head_dim] and
    `rel_pos_w` [2 cols - 1, head_dim]. The terms are computed per axis (a [.., rows] and a [.., cols]
    array per query) and only broadcast to every key inside the scores' sum: that is what makes them
    cheap ("decomposed") next to a full 2-D table. The heads are computed one by one because a global
    block's scores are [heads, 4096, 4096] at 1024x1024: XLA then keeps one head's 64 MB of scores
    alive at a time instead of all twelve's 805 MB, and the encoder runs ~1.18x faster on CPU
    (experiments/results/bench/README.md, SAM section). The loop is unrolled, not a `lax.map`: XLA's
    cost analysis counts a loop's body once, which would undercount the FLOPs that MFU is measured by.
    """
    rows, cols = grid
    batch, length, _, head_dim = query.shape
    by_row = jnp.take(rel_pos_h, relative_index(rows), axis=0).astype(query.dtype)  # [rows, rows', d]
    by_col = jnp.take(rel_pos_w, relative_index(cols), axis=0).astype(query.dtype)  # [cols, cols', d]
    f32 = dict(preferred_element_type=jnp.float32)

    def one_head(q, k, v):  # [b, rows*cols, head_dim] each
        on_grid = q.reshape(batch, rows, cols, head_dim)
        term_h = jnp.einsum("byxd,ykd->byxk", on_grid, by_row, **f32)
        term_w = jnp.einsum("byxd,xkd->byxk", on_grid, by_col, **f32)
        scores = jnp.einsum("bqd,bkd->bqk", q, k, **f32) * head_dim ** -0.5
        scores = (scores.reshape(batch, rows, cols, rows, cols)
                  + term_h[..., :, None] + term_w[..., None, :]).reshape(batch, length, length)
        weights = jax.nn.softmax(scores, axis=-1).astype(v.dtype)
        return jnp.einsum("bqk,bkd->bqd", weights, v)

    heads = [one_head(query[:, :, h], key[:, :, h], value[:, :, h]) for h in range(query.shape[2])]
    return jnp.stack(heads, axis=2)


class RelativePositionAttention(nn.Module):
    """Multi-head self-attention over a whole [b, rows, cols, width] grid with decomposed relative-position
    terms (`relative_position_attention`). A windowed block hands it each window as a grid of its own.

    Projections are vitjax's (`query`, `key`, `value` [width, heads, head_dim], `out` [heads, head_dim,
    width]; the reference's fused `qkv` and `proj` split and joined by vitjax/interop/sam_weights.py);
    `rel_pos_h` [2 rows - 1, head_dim] and `rel_pos_w` [2 cols - 1, head_dim] start at zero, as the
    reference's do, so an untrained model begins without a relative-position preference.
    """
    num_heads: int
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        batch, rows, cols, width = x.shape
        projections = qkv_projections(width, self.num_heads, self.dtype, self.param_dtype)
        query, key, value = fused_projections(x.reshape(batch, rows * cols, width), projections, self.dtype)
        head_dim = query.shape[-1]
        rel_pos_h = self.param("rel_pos_h", nn.initializers.zeros, (2 * rows - 1, head_dim), self.param_dtype)
        rel_pos_w = self.param("rel_pos_w", nn.initializers.zeros, (2 * cols - 1, head_dim), self.param_dtype)
        y = relative_position_attention(query, key, value, rel_pos_h, rel_pos_w, (rows, cols))
        merge = HeadsMerge(width, name="out", dtype=self.dtype, param_dtype=self.param_dtype)
        return merge(y).reshape(batch, rows, cols, width)


def pad_to_windows(x, window: int):
    """[b, H, W, c] -> [b, H', W', c], zero-padded at the bottom and right to multiples of `window`."""
    _, height, width, _ = x.shape
    pad_h, pad_w = -height % window, -width % window
    if pad_h or pad_w:
        x = jnp.pad(x, ((0, 0), (0, pad_h), (0, pad_w), (0, 0)))
    return x


def windowed(attention, x, window: int):
    """`attention` ([n, window, window, c] -> same) applied to each window of the zero-padded grid x
    [b, H, W, c], the windows folded into the batch; the padding cropped off the result."""
    batch, height, width, channels = x.shape
    padded = pad_to_windows(x, window)
    padded_h, padded_w = padded.shape[1:3]
    windows = window_partition(padded, (window, window))  # [b, windows, window*window, c]
    count = windows.shape[1]
    y = attention(windows.reshape(batch * count, window, window, channels))
    y = window_merge(y.reshape(batch, count, window * window, channels), (window, window), padded_h, padded_w)
    return y[:, :height, :width]


class EncoderBlock(nn.Module):
    """Pre-norm (windowed or global) relative-position attention and GELU MLP, each a residual branch.

    [b, rows, cols, width] -> the same. `window_size` 0: global attention over the whole grid.
    """
    num_heads: int
    mlp_dim: int
    window_size: int = 0
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        batch, rows, cols, width = x.shape
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        y = LayerNorm(EPSILON, name="LayerNorm_0", **dtypes)(x)
        attention = RelativePositionAttention(self.num_heads, name="attention", **dtypes)
        y = windowed(attention, y, self.window_size) if self.window_size else attention(y)
        x = x + y
        # The MLP acts on each token alone; as a sequence its activations carry the ViT's logical names.
        x = x.reshape(batch, rows * cols, width)
        y = LayerNorm(EPSILON, name="LayerNorm_1", **dtypes)(x)
        x = x + MlpBlock(self.mlp_dim, name="MlpBlock_0", **dtypes)(y)
        return x.reshape(batch, rows, cols, width)


class Neck(nn.Module):
    """[b, rows, cols, width] -> [b, rows, cols, features]: 1x1 conv, channel LayerNorm, 3x3 conv (padding
    1), channel LayerNorm; the convolutions have no bias, the norms supply it."""
    features: int
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        x = nn.Conv(self.features, (1, 1), use_bias=False, name="conv_0", **dtypes)(x)
        x = LayerNorm(EPSILON, name="norm_0", **dtypes)(x)
        x = nn.Conv(self.features, (3, 3), padding=1, use_bias=False, name="conv_1", **dtypes)(x)
        return LayerNorm(EPSILON, name="norm_1", **dtypes)(x)


class ImageEncoder(nn.Module):
    """[b, image_size, image_size, 3] normalised, padded images -> [b, rows, cols, out_features] embeddings.

    `window_size` 0 makes every block global. The position embedding covers the grid of `image_size`
    (its parameter's shape), so the encoder takes that size only; vitjax/models/sam.py pads images to it.
    """
    width: int
    depth: int
    num_heads: int
    global_attn_indexes: tuple[int, ...]
    window_size: int = 14
    patch_size: int = 16
    image_size: int = 1024
    out_features: int = 256
    mlp_ratio: float = 4.0
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, images):
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        grid = self.image_size // self.patch_size
        x = PatchEmbedding(self.width, self.patch_size, name="patch_embed", **dtypes)(images.astype(self.dtype))
        pos_embed = self.param("pos_embed", nn.initializers.normal(stddev=0.02), (1, grid, grid, self.width),
                               self.param_dtype)
        x = x + pos_embed.astype(x.dtype)
        mlp_dim = int(self.width * self.mlp_ratio)
        for i in range(self.depth):
            window = 0 if i in self.global_attn_indexes else self.window_size
            x = EncoderBlock(self.num_heads, mlp_dim, window, name=f"block_{i}", **dtypes)(x)
        return Neck(self.out_features, name="neck", **dtypes)(x)

