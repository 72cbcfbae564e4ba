"""Position embeddings: learned, 1-D sinusoidal, 2-D sin-cos (two tables), or none.

Self-attention is permutation-equivariant: without a position signal the encoder cannot tell where
a token came from. ViT adds a learned embedding per position; the original Transformer a fixed
sinusoid of the 1-D index; later ViTs (MoCo v3, big_vision's "Better plain ViT baselines") a fixed
2-D sin-cos of (row, column). `sincos2d` is big_vision's table (big_vision/models/vit.py,
`posemb_sincos_2d`), so that a big_vision model trained with `posemb="sincos2d"` sees the same
position signal here. `sincos2d_mae` is the table of MoCo v3 and MAE (facebookresearch/mae,
`get_2d_sincos_pos_embed`), whose frequencies differ slightly from big_vision's: an MAE encoder,
pre-trained with it fixed, keeps it in a ViT classifier (vitjax/models/mae.py).
"""
from typing import Any, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

Kind = Literal["learned", "sincos1d", "sincos2d", "sincos2d_mae", "none"]
KINDS = ("learned", "sincos1d", "sincos2d", "sincos2d_mae", "none")


def sincos_1d(length: int, width: int, temperature: float = 10_000.0) -> np.ndarray:
    """Vaswani et al.: PE[p, 2i] = sin(p / T^(2i/d)), PE[p, 2i+1] = cos(p / T^(2i/d))."""
    if width % 2:
        raise ValueError(f"1-D sin-cos position embeddings need an even width, got {width}")
    position = np.arange(length, dtype=np.float64)[:, None]
    freq = 1.0 / temperature ** (np.arange(0, width, 2, dtype=np.float64) / width)
    table = np.zeros((length, width), np.float64)
    table[:, 0::2] = np.sin(position * freq)
    table[:, 1::2] = np.cos(position * freq)
    return table.astype(np.float32)


