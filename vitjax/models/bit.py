"""BiT ResNet-v2 (Kolesnikov et al. 2020) and the ResNet backbone of the R50+ViT hybrid.

Both use weight-standardised convolutions followed by GroupNorm (32 groups), so nothing depends on
batch statistics: results do not change with the per-device batch size.

BiT units are pre-activation bottlenecks (norm -> ReLU -> conv, three times, projection taken from
the pre-activated input); the network ends with norm, ReLU, global average pooling and a head.
The hybrid's units (ViT paper, appendix) are post-activation bottlenecks (conv -> norm -> ReLU) with
stage 4 removed and its layers moved into stage 3: R50 -> stages (3, 4, 9), output stride 16.

Padding follows the official releases so their weights give the published outputs: BiT pads
symmetrically (3 for the 7x7 root, 1 for 3x3 convs, then a zero pad of 1 before a VALID max-pool);
the hybrid uses TensorFlow's SAME padding.
"""
import re
from typing import Any, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

BIT_DEPTHS = {26: (2, 2, 2, 2), 50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}
HYBRID_DEPTHS = {26: (2, 2, 2, 2), 50: (3, 4, 9)}


def parse_resnet(variant: str, table=BIT_DEPTHS) -> tuple[tuple[int, ...], int]:
    """'R50x1' -> ((3, 4, 6, 3), 1); 'R50' means width multiplier 1."""
    match = re.fullmatch(r"R(\d+)(?:x(\d+))?", variant or "")
    if not match or int(match.group(1)) not in table or not 1 <= int(match.group(2) or 1) <= 4:
        names = ", ".join(f"R{d}x{w}" for d in table for w in (1, 2, 3, 4))
        raise ValueError(f"unknown ResNet variant {variant!r}; choose one of {names}")
    return table[int(match.group(1))], int(match.group(2) or 1)


def standardize(kernel, eps):
    """Zero mean and unit variance per output channel, over (height, width, input channels)."""
    mean = jnp.mean(kernel, axis=(0, 1, 2), keepdims=True)
    var = jnp.var(kernel, axis=(0, 1, 2), keepdims=True)
    return (kernel - mean) * jax.lax.rsqrt(var + eps)


class StdConv(nn.Module):
    """A bias-free convolution whose kernel is weight-standardised at every use."""
    features: int
    kernel_size: int
    strides: int = 1
    padding: Any = "SAME"
    eps: float = 1e-8
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        shape = (self.kernel_size, self.kernel_size, x.shape[-1], self.features)
        kernel = self.param("kernel", nn.with_logical_partitioning(
            nn.initializers.he_normal(), (None, None, "conv_in", "conv_out")), shape, self.param_dtype)
        kernel = standardize(kernel.astype(jnp.float32), self.eps)
        x, kernel = nn.dtypes.promote_dtype(x, kernel, dtype=self.dtype)
        padding = self.padding
        if isinstance(padding, int):
            padding = ((padding, padding), (padding, padding))
        return jax.lax.conv_general_dilated(
            x, kernel, (self.strides, self.strides), padding,
            dimension_numbers=("NHWC", "HWIO", "NHWC"))


def group_norm(name, groups, dtype, param_dtype, **kw):
    # torch's GroupNorm eps (1e-5), which the official BiT PyTorch release and timm use.
    return nn.GroupNorm(num_groups=groups, epsilon=1e-5, dtype=dtype, param_dtype=param_dtype, name=name, **kw)


class PreActBottleneck(nn.Module):
    """BiT unit: x + conv_c(relu(gn_c(conv_b(relu(gn_b(conv_a(relu(gn_a(x))))))))), stride in conv_b."""
    features: int
    strides: int = 1
    norm_groups: int = 32
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        dtypes = dict(groups=self.norm_groups, dtype=self.dtype, param_dtype=self.param_dtype)
        convs = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        out_features = 4 * self.features
        preact = nn.relu(group_norm("norm_a", **dtypes)(x))
        shortcut = x
        if self.strides != 1 or x.shape[-1] != out_features:
            shortcut = StdConv(out_features, 1, self.strides, padding=0, name="conv_proj", **convs)(preact)
        y = StdConv(self.features, 1, padding=0, name="conv_a", **convs)(preact)
        y = nn.relu(group_norm("norm_b", **dtypes)(y))
        y = StdConv(self.features, 3, self.strides, padding=1, name="conv_b", **convs)(y)
        y = nn.relu(group_norm("norm_c", **dtypes)(y))
        y = StdConv(out_features, 1, padding=0, name="conv_c", **convs)(y)
        return shortcut + y


class ResNetStage(nn.Module):
    """`units` bottleneck units of one width; the first one strides and projects the shortcut."""
    unit: type
    units: int
    features: int
    first_stride: int
    unit_name: str  # official checkpoints number BiT units 'unit01', hybrid ones 'unit1'
    norm_groups: int = 32
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        for i in range(self.units):
            x = self.unit(self.features, self.first_stride if i == 0 else 1, self.norm_groups, dtype=self.dtype,
                          param_dtype=self.param_dtype, name=self.unit_name.format(i + 1))(x)
        return x


