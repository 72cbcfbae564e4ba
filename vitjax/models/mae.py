"""Masked autoencoder (He et al. 2022, "Masked Autoencoders Are Scalable Vision Learners").

    model = MAE(variant="B/16")                        # 512-wide, 8-block decoder, 75% masked
    pred, mask = model.apply(params, images, rngs={"mask": key})
    loss = model.loss(images, pred, mask)              # mae_loss(images, pred, mask, 16, True)

Each image's patches are shuffled (argsort of uniform noise, rng stream 'mask') and only the first
(1 - mask_ratio) N are kept. The encoder, the ViT's own modules and parameter names (`embedding`,
`cls`, `Transformer/encoderblock_i`, `Transformer/encoder_norm`), runs on those visible patches and
the CLS token only. A linear layer takes its output to the decoder's width; a learned mask token
fills the removed places, the sequence is put back in the image's order, and a stack of transformer
blocks, a norm and a linear layer predict every patch's pixels. The loss (`mae_loss`) is the mean
squared error over the masked patches alone, against pixels normalised per patch by default.

Position embeddings are the official code's: fixed 2-D sin-cos tables (`posemb.sincos_2d_mae`), zero
for CLS, in the encoder and in the decoder. They are constants, not parameters: nothing would train
them, and a ViT classifier takes the encoder either as it is (`posemb="sincos2d_mae"`, the same fixed
table) or as the official fine-tuning does, with a learned embedding that starts from the table
(`encoder_params(..., posemb="learned")`). The official code registers both tables as frozen
parameters and counts them: 197 * 768 + 197 * 512 of its 111,907,840 for ViT-B/16 at 224
(tests/models/test_mae.py).

The decoder's blocks are the encoder's kind (bidirectional self-attention, no cross-attention), so
the decoder is a vitjax `Encoder` stack too, named `decoder`: its blocks are
`decoder/encoderblock_i` and its final norm `decoder/encoder_norm`. Initialisation follows the
official code for what is MAE's own (CLS and mask token normal(0.02), the decoder's linear layers
Xavier-uniform); the encoder's modules keep the ViT's initialisers (Xavier-uniform in the blocks as
well, but a LeCun-normal patch embedding where the official code uses Xavier-uniform).
Tests: `python -m pytest tests/models/test_mae.py`.
"""
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from vitjax.models.attention import Implementation, check_heads
from vitjax.models.posemb import sincos_2d_mae
from vitjax.models.transformer import Encoder
from vitjax.models.vit import PatchEmbedding, Size, ViT, resolve_dims


def num_visible(length: int, mask_ratio: float) -> int:
    """Tokens kept of `length`: round((1 - mask_ratio) * length).

    The official code truncates (int()); rounding agrees with it on the published settings (196 and
    49 patches at 0.75 keep 49 and 12) and does not lose a token to float error: (1 - 0.9) * 10 is
    0.9999999999999998, which int() makes 0.
    """
    return int(round((1.0 - mask_ratio) * length))


def random_masking(rng, batch: int, length: int, mask_ratio: float):
    """(ids_keep [batch, kept], mask [batch, length], ids_restore [batch, length]) for one draw.

    Each example's tokens are shuffled by sorting uniform noise, and the first `num_visible` of the
    shuffled order are kept (`ids_keep`, in shuffled order). `ids_restore` is the inverse permutation:
    the place of each original token in the shuffled order, so the tokens that rank below `kept` are
    the visible ones and `mask` (1 = masked, float32) is that rank test.
    """
    kept = num_visible(length, mask_ratio)
    ids_shuffle = jnp.argsort(jax.random.uniform(rng, (batch, length)), axis=1)
    ids_restore = jnp.argsort(ids_shuffle, axis=1)
    mask = (ids_restore >= kept).astype(jnp.float32)
    return ids_shuffle[:, :kept], mask, ids_restore


def patchify(images, patch: int):
    """[B, H, W, C] -> [B, (H/P)(W/P), P*P*C]: patches in row-major order, each one's pixels in the
    official (row, column, channel) order, the order of `PatchEmbedding`'s kernel too."""
    batch, height, width, channels = images.shape
    rows, cols = height // patch, width // patch
    x = images.reshape(batch, rows, patch, cols, patch, channels).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(batch, rows * cols, patch * patch * channels)


def unpatchify(patches, patch: int, grid: tuple[int, int]):
    """Inverse of `patchify`: [B, rows*cols, P*P*C] -> [B, rows*P, cols*P, C]."""
    batch, _, pixels = patches.shape
    rows, cols = grid
    channels = pixels // (patch * patch)
    x = patches.reshape(batch, rows, cols, patch, patch, channels).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(batch, rows * patch, cols * patch, channels)


def normalized_patches(patches, eps: float = 1e-6):
    """Each patch minus its mean, over sqrt(its variance + eps), as the official norm_pix_loss target.

    The variance is the unbiased one (ddof=1), as torch's `Tensor.var` computes it by default.
    """
    mean = jnp.mean(patches, axis=-1, keepdims=True)
    var = jnp.var(patches, axis=-1, keepdims=True, ddof=1)
    return (patches - mean) / jnp.sqrt(var + eps)