def sincos_2d(grid: tuple[int, int], width: int, temperature: float = 10_000.0) -> np.ndarray:
    """[rows*cols, width], big_vision's 2-D sin-cos table, positions in row-major order.

    With d = width / 4 and frequencies w_i = T^(-i / (d - 1)), i = 0..d-1 (the first 1, the last 1/T),
    position (r, c) gets [sin(c w), cos(c w), sin(r w), cos(r w)]: the column in the first half of the
    channels, the row in the second. (MoCo v3's table divides i by d instead of d - 1: `sincos_2d_mae`.)
    """
    if width % 4 or width < 8:
        raise ValueError(f"2-D sin-cos position embeddings need a width divisible by 4 and at least 8, "
                         f"got {width}")
    return _sincos_2d(grid, width, temperature, width // 4 - 1)


def sincos_2d_mae(grid: tuple[int, int], width: int, temperature: float = 10_000.0) -> np.ndarray:
    """[rows*cols, width], MAE's (and MoCo v3's) 2-D sin-cos table, positions in row-major order.

    The layout of `sincos_2d` ([sin(c w), cos(c w), sin(r w), cos(r w)], column first), with
    w_i = T^(-i / d), i = 0..d-1, d = width / 4: the last frequency stops short of 1/T.
    """
    if width % 4:
        raise ValueError(f"MAE's 2-D sin-cos position embeddings need a width divisible by 4, got {width}")
    return _sincos_2d(grid, width, temperature, width // 4)


def _sincos_2d(grid, width, temperature, denominator):
    rows, cols = np.meshgrid(np.arange(grid[0]), np.arange(grid[1]), indexing="ij")
    quarter = width // 4
    omega = 1.0 / temperature ** (np.arange(quarter, dtype=np.float64) / denominator)
    by_row = rows.reshape(-1, 1) * omega[None]
    by_col = cols.reshape(-1, 1) * omega[None]
    table = np.concatenate([np.sin(by_col), np.cos(by_col), np.sin(by_row), np.cos(by_row)], axis=1)
    return table.astype(np.float32)


def resize_grid(posemb, new_grid: tuple[int, int], num_prefix_tokens: int = 1,
                old_grid: tuple[int, int] | None = None):
    """Resizes a learned [1, prefix + rows*cols, width] table to a new grid, keeping prefix entries.

    Bilinear interpolation of the grid part, as the ViT paper does for fine-tuning at a higher
    resolution; the CLS entry is carried over unchanged.
    """
    posemb = np.asarray(posemb)
    prefix, table = posemb[:, :num_prefix_tokens], posemb[:, num_prefix_tokens:]
    width = table.shape[-1]
    if old_grid is None:
        side = int(round(np.sqrt(table.shape[1])))
        if side * side != table.shape[1]:
            raise ValueError(
                f"cannot infer the grid of a position embedding with {table.shape[1]} entries after "
                f"{num_prefix_tokens} prefix tokens; pass old_grid=(rows, cols)")
        old_grid = (side, side)
    if tuple(old_grid) == tuple(new_grid):
        return posemb
    grid = table.reshape(old_grid[0], old_grid[1], width)
    resized = jax.image.resize(jnp.asarray(grid, jnp.float32), (*new_grid, width), "bilinear",
                               antialias=False)
    resized = np.asarray(resized, posemb.dtype).reshape(1, new_grid[0] * new_grid[1], width)
    return np.concatenate([prefix, resized], axis=1)


def interpolate_table(table, old_grid: tuple[int, int], new_grid: tuple[int, int], num_prefix_tokens: int):
    """A learned [1, prefix + rows*cols, width] table resampled to `new_grid` inside a traced function,
    the prefix entries (CLS) kept: what a model applied at another resolution adds (DINO's multi-crop).

    Bicubic, without antialiasing, as the official DINO's `interpolate_pos_encoding` (torch's
    `interpolate(mode='bicubic')`); jax's cubic kernel is Keys' with a = -0.5 where torch's has -0.75,
    so the two differ slightly between grid points. (`resize_grid` is the host-side, bilinear resize
    that fine-tuning at a new resolution applies to a checkpoint once.)
    """
    if tuple(old_grid) == tuple(new_grid):
        return table
    prefix, grid = table[:, :num_prefix_tokens], table[:, num_prefix_tokens:]
    width = table.shape[-1]
    grid = grid.reshape(old_grid[0], old_grid[1], width).astype(jnp.float32)
    resized = jax.image.resize(grid, (*new_grid, width), "bicubic", antialias=False)
    resized = resized.astype(table.dtype).reshape(1, new_grid[0] * new_grid[1], width)
    return jnp.concatenate([prefix, resized], axis=1)


class AddPositionEmbedding(nn.Module):
    """Adds a position embedding to [batch, prefix + grid tokens, width] inputs.

    `num_prefix_tokens` counts tokens before the patch grid (the CLS token). A learned table covers
    them too (as in the official ViT); the fixed sinusoids give prefix tokens a zero embedding.
    `table_grid` (learned only): the (rows, cols) the learned table is stored for; inputs of another
    `grid` get it interpolated (`interpolate_table`). None: the table is the input's length, as before.
    """
    kind: Kind = "learned"
    grid: tuple[int, int] | None = None
    num_prefix_tokens: int = 0
    param_dtype: Any = jnp.float32
    table_grid: tuple[int, int] | None = None

    @nn.compact
    def __call__(self, x):
        length, width = x.shape[1], x.shape[2]
        if self.kind == "none":
            return x
        if self.kind == "learned":
            stored = length if self.table_grid is None else (
                self.num_prefix_tokens + self.table_grid[0] * self.table_grid[1])
            table = self.param(
                "pos_embedding",
                nn.with_logical_partitioning(nn.initializers.normal(stddev=0.02), (None, "length", "embed")),
                (1, stored, width), self.param_dtype)
            if stored != length:
                grid = self.grid or _square_grid(length - self.num_prefix_tokens)
                table = interpolate_table(table, self.table_grid, grid, self.num_prefix_tokens)
            return x + table.astype(x.dtype)
        grid_length = length - self.num_prefix_tokens
        if self.kind == "sincos1d":
            table = sincos_1d(grid_length, width)
        elif self.kind in ("sincos2d", "sincos2d_mae"):
            grid = self.grid or _square_grid(grid_length)
            table = (sincos_2d if self.kind == "sincos2d" else sincos_2d_mae)(grid, width)
        else:
            raise ValueError(f"unknown position embedding {self.kind!r}; choose one of {KINDS}")
        table = np.concatenate([np.zeros((self.num_prefix_tokens, width), np.float32), table])
        return x + jnp.asarray(table, x.dtype)[None]


def _square_grid(length):
    side = int(round(np.sqrt(length)))
    if side * side != length:
        raise ValueError(f"2-D sin-cos needs a grid; {length} tokens is not a square, pass grid=(rows, cols)")
    return side, side