class BiT(nn.Module):
    """BiT ResNet-v2: `BiT(num_classes=1000, variant="R50x1")`.

    `stem="imagenet"` is the published root (7x7/2 conv, zero pad, 3x3/2 max-pool: stride 4).
    `stem="small"` is a 3x3/1 conv with no pooling, for 28x28 or 32x32 inputs, where a stride-4 root
    would leave 7x7 maps after the first stage and 1x1 after the last.
    `width` overrides the root width (64 x the variant's multiplier) and `norm_groups` the GroupNorm
    group count (32), for narrow laptop-scale ResNets; the published models use neither.
    """
    num_classes: int
    variant: str = "R50x1"
    stem: str = "imagenet"
    width: int | None = None
    norm_groups: int = 32
    head_zero_init: bool = True
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, images, *, train=False):
        del train  # GroupNorm and no dropout: training and inference compute the same function.
        depths, width_factor = parse_resnet(self.variant)
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        root = self.width or 64 * width_factor
        if root % self.norm_groups:
            raise ValueError(f"BiT width {root} is not divisible by norm_groups={self.norm_groups}; choose a "
                             f"width that is a multiple of the group count, or fewer groups")
        x = images.astype(self.dtype)
        if self.stem == "imagenet":
            x = StdConv(root, 7, 2, padding=3, name="root_conv", **dtypes)(x)
            x = jnp.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
            x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="VALID")
        elif self.stem == "small":
            x = StdConv(root, 3, 1, padding=1, name="root_conv", **dtypes)(x)
        else:
            raise ValueError(f"unknown BiT stem {self.stem!r}; choose 'imagenet' or 'small'")
        for stage, units in enumerate(depths):
            x = ResNetStage(PreActBottleneck, units, root * 2 ** stage, 1 if stage == 0 else 2,
                            "unit{:02d}", self.norm_groups, name=f"block{stage + 1}", **dtypes)(x)
        x = nn.relu(group_norm("norm", self.norm_groups, **dtypes)(x))
        x = self.sow_features(jnp.mean(x, axis=(1, 2)))
        head_init = nn.initializers.zeros if self.head_zero_init else nn.initializers.lecun_normal()
        return nn.Dense(self.num_classes, kernel_init=head_init, name="head", **dtypes)(x)

    def sow_features(self, features):
        self.sow("intermediates", "pre_logits", features)
        return features


class PostActBottleneck(nn.Module):
    """Hybrid unit: relu(shortcut + gn3(conv3(relu(gn2(conv2(relu(gn1(conv1(x))))))))), stride in conv2."""
    features: int
    strides: int = 1
    norm_groups: int = 32
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x):
        dtypes = dict(groups=self.norm_groups, dtype=self.dtype, param_dtype=self.param_dtype)
        convs = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        out_features = 4 * self.features
        shortcut = x
        if self.strides != 1 or x.shape[-1] != out_features:
            shortcut = StdConv(out_features, 1, self.strides, name="conv_proj", **convs)(x)
            shortcut = group_norm("gn_proj", **dtypes)(shortcut)
        y = nn.relu(group_norm("gn1", **dtypes)(StdConv(self.features, 1, name="conv1", **convs)(x)))
        y = StdConv(self.features, 3, self.strides, name="conv2", **convs)(y)
        y = nn.relu(group_norm("gn2", **dtypes)(y))
        y = StdConv(out_features, 1, name="conv3", **convs)(y)
        # Zero-initialised last norm: each unit starts as the identity (Goyal et al. 2017).
        y = group_norm("gn3", **dtypes, scale_init=nn.initializers.zeros)(y)
        return nn.relu(shortcut + y)


def hybrid_backbone(x, depths: Sequence[int], width_factor: int, dtype, param_dtype):
    """The hybrid's ResNet, built in the caller's scope so parameters sit at the official paths
    (`conv_root`, `gn_root`, `block{i}/unit{j}/...`). Returns features at stride 4 * 2**(stages-1)."""
    dtypes = dict(dtype=dtype, param_dtype=param_dtype)
    width = 64 * width_factor
    x = StdConv(width, 7, 2, name="conv_root", **dtypes)(x)
    x = nn.relu(group_norm("gn_root", 32, **dtypes)(x))
    x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
    for stage, units in enumerate(depths):
        x = ResNetStage(PostActBottleneck, units, width * 2 ** stage, 1 if stage == 0 else 2,
                        "unit{}", name=f"block{stage + 1}", **dtypes)(x)
    return x


def hybrid_stride(depths: Sequence[int]) -> int:
    return 4 * 2 ** (len(depths) - 1)
