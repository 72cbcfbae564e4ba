"""The Vision Transformer (Dosovitskiy et al. 2021) and the R50+ViT hybrid.

An image is cut into non-overlapping PxP patches, each linearly embedded (a PxP convolution with
stride P); a learned CLS token is prepended, position embeddings added, and the sequence goes through
a pre-norm transformer encoder. The head reads the CLS token ("tok"), the mean of the patch tokens
("gap"), or a learned probe that attends over them ("map", multihead attention pooling).
In the hybrid, the patches are taken from ResNet feature maps instead of pixels.

DeiT's distilled models (Touvron et al. 2021, `distillation_token=True`) add a second learned token
beside CLS, read by a head of its own (`head_dist`) that learns from a teacher's predictions
(vitjax/objectives/distillation.py); in training the model returns both heads' logits, at inference
their average.
"""
import dataclasses
import re
from typing import Any, Literal

import flax.linen as nn
import jax.numpy as jnp

from vitjax.models import bit, kernels as model_kernels
from vitjax.models.attention import Implementation, MultiHeadAttention, check_heads
from vitjax.models.posemb import KINDS as POSEMB_KINDS, Kind as PosembKind
from vitjax.models.transformer import Activation, Encoder, MlpBlock, Norm, NormPosition

Pool = Literal["tok", "gap", "map"]


@dataclasses.dataclass(frozen=True)
class Size:
    width: int
    depth: int
    mlp_dim: int
    num_heads: int


# ViT paper Table 1, plus DeiT's Ti and S.
SIZES = {
    "Ti": Size(192, 12, 768, 3),
    "S": Size(384, 12, 1536, 6),
    "B": Size(768, 12, 3072, 12),
    "L": Size(1024, 24, 4096, 16),
    "H": Size(1280, 32, 5120, 16),
}


def parse_variant(variant: str) -> tuple[Size, int]:
    """'B/16' -> (Size of ViT-B, patch size 16)."""
    match = re.fullmatch(r"(Ti|S|B|L|H)/(\d+)", variant or "")
    if not match:
        raise ValueError(f"unknown ViT variant {variant!r}; use '<size>/<patch>' with size in "
                         f"{list(SIZES)} and a patch size, e.g. 'B/16', 'Ti/4'")
    return SIZES[match.group(1)], int(match.group(2))


def resolve_dims(model) -> tuple[Size, int]:
    """(Size, patch size) of a model with the ViT's `variant`, `patch_size`, `width`, `depth`,
    `mlp_dim` and `num_heads` fields: the variant's, with the explicit fields overriding it."""
    if model.variant is not None:
        size, patch = parse_variant(model.variant)
    else:
        missing = [f for f in ("patch_size", "width", "depth", "mlp_dim", "num_heads")
                   if getattr(model, f) is None]
        if missing:
            raise ValueError(f"{type(model).__name__} without a variant needs {missing}; pass them or "
                             f"variant='B/16' etc.")
        size, patch = Size(0, 0, 0, 0), 0
    size = Size(*(getattr(model, f.name) or getattr(size, f.name) for f in dataclasses.fields(Size)))
    return size, model.patch_size or patch


def _dense_init(rng, features_in, features_out, dtype):
    return {"kernel": nn.initializers.lecun_normal()(rng, (features_in, features_out), dtype),
            "bias": jnp.zeros((features_out,), dtype)}


class PatchEmbedding(nn.Module):
    """Non-overlapping PxP patches, each linearly embedded: [b, H, W, C] -> [b, H/P, W/P, features].

    The parameters are those of a PxP convolution with stride P (`kernel` [P, P, C, features], HWIO, and
    `bias`), as in the official checkpoints; `use_bias=False` drops the bias (CLIP's has none). The
    patches do not overlap, so the convolution is one matrix product over the flattened patches, and it
    is computed as that product (with its gradients) rather than handed to the compiler as a strided
    convolution.
    """
    features: int
    patch: int
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32
    use_bias: bool = True

    @nn.compact
    def __call__(self, x):
        batch, height, width, channels = x.shape
        p = self.patch
        kernel = self.param("kernel", nn.with_logical_partitioning(
            nn.initializers.lecun_normal(), (None, None, "conv_in", "embed")),
            (p, p, channels, self.features), self.param_dtype)
        x, kernel = nn.dtypes.promote_dtype(x, kernel, dtype=self.dtype)
        rows, cols = height // p, width // p
        # [b, rows, p, cols, p, C] -> [b, rows, cols, p, p, C]: each patch's pixels in the kernel's (h, w, c) order.
        patches = x.reshape(batch, rows, p, cols, p, channels).transpose(0, 1, 3, 2, 4, 5)
        out = jnp.einsum("brcxyi,xyio->brco", patches, kernel)
        if not self.use_bias:
            return out
        bias = self.param("bias", nn.with_logical_partitioning(nn.initializers.zeros, ("embed",)),
                          (self.features,), self.param_dtype)
        return out + bias.astype(out.dtype)


