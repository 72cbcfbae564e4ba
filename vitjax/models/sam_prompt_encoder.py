"""SAM's prompt encoder: points, boxes and a mask -> sparse tokens and a dense embedding for the decoder.

A point (x, y) in input pixels becomes the random-Fourier encoding of its position plus a learned
embedding of its label: 1 foreground, 0 background, -1 "not a point" (padding; its encoding is dropped,
only the not-a-point embedding stays). A box is two points, its top-left and bottom-right corners, each
with its own learned embedding. When points come without a box, one not-a-point token is appended (the
reference's padding, which the released weights were trained with). A mask (the low-resolution logits of
an earlier prediction, 4x the embedding grid) is downscaled by two 2x2 stride-2 convolutions (with channel
LayerNorm and GELU) and a 1x1 convolution to a dense embedding of the grid's size; without one, a learned
no-mask embedding fills the grid.

The random-Fourier encoding (Tancik et al. 2020) of a point p normalised to [0, 1]^2 is
[sin(2 pi (2p - 1) G), cos(2 pi (2p - 1) G)] with G a fixed [2, width/2] matrix drawn from N(0, 1). G is
no parameter (the reference keeps it as a buffer, outside `.parameters()`): it lives in the `constants`
collection, drawn from the `params` rng at init and never trained.
"""
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from vitjax.models.layernorm import LayerNorm
from vitjax.models.transformer import gelu
from vitjax.models.vit import PatchEmbedding

EPSILON = 1e-6  # the reference's LayerNorm2d
NOT_A_POINT, BACKGROUND, FOREGROUND = -1, 0, 1
CONSTANTS = "constants"  # the variable collection of the Fourier matrix


def fourier_features(coords, gaussian_matrix):
    """[..., 2] points normalised to [0, 1]^2 -> [..., 2 n]: sin and cos of 2 pi (2 p - 1) G, G [2, n]."""
    projected = 2 * np.pi * ((2 * coords - 1) @ gaussian_matrix.astype(coords.dtype))
    return jnp.concatenate([jnp.sin(projected), jnp.cos(projected)], axis=-1)


def grid_coords(rows: int, cols: int) -> np.ndarray:
    """[rows, cols, 2] (x, y) of each cell's centre normalised to [0, 1]: ((j + 0.5) / cols, (i + 0.5) / rows)."""
    y, x = np.meshgrid((np.arange(rows) + 0.5) / rows, (np.arange(cols) + 0.5) / cols, indexing="ij")
    return np.stack([x, y], axis=-1).astype(np.float32)


