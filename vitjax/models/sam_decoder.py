"""SAM's mask decoder: a two-way transformer between prompt tokens and the image embedding, then masks.

Tokens are an IoU token, 4 mask tokens (one for the single-mask output, three for the multi-mask
outputs) and the prompt's sparse tokens. The image embedding plus the dense prompt embedding is the
other side. Each of the two-way blocks runs four steps: token self-attention; tokens attending to the
image; an MLP on the tokens; the image attending to the tokens; each a residual with a LayerNorm after
it. The tokens' positional encoding (the prompt tokens themselves) is added to queries and keys at every
attention, as is the image's (the Fourier encoding of its grid), but never to the values; the first
block's self-attention takes no positional encoding and no residual (its output replaces the tokens).
Cross-attention projects to half the width ("attention downsampling"). A final token-to-image attention
and LayerNorm end the transformer.

Masks: the image side is upscaled 4x by two 2x2 stride-2 transposed convolutions (width/4 then width/8
channels; channel LayerNorm and GELU after the first, GELU after the second); each mask token goes
through its own 3-layer MLP (the hypernetwork) to width/8 weights whose dot product with every upscaled
pixel is that mask's logit. The IoU token's 3-layer MLP predicts each mask's IoU. Single-mask output
reads mask 0, multi-mask output masks 1-3.
"""
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from vitjax.models.attention import HeadsMerge, HeadsProjection, check_heads, dot_product_attention
from vitjax.models.layernorm import LayerNorm
from vitjax.models.transformer import gelu

EPSILON = 1e-5  # torch's nn.LayerNorm default, which the reference's two-way transformer keeps
CHANNEL_EPSILON = 1e-6  # its LayerNorm2d in the upscaling


class ReluMlp(nn.Module):
    """`num_layers` Dense layers (`Dense_0` ...) of `hidden` features, ReLU between them, `features` out."""
    hidden: int
    features: int
    num_layers: int
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        for i in range(self.num_layers):
            last = i == self.num_layers - 1
            x = nn.Dense(self.features if last else self.hidden, name=f"Dense_{i}", dtype=self.dtype,
                         param_dtype=self.param_dtype)(x)
            x = x if last else jax.nn.relu(x)
        return x


class ProjectedAttention(nn.Module):
    """Attention whose queries, keys and values come from three inputs, projected to `width / downsample`
    channels (`query`, `key`, `value` [width, heads, head_dim]) and back to `width` (`out`)."""
    num_heads: int
    downsample: int = 1
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, queries, keys, values):
        width = queries.shape[-1]
        internal = width // self.downsample
        check_heads(internal, self.num_heads)
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        project = lambda name, x: HeadsProjection(self.num_heads, internal // self.num_heads, name=name,  # noqa: E731
                                                  **dtypes)(x)
        y = dot_product_attention(project("query", queries), project("key", keys), project("value", values))
        return HeadsMerge(width, name="out", **dtypes)(y)


class TwoWayBlock(nn.Module):
    """One two-way block: (tokens [B, T, w], image [B, HW, w]) -> the same, updated both ways."""
    num_heads: int
    mlp_dim: int
    first: bool = False  # the first block's self-attention has no positional encoding and no residual
    downsample: int = 2
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, tokens, image, token_pe, image_pe):
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        norm = lambda i: LayerNorm(EPSILON, name=f"norm_{i}", **dtypes)  # noqa: E731
        self_attention = ProjectedAttention(self.num_heads, 1, name="self_attention", **dtypes)
        if self.first:
            tokens = self_attention(tokens, tokens, tokens)
        else:
            tokens = tokens + self_attention(tokens + token_pe, tokens + token_pe, tokens)
        tokens = norm(0)(tokens)
        to_image = ProjectedAttention(self.num_heads, self.downsample, name="token_to_image", **dtypes)
        tokens = norm(1)(tokens + to_image(tokens + token_pe, image + image_pe, image))
        width = tokens.shape[-1]
        tokens = norm(2)(tokens + ReluMlp(self.mlp_dim, width, 2, name="mlp", **dtypes)(tokens))
        to_tokens = ProjectedAttention(self.num_heads, self.downsample, name="image_to_token", **dtypes)
        image = norm(3)(image + to_tokens(image + image_pe, tokens + token_pe, tokens))
        return tokens, image