def mae_loss(images, pred, mask, patch_size: int, norm_pix_loss: bool = True):
    """Mean squared error per patch (over its P*P*C pixels), averaged over the masked patches only.

    `images` [B, H, W, C] as the model saw them; `pred` [B, N, P*P*C] and `mask` [B, N] (1 = masked)
    from `MAE.__call__`. With `norm_pix_loss` the targets are `normalized_patches`. A batch with no
    masked patch (mask_ratio 0) has loss 0, where the official code divides by zero.
    """
    target = patchify(images.astype(jnp.float32), patch_size)
    if norm_pix_loss:
        target = normalized_patches(target)
    per_patch = jnp.mean((pred.astype(jnp.float32) - target) ** 2, axis=-1)
    return jnp.sum(per_patch * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def _add_sincos(tokens, grid):
    """Adds the fixed 2-D table to grid tokens [B, rows*cols, width] in row-major order."""
    return tokens + jnp.asarray(sincos_2d_mae(grid, tokens.shape[-1]), tokens.dtype)


class MAE(nn.Module):
    """Masked autoencoder on a ViT: `MAE(variant="B/16")`, the official mae_vit_base_patch16.

    The encoder is the ViT's (`variant` and the same overrides: `patch_size`, `width`, `depth`,
    `mlp_dim`, `num_heads`); the image size is the input's. The decoder has `decoder_depth` blocks of
    width `decoder_width`, `decoder_heads` heads and an MLP of `decoder_mlp_dim` (default 4x the
    width, as the official mlp_ratio 4). There is no classification head; `classifier()` is the ViT
    that takes the encoder (`encoder_params`). `norm_pix_loss` is the loss's (`loss`, `mae_loss`).

    Call: `apply(variables, images, *, train=False, return_ids=False, rngs={"mask": key})` ->
    (pred [B, N, P*P*C] float32, mask [B, N] float32, 1 = masked), plus ids_restore [B, N] with
    `return_ids`. The encoder output [B, 1 + kept, width] is sown as `intermediates/latent`. Init
    falls back to the 'params' key for 'mask'; apply needs a 'mask' key (Flax raises without one).
    """
    variant: str | None = "B/16"
    patch_size: int | None = None
    width: int | None = None
    depth: int | None = None
    mlp_dim: int | None = None
    num_heads: int | None = None
    decoder_width: int = 512
    decoder_depth: int = 8
    decoder_heads: int = 16
    decoder_mlp_dim: int | None = None
    mask_ratio: float = 0.75
    norm_pix_loss: bool = True
    scan: bool = False
    remat_policy: str | None = None
    attention_implementation: Implementation = "auto"
    kernels: tuple[str, ...] = ()
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    def dims(self) -> tuple[Size, int]:
        """The encoder's (Size, patch size), as `ViT.dims`."""
        return resolve_dims(self)

    @nn.nowrap  # plain arithmetic on arrays: no parameters, callable on the unbound model
    def loss(self, images, pred, mask):
        """`mae_loss` with this model's patch size and `norm_pix_loss`."""
        return mae_loss(images, pred, mask, self.dims()[1], self.norm_pix_loss)

    @nn.nowrap  # builds a ViT of its own, not a child of this module
    def classifier(self, num_classes: int, **fields) -> ViT:
        """The ViT classifier with this encoder: same dimensions, stacking, kernels and dtypes; a learned
        position embedding and token pooling unless `fields` (pool, posemb, head options...) say otherwise."""
        size, patch = self.dims()
        base = dict(patch_size=patch, width=size.width, depth=size.depth, mlp_dim=size.mlp_dim,
                    num_heads=size.num_heads, posemb="learned", scan=self.scan, remat_policy=self.remat_policy,
                    attention_implementation=self.attention_implementation, kernels=tuple(self.kernels),
                    dtype=self.dtype, param_dtype=self.param_dtype)
        return ViT(num_classes=num_classes, **{**base, **fields}, parent=None)

    def check_input_shape(self, image_shape) -> None:
        """Raises ValueError for inputs or settings this model cannot take (no compilation needed)."""
        self.classifier(1, posemb="sincos2d_mae").check_input_shape(image_shape)  # shapes, heads, kernels
        check_heads(self.decoder_width, self.decoder_heads)
        if not 0.0 <= self.mask_ratio < 1.0:
            raise ValueError(f"mask_ratio must be in [0, 1), got {self.mask_ratio}")
        for name, width in (("width", self.dims()[0].width), ("decoder_width", self.decoder_width)):
            if width % 4:
                raise ValueError(f"MAE's 2-D sin-cos position embeddings need a {name} divisible by 4, "
                                 f"got {width}")

    def _stack(self, depth, mlp_dim, num_heads, name):
        return Encoder(depth=depth, mlp_dim=mlp_dim, num_heads=num_heads, posemb="none", scan=self.scan,
                       remat_policy=self.remat_policy, attention_implementation=self.attention_implementation,
                       kernels=tuple(self.kernels), dtype=self.dtype, param_dtype=self.param_dtype, name=name)

    @nn.compact
    def __call__(self, images, *, train=False, return_ids=False):
        self.check_input_shape(images.shape[1:])
        size, patch = self.dims()
        x = PatchEmbedding(size.width, patch, name="embedding", dtype=self.dtype,
                           param_dtype=self.param_dtype)(images.astype(self.dtype))
        batch, rows, cols, width = x.shape
        # The table goes on before masking, so each kept patch carries its own position.
        x = _add_sincos(x.reshape(batch, rows * cols, width), (rows, cols))
        ids_keep, mask, ids_restore = random_masking(self.make_rng("mask"), batch, rows * cols, self.mask_ratio)
        x = jnp.take_along_axis(x, ids_keep[..., None], axis=1)
        cls = self.param("cls", nn.with_logical_partitioning(nn.initializers.normal(0.02), (None, None, "embed")),
                         (1, 1, width), self.param_dtype)
        # CLS's entry of the table is zero, so it goes on as it is.
        x = jnp.concatenate([jnp.broadcast_to(cls.astype(x.dtype), (batch, 1, width)), x], axis=1)
        latent = self._stack(size.depth, size.mlp_dim, size.num_heads, "Transformer")(x, train=train)
        self.sow("intermediates", "latent", latent)
        pred = self._decode(latent, ids_restore, (rows, cols), patch * patch * images.shape[-1], train)
        return (pred, mask, ids_restore) if return_ids else (pred, mask)

    def _decode(self, latent, ids_restore, grid, pixels, train):
        """Decoder width, mask tokens in the removed places, image order, blocks, pixels per patch."""
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        # Xavier-uniform linear layers with zero biases, as the official initialisation.
        dense = lambda axes: dict(kernel_init=nn.with_logical_partitioning(  # noqa: E731
            nn.initializers.xavier_uniform(), axes), **dtypes)
        x = nn.Dense(self.decoder_width, name="decoder_embed", **dense((None, "embed")))(latent)
        mask_token = self.param("mask_token", nn.with_logical_partitioning(
            nn.initializers.normal(0.02), (None, None, "embed")), (1, 1, self.decoder_width), self.param_dtype)
        batch, length = ids_restore.shape
        removed = length - (x.shape[1] - 1)
        patches = jnp.concatenate(
            [x[:, 1:], jnp.broadcast_to(mask_token.astype(x.dtype), (batch, removed, self.decoder_width))], axis=1)
        patches = _add_sincos(jnp.take_along_axis(patches, ids_restore[..., None], axis=1), grid)
        x = jnp.concatenate([x[:, :1], patches], axis=1)
        mlp_dim = self.decoder_mlp_dim or 4 * self.decoder_width
        x = self._stack(self.decoder_depth, mlp_dim, self.decoder_heads, "decoder")(x, train=train)
        pred = nn.Dense(pixels, name="decoder_pred", **dense(("embed", None)))(x[:, 1:])
        return pred.astype(jnp.float32)


def encoder_params(params, image_size: tuple[int, int] | None = None, *, pool: str = "tok",
                   posemb: str = "learned") -> dict:
    """The MAE encoder's parameters as a ViT classifier's, without a head: `embedding`, `cls` (token
    pooling only), `Transformer/encoderblock_*` and `Transformer/encoder_norm`.

    `posemb="learned"` (the official fine-tuning) adds `Transformer/posembed_input/pos_embedding`, the
    fixed table on the grid of `image_size` (H, W), zero for CLS, as a parameter to train from there;
    `posemb="sincos2d_mae"` adds nothing, the ViT computes the same table. With pool 'gap' or 'map' the
    vitjax ViT has no CLS token, so `cls` is dropped; its patch tokens then differ from the MAE
    encoder's (the official global-pool fine-tuning keeps CLS in the sequence and averages the rest).
    Pass the ViT's own head (and MAP head) with it: `{**vit_params, **encoder_params(...)}`, or load it
    with `npz.load(npz.to_official(...), vit)`, which initialises the head and resizes the table.
    """
    params = nn.meta.unbox(params)
    if "params" in params and "embedding" not in params:
        params = params["params"]
    tree = {"embedding": dict(params["embedding"]), "Transformer": dict(params["Transformer"])}
    if pool == "tok":
        tree["cls"] = params["cls"]
    if posemb == "learned":
        if image_size is None:
            raise ValueError("encoder_params(posemb='learned') needs image_size=(H, W) for the table's grid")
        kernel = params["embedding"]["kernel"]
        patch, width = kernel.shape[0], kernel.shape[-1]
        table = sincos_2d_mae((image_size[0] // patch, image_size[1] // patch), width)
        if pool == "tok":
            table = np.concatenate([np.zeros((1, width), np.float32), table])
        tree["Transformer"]["posembed_input"] = {"pos_embedding": jnp.asarray(table[None], kernel.dtype)}
    elif posemb != "sincos2d_mae":
        raise ValueError(f"posemb={posemb!r}: the MAE encoder was trained with MAE's fixed sin-cos table; "
                         f"use 'learned' (starting from it) or 'sincos2d_mae' (keeping it)")
    return tree