class PromptEncoder(nn.Module):
    """Prompts -> (sparse [B, tokens, width], dense [B, rows, cols, width]); `image_encoding()` the grid's
    positional encoding [1, rows, cols, width] that the decoder adds to the image embedding.

    `grid` (rows, cols): the image embedding's; `image_size` (height, width): the encoder's input, which
    point coordinates are normalised by. Parameters: the four point embeddings (`background`,
    `foreground`, `box_top_left`, `box_bottom_right`), `not_a_point`, `no_mask` (each [1, width]) and the
    mask downscaling convolutions.
    """
    width: int
    grid: tuple[int, int]
    image_size: tuple[int, int]
    mask_in_chans: int = 16
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    def setup(self):
        def embedding(name):  # [1, width], N(0, 1) as torch's nn.Embedding
            return self.param(name, nn.initializers.normal(1.0), (1, self.width), self.param_dtype)

        self.background, self.foreground = embedding("background"), embedding("foreground")
        self.box_top_left, self.box_bottom_right = embedding("box_top_left"), embedding("box_bottom_right")
        self.not_a_point, self.no_mask = embedding("not_a_point"), embedding("no_mask")
        self.gaussian_matrix = self.variable(
            CONSTANTS, "gaussian_matrix",
            lambda: jax.random.normal(self.make_rng("params"), (2, self.width // 2), jnp.float32))
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        self.mask_conv_0 = PatchEmbedding(self.mask_in_chans // 4, 2, **dtypes)
        self.mask_norm_0 = LayerNorm(EPSILON, **dtypes)
        self.mask_conv_1 = PatchEmbedding(self.mask_in_chans, 2, **dtypes)
        self.mask_norm_1 = LayerNorm(EPSILON, **dtypes)
        self.mask_projection = nn.Dense(self.width, **dtypes)

    def encode_points(self, coords):
        """[..., 2] (x, y) in input pixels (already shifted to the pixel's centre) -> [..., width]."""
        height, width = self.image_size
        normalised = coords.astype(jnp.float32) / jnp.asarray([width, height], jnp.float32)
        return fourier_features(normalised, self.gaussian_matrix.value)

    def image_encoding(self):
        """[1, rows, cols, width]: the Fourier encoding of every cell centre of the embedding grid."""
        return fourier_features(jnp.asarray(grid_coords(*self.grid)), self.gaussian_matrix.value)[None]

    def embed_points(self, points, labels, pad: bool):
        """points [B, N, 2] (x, y) in input pixels, labels [B, N] -> [B, N (+1 with `pad`), width]."""
        points = points.astype(jnp.float32) + 0.5  # pixel (i, j)'s centre
        labels = labels.astype(jnp.int32)
        if pad:
            points = jnp.concatenate([points, jnp.zeros((points.shape[0], 1, 2), points.dtype)], axis=1)
            labels = jnp.concatenate([labels, jnp.full((labels.shape[0], 1), NOT_A_POINT, labels.dtype)], axis=1)
        encoded = self.encode_points(points)
        labels = labels[..., None]
        encoded = (encoded + jnp.where(labels == BACKGROUND, self.background, 0.0)
                   + jnp.where(labels == FOREGROUND, self.foreground, 0.0))
        return jnp.where(labels == NOT_A_POINT, self.not_a_point, encoded)

    def embed_boxes(self, boxes):
        """[B, 4] (x0, y0, x1, y1) in input pixels -> [B, 2, width]: the two corners."""
        corners = self.encode_points(boxes.astype(jnp.float32).reshape(-1, 2, 2) + 0.5)
        return corners + jnp.concatenate([self.box_top_left, self.box_bottom_right])[None]

    def embed_mask(self, mask_input):
        """[B, 1, 4 rows, 4 cols] mask logits -> [B, rows, cols, width]."""
        x = mask_input[:, 0, :, :, None].astype(self.dtype)
        x = gelu(self.mask_norm_0(self.mask_conv_0(x)))
        x = gelu(self.mask_norm_1(self.mask_conv_1(x)))
        return self.mask_projection(x)

    def __call__(self, points=None, labels=None, boxes=None, mask_input=None):
        """(sparse [B, tokens, width], dense [B, rows, cols, width]); each prompt optional, B from the first
        given (points, boxes, mask), 1 with none. Initialisation runs every branch, so that every parameter
        exists whatever the prompts it is called with."""
        given = next((p for p in (points, boxes, mask_input) if p is not None), None)
        batch = 1 if given is None else given.shape[0]
        sparse = [jnp.zeros((batch, 0, self.width), self.dtype)]
        if points is not None:
            sparse.append(self.embed_points(points, labels, pad=boxes is None))
        if boxes is not None:
            sparse.append(self.embed_boxes(boxes))
        rows, cols = self.grid
        if mask_input is None and self.is_initializing():
            self.embed_mask(jnp.zeros((1, 1, 4 * rows, 4 * cols), jnp.float32))
        if mask_input is not None:
            dense = self.embed_mask(mask_input)
        else:
            dense = jnp.broadcast_to(self.no_mask[None, None], (batch, rows, cols, self.width))
        return jnp.concatenate(sparse, axis=1).astype(self.dtype), dense.astype(self.dtype)