class MAPHead(nn.Module):
    """Multihead attention pooling: a learned probe token attends over all tokens, then an MLP.

    `norm_epsilon` and `activation`: its LayerNorm's and MLP's (the encoder's, in SigLIP)."""
    num_heads: int
    mlp_dim: int
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32
    norm_epsilon: float = 1e-6
    activation: Activation = "gelu"

    @nn.compact
    def __call__(self, x):
        probe = self.param("probe", nn.with_logical_partitioning(
            nn.initializers.xavier_uniform(), (None, None, "embed")), (1, 1, x.shape[-1]), self.param_dtype)
        probe = jnp.broadcast_to(probe.astype(x.dtype), (x.shape[0], 1, x.shape[-1]))
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        x = MultiHeadAttention(self.num_heads, name="MultiHeadDotProductAttention_0", **dtypes)(probe, x)
        y = nn.LayerNorm(epsilon=self.norm_epsilon, name="LayerNorm_0", **dtypes)(x)
        x = x + MlpBlock(self.mlp_dim, activation=self.activation, name="MlpBlock_0", **dtypes)(y)
        return x[:, 0]


class ViT(nn.Module):
    """ViT classifier. `ViT(num_classes=1000, variant="B/16")`; every dimension can be overridden
    (`patch_size`, `width`, `depth`, `mlp_dim`, `num_heads`); `resnet="R50"` makes the hybrid,
    whose patch size counts input pixels (R50+B/16: stride-16 ResNet features, 1x1 patches).

    `representation_size` adds the pre-logits Dense+tanh layer of the paper's pre-training head.
    The head is zero-initialised by default, so training starts from uniform predictions.
    `cls_only_last_block`: with token pooling, the last block computes the CLS row alone, the only
    one the head reads (the same logits and gradients; ~7% fewer FLOPs for ViT-Ti, ~13% for the
    default Fashion-MNIST model; when it applies: `last_block_rows`). False computes every row, as
    timm does.
    `kernels`: hand-written kernels to use (vitjax/models/kernels.py); none by default.
    `distillation_token` (DeiT; token pooling only): a `dist` token after CLS, covered by the position
    embedding like CLS, and its own zero-initialised head `head_dist`. With it the model returns
    (CLS logits, distillation logits) when `train=True` and their mean when `train=False`, as timm's
    distilled DeiT does in distilled training and in eval.
    `posemb_table_grid` (learned position embeddings): the patch grid (rows, cols) the table is stored
    for. Set, the model takes images of any size divisible by the patch, the table interpolated to
    their grid on the fly (`posemb.interpolate_table`), as DINO's multi-crop needs; None (the default)
    sizes the table by the input, and another input size then fails on the parameter's shape.
    `num_classes=0`: no head; the model returns the pooled features [batch, width] (an image tower).
    `head_bias=False`: a head without bias (CLIP's `visual_projection`).
    `activation`, `norm_epsilon`, `patch_bias=False` (no patch-embedding bias) and `pre_norm` (a norm
    after the position embedding, `Transformer/encoder_prenorm`) give the towers of CLIP and SigLIP
    (vitjax/models/dual_encoder.py); the defaults are the ViT paper's.
    """
    num_classes: int
    variant: str | None = None
    patch_size: int | None = None
    width: int | None = None
    depth: int | None = None
    mlp_dim: int | None = None
    num_heads: int | None = None
    pool: Pool = "tok"
    posemb: PosembKind = "learned"
    representation_size: int | None = None
    resnet: str | None = None
    dropout_rate: float = 0.0
    attention_dropout_rate: float = 0.0
    droppath_rate: float = 0.0
    norm: Norm = "layernorm"
    norm_position: NormPosition = "pre"
    head_zero_init: bool = True
    cls_only_last_block: bool = True
    scan: bool = False
    remat_policy: str | None = None
    attention_implementation: Implementation = "auto"
    kernels: tuple[str, ...] = ()
    distillation_token: bool = False
    posemb_table_grid: tuple[int, int] | None = None
    head_bias: bool = True
    activation: Activation = "gelu"
    norm_epsilon: float = 1e-6
    patch_bias: bool = True
    pre_norm: bool = False
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    def dims(self) -> tuple[Size, int]:
        """The resolved (Size, patch size): the variant's, with explicit overrides applied."""
        return resolve_dims(self)

    def num_prefix_tokens(self) -> int:
        """Tokens before the patch grid: CLS (token pooling), then the distillation token (DeiT)."""
        return int(self.pool == "tok") + int(self.distillation_token)

    def last_block_rows(self, *, recording_intermediates: bool = False) -> int | None:
        """How many rows (tokens) the last encoder block computes: the prefix rows (CLS, and the
        distillation token), or None for every row.

        Token pooling reads the prefix rows alone, so with `cls_only_last_block` the last block computes
        only those; but not in a scanned stack (its blocks are one module), nor while intermediates
        are recorded (attention maps should show every query). FLOP counts ask this too.
        """
        if (self.pool != "tok" or not self.cls_only_last_block or self.scan
                or recording_intermediates):
            return None
        return self.num_prefix_tokens()

    def check_input_shape(self, image_shape) -> None:
        """Raises ValueError for inputs this configuration cannot take (no compilation needed)."""
        size, patch = self.dims()
        check_heads(size.width, size.num_heads)
        model_kernels.check(self.kernels)
        if len(image_shape) != 3:
            raise ValueError(f"images must be [batch, height, width, channels]; got a single image "
                             f"shape of rank {len(image_shape)}: {tuple(image_shape)}")
        height, width = image_shape[:2]
        if patch <= 0 or height % patch or width % patch:
            raise ValueError(
                f"image size {height}x{width} is not divisible by patch_size={patch}; resize the images "
                f"to a multiple of {patch} (e.g. {(height // max(patch, 1) + 1) * patch}) or choose a "
                f"patch size that divides {height} and {width}")
        if self.pool not in ("tok", "gap", "map"):
            raise ValueError(f"unknown pool {self.pool!r}; choose 'tok' (CLS token), 'gap' or 'map'")
        if self.distillation_token and self.pool != "tok":
            raise ValueError(f"distillation_token=True needs pool='tok' (the distillation token sits beside "
                             f"the CLS token, and the heads read both); got pool={self.pool!r}")
        if self.num_classes == 0 and self.distillation_token:
            raise ValueError("num_classes=0 (no head) cannot go with distillation_token=True, whose second head "
                             "is the point of the token")
        if self.posemb not in POSEMB_KINDS:
            raise ValueError(f"unknown posemb {self.posemb!r}; choose one of {POSEMB_KINDS}")
        if self.resnet is not None:
            depths, _ = bit.parse_resnet(self.resnet, bit.HYBRID_DEPTHS)
            stride = bit.hybrid_stride(depths)
            if patch % stride:
                raise ValueError(f"the {self.resnet} hybrid has output stride {stride}; patch_size={patch} "
                                 f"must be a multiple of it (e.g. {stride} or {2 * stride})")

    @nn.compact
    def __call__(self, images, *, train=False):
        self.check_input_shape(images.shape[1:])
        size, patch = self.dims()
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        x = images.astype(self.dtype)
        if self.resnet is not None:
            depths, width_factor = bit.parse_resnet(self.resnet, bit.HYBRID_DEPTHS)
            x = bit.hybrid_backbone(x, depths, width_factor, **dtypes)
            patch //= bit.hybrid_stride(depths)
        x = PatchEmbedding(size.width, patch, name="embedding", use_bias=self.patch_bias, **dtypes)(x)
        batch, rows, cols, width = x.shape
        x = jnp.reshape(x, (batch, rows * cols, width))

        x = self._prepend_tokens(x)
        num_prefix = self.num_prefix_tokens()

        output_tokens = self.last_block_rows(
            recording_intermediates=self.is_mutable_collection("intermediates"))
        x = Encoder(
            depth=size.depth, mlp_dim=size.mlp_dim, num_heads=size.num_heads,
            dropout_rate=self.dropout_rate, attention_dropout_rate=self.attention_dropout_rate,
            droppath_rate=self.droppath_rate, norm=self.norm, norm_position=self.norm_position,
            scan=self.scan, remat_policy=self.remat_policy,
            attention_implementation=self.attention_implementation, kernels=tuple(self.kernels),
            posemb=self.posemb,
            posemb_grid=(rows, cols), num_prefix_tokens=num_prefix, output_tokens=output_tokens,
            posemb_table_grid=self.posemb_table_grid, pre_norm=self.pre_norm, norm_epsilon=self.norm_epsilon,
            activation=self.activation, name="Transformer", **dtypes,
        )(x, train=train)

        if self.pool == "tok":
            x = x[:, :num_prefix]  # [b, 1, width], or [b, 2, width] with the distillation token
        elif self.pool == "gap":
            x = jnp.mean(x, axis=1, keepdims=True)
        else:
            x = MAPHead(size.num_heads, size.mlp_dim, norm_epsilon=self.norm_epsilon, activation=self.activation,
                        name="MAPHead_0", **dtypes)(x)[:, None]
        return self._heads(x, train)

    def _token(self, name: str, init, width: int, batch: int, dtype):
        """A learned [1, 1, width] token parameter, broadcast to [batch, 1, width]."""
        token = self.param(name, nn.with_logical_partitioning(init, (None, None, "embed")), (1, 1, width),
                           self.param_dtype)
        return jnp.broadcast_to(token.astype(dtype), (batch, 1, width))

    def _prepend_tokens(self, x):
        """[b, patches, width] -> [b, prefix + patches, width]: CLS first, then the distillation token."""
        if self.pool != "tok":
            return x
        batch, _, width = x.shape
        tokens = [self._token("cls", nn.initializers.zeros, width, batch, x.dtype)]
        if self.distillation_token:
            # Not zeros like CLS: a random start keeps the two tokens apart from the first step (as timm's).
            tokens.append(self._token("dist", nn.initializers.truncated_normal(0.02), width, batch, x.dtype))
        return jnp.concatenate([*tokens, x], axis=1)

    def _heads(self, x, train: bool):
        """Logits from the pooled rows [b, rows, width]: one row, or CLS and distillation rows."""
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        if self.representation_size is not None:
            # One 'params' variable holding {kernel, bias} rather than an nn.Dense child: the parameter
            # path is the official `pre_logits/{kernel,bias}`, and the name stays free for the sow
            # below (Flax forbids a variable named like a child module).
            layer = self.param("pre_logits", _dense_init, x.shape[-1], self.representation_size,
                               self.param_dtype)
            x, kernel, bias = nn.dtypes.promote_dtype(x, layer["kernel"], layer["bias"], dtype=self.dtype)
            x = jnp.tanh(x @ kernel + bias)
        # With the distillation token, the features are the mean of both rows (timm's pre_logits).
        self.sow("intermediates", "pre_logits", jnp.mean(x, axis=1))
        if self.num_classes == 0:
            return x[:, 0]
        head_init = nn.initializers.zeros if self.head_zero_init else nn.initializers.lecun_normal()
        logits = nn.Dense(self.num_classes, kernel_init=head_init, use_bias=self.head_bias, name="head",
                          **dtypes)(x[:, 0])
        logits = logits.astype(jnp.float32)
        if not self.distillation_token:
            return logits
        logits_dist = nn.Dense(self.num_classes, kernel_init=head_init, use_bias=self.head_bias, name="head_dist",
                               **dtypes)(x[:, 1])
        logits_dist = logits_dist.astype(jnp.float32)
        return (logits, logits_dist) if train else (logits + logits_dist) / 2