class TwoWayTransformer(nn.Module):
    """`depth` two-way blocks (`layer_{i}`), a final token-to-image attention and LayerNorm.

    tokens [B, T, w] (also their positional encoding), image [B, HW, w], image_pe [B or 1, HW, w] ->
    (tokens, image), both updated.
    """
    depth: int
    num_heads: int
    mlp_dim: int
    downsample: int = 2
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, tokens, image, image_pe):
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        token_pe = tokens
        for i in range(self.depth):
            tokens, image = TwoWayBlock(self.num_heads, self.mlp_dim, i == 0, self.downsample,
                                        name=f"layer_{i}", **dtypes)(tokens, image, token_pe, image_pe)
        final = ProjectedAttention(self.num_heads, self.downsample, name="final_token_to_image", **dtypes)
        tokens = tokens + final(tokens + token_pe, image + image_pe, image)
        return LayerNorm(EPSILON, name="final_norm", **dtypes)(tokens), image


class UpscaleConv(nn.Module):
    """A 2x2 stride-2 transposed convolution: [b, H, W, c] -> [b, 2H, 2W, features], each input pixel
    spreading to its own 2x2 block (`kernel` [2, 2, c, features]: output offset (dy, dx), in, out).

    The blocks do not overlap, so the convolution is one matrix product and a reshape, written as such
    rather than through lax.conv_transpose, whose kernel flipping conventions differ from torch's.
    """
    features: int
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        batch, height, width, channels = x.shape
        kernel = self.param("kernel", nn.initializers.lecun_normal(in_axis=2, out_axis=3),
                            (2, 2, channels, self.features), self.param_dtype)
        bias = self.param("bias", nn.initializers.zeros, (self.features,), self.param_dtype)
        x, kernel, bias = nn.dtypes.promote_dtype(x, kernel, bias, dtype=self.dtype)
        y = jnp.einsum("bhwc,yxcf->bhywxf", x, kernel) + bias
        return y.reshape(batch, 2 * height, 2 * width, self.features)


class MaskDecoder(nn.Module):
    """(image embedding, its positional encoding, sparse and dense prompt embeddings) -> (mask logits
    [B, masks, 4 rows, 4 cols], IoU predictions [B, masks]); masks 1 (`multimask_output` False) or
    `num_multimask_outputs`.

    `image_embeddings` [1 or B, rows, cols, w] (one image broadcast to every prompt), `image_pe`
    [1, rows, cols, w], `sparse` [B, T, w], `dense` [B, rows, cols, w]. Parameters: `iou_token` [1, w],
    `mask_tokens` [masks + 1, w], `transformer`, `upscale_conv_0`, `upscale_norm`, `upscale_conv_1`,
    `hypernetwork_{i}` and `iou_head`.
    """
    depth: int = 2
    num_heads: int = 8
    mlp_dim: int = 2048
    num_multimask_outputs: int = 3
    iou_head_depth: int = 3
    iou_head_hidden: int = 256
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, image_embeddings, image_pe, sparse, dense, multimask_output: bool):
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        batch, rows, cols, width = dense.shape
        num_masks = self.num_multimask_outputs + 1
        output_tokens = jnp.concatenate([
            self.param("iou_token", nn.initializers.normal(1.0), (1, width), self.param_dtype),
            self.param("mask_tokens", nn.initializers.normal(1.0), (num_masks, width), self.param_dtype)])
        tokens = jnp.concatenate([jnp.broadcast_to(output_tokens.astype(sparse.dtype), (batch, *output_tokens.shape)),
                                  sparse], axis=1)
        image = jnp.broadcast_to(image_embeddings, dense.shape) + dense
        tokens, image = TwoWayTransformer(self.depth, self.num_heads, self.mlp_dim, name="transformer", **dtypes)(
            tokens, image.reshape(batch, rows * cols, width), image_pe.reshape(1, rows * cols, width))

        image = image.reshape(batch, rows, cols, width)
        image = UpscaleConv(width // 4, name="upscale_conv_0", **dtypes)(image)
        image = gelu(LayerNorm(CHANNEL_EPSILON, name="upscale_norm", **dtypes)(image))
        image = gelu(UpscaleConv(width // 8, name="upscale_conv_1", **dtypes)(image))
        weights = jnp.stack([ReluMlp(width, width // 8, 3, name=f"hypernetwork_{i}", **dtypes)(tokens[:, 1 + i])
                             for i in range(num_masks)], axis=1)  # [B, masks, width / 8]
        masks = jnp.einsum("bmc,byxc->bmyx", weights, image)
        iou = ReluMlp(self.iou_head_hidden, num_masks, self.iou_head_depth, name="iou_head", **dtypes)(tokens[:, 0])
        chosen = slice(1, None) if multimask_output else slice(0, 1)
        return masks[:, chosen].astype(jnp.float32), iou[:, chosen].astype(jnp.float32)
