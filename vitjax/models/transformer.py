"""Transformer blocks and stacks: MLP, encoder block, decoder block, Encoder and Decoder.

An encoder block refines N tokens in four sub-operations (self-attention, add & norm, token-wise MLP,
add & norm); a decoder block has six (masked self-attention, add & norm, cross-attention into the
encoder output, add & norm, MLP, add & norm). ViT puts the norm before each sub-layer ("pre-norm",
with a final norm after the stack); the original Transformer after the residual sum ("post-norm").
Parameter names follow the official ViT checkpoints (`LayerNorm_0`, `MultiHeadDotProductAttention_0`,
`MlpBlock_0/Dense_0`, `encoderblock_{i}`, `encoder_norm`).
"""
from typing import Any, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from vitjax.models.attention import Implementation, MultiHeadAttention
from vitjax.models.layernorm import LayerNorm
from vitjax.models.posemb import AddPositionEmbedding, Kind as PosembKind

Norm = Literal["layernorm", "rmsnorm"]
NormPosition = Literal["pre", "post"]
# The MLP's nonlinearity: "gelu" (exact, ViT's), "gelu_tanh" (the tanh approximation, SigLIP's) or
# "quick_gelu" (x * sigmoid(1.702 x), OpenAI CLIP's).
Activation = Literal["gelu", "gelu_tanh", "quick_gelu"]
# The ready-made policies; the other names in jax.checkpoint_policies (save_only_these_names, ...) are
# factories that need arguments and fail when used as a policy.
REMAT_POLICIES = tuple(name for name in (
    "nothing_saveable", "everything_saveable", "dots_saveable", "checkpoint_dots",
    "dots_with_no_batch_dims_saveable", "checkpoint_dots_with_no_batch_dims")
    if hasattr(jax.checkpoint_policies, name))


def make_norm(kind: Norm, dtype, param_dtype, *, index: int = 0, name: str | None = None, kernels=(),
              epsilon: float = 1e-6):
    """LayerNorm (mean and variance over channels) or RMSNorm (root mean square only), eps 1e-6 unless
    given (CLIP's towers use 1e-5).

    Unnamed norms are called `LayerNorm_{index}` / `RMSNorm_{index}`, as in the official checkpoints.
    `kernels`: names from vitjax/models/kernels.py ('layernorm_vjp' applies here).
    """
    if kind == "layernorm":
        return LayerNorm(epsilon=epsilon, dtype=dtype, param_dtype=param_dtype, name=name or f"LayerNorm_{index}",
                         hand_vjp="layernorm_vjp" in kernels)
    if kind == "rmsnorm":
        return nn.RMSNorm(epsilon=epsilon, dtype=dtype, param_dtype=param_dtype, name=name or f"RMSNorm_{index}")
    raise ValueError(f"unknown norm {kind!r}; choose 'layernorm' or 'rmsnorm'")


def gelu(x):
    """The exact GELU, x * Phi(x), written with erf as timm's (torch's) is: `jax.nn.gelu` uses erfc,
    which XLA:CPU expands into a longer polynomial."""
    return x * (0.5 + 0.5 * jax.lax.erf(x * jnp.asarray(2 ** -0.5, x.dtype)))


def quick_gelu(x):
    """x * sigmoid(1.702 x): the GELU approximation OpenAI's CLIP was trained with."""
    return x * jax.nn.sigmoid(x * jnp.asarray(1.702, x.dtype))


def gelu_tanh(x):
    """The tanh approximation of the GELU (torch's `approximate='tanh'`), SigLIP's."""
    return jax.nn.gelu(x, approximate=True)


ACTIVATIONS = {"gelu": gelu, "gelu_tanh": gelu_tanh, "quick_gelu": quick_gelu}


def activation_fn(name: Activation):
    """The function of an `Activation` name; ValueError naming the choices otherwise."""
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; choose one of {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]


def _is_zero(rate) -> bool:
    """True for a Python number equal to 0; False for traced rates (scanned stacks) and others."""
    return isinstance(rate, (int, float)) and rate == 0


class DropPath(nn.Module):
    """Stochastic depth: drops a whole residual branch per sample, rescaling the survivors."""
    deterministic: bool = True

    @nn.compact
    def __call__(self, x, rate):
        # A rate known to be 0 at trace time (a Python number) needs no random draw and no masking pass.
        if self.deterministic or _is_zero(rate):
            return x
        keep = 1.0 - jnp.asarray(rate, jnp.float32)
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        mask = jax.random.bernoulli(self.make_rng("dropout"), keep, shape)
        return jnp.where(mask, x / keep.astype(x.dtype), jnp.zeros_like(x))


class MlpBlock(nn.Module):
    """Token-wise Dense -> GELU -> Dropout -> Dense -> Dropout, applied to each row alone.

    `activation`: another nonlinearity in place of the exact GELU (CLIP's, SigLIP's: `Activation`)."""
    mlp_dim: int
    dropout_rate: float = 0.0
    deterministic: bool = True
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32
    activation: Activation = "gelu"

    @nn.compact
    def __call__(self, x):
        width = x.shape[-1]
        dense = dict(dtype=self.dtype, param_dtype=self.param_dtype, bias_init=nn.initializers.normal(stddev=1e-6))
        x = nn.Dense(self.mlp_dim, kernel_init=nn.with_logical_partitioning(
            nn.initializers.xavier_uniform(), ("embed", "mlp")), name="Dense_0", **dense)(x)
        # [batch, length, width], or Swin's tokens flattened to [rows, width].
        x = nn.with_logical_constraint(x, ("batch", "length", "mlp") if x.ndim == 3 else ("batch", "mlp"))
        # Exact (erf) GELU by default, as in the paper's definition and timm; tanh-approximate differs by ~1e-3.
        x = activation_fn(self.activation)(x)
        x = nn.Dropout(self.dropout_rate)(x, deterministic=self.deterministic)
        x = nn.Dense(width, kernel_init=nn.with_logical_partitioning(
            nn.initializers.xavier_uniform(), ("mlp", "embed")), name="Dense_1", **dense)(x)
        return nn.Dropout(self.dropout_rate)(x, deterministic=self.deterministic)


class _BlockBase(nn.Module):
    mlp_dim: int
    num_heads: int
    dropout_rate: float = 0.0
    attention_dropout_rate: float = 0.0
    norm: Norm = "layernorm"
    norm_position: NormPosition = "pre"
    deterministic: bool = True
    attention_implementation: Implementation = "auto"
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32
    kernels: tuple[str, ...] = ()  # names from vitjax/models/kernels.py
    norm_epsilon: float = 1e-6
    activation: Activation = "gelu"

    def _attention(self, index):
        return MultiHeadAttention(
            num_heads=self.num_heads, dropout_rate=self.attention_dropout_rate, dtype=self.dtype,
            param_dtype=self.param_dtype, implementation=self.attention_implementation,
            heads_major="heads_major" in self.kernels, name=f"MultiHeadDotProductAttention_{index}")

    def _residual(self, x, norm_index, sublayer, droppath_rate, rows=None):
        """x + sublayer(norm(x)) (pre-norm) or norm(x + sublayer(x)) (post-norm).

        `rows`: the sublayer returns only the first `rows` tokens, so only those are kept.
        """
        norm = make_norm(self.norm, self.dtype, self.param_dtype, index=norm_index, kernels=self.kernels,
                         epsilon=self.norm_epsilon)
        drop = nn.Dropout(self.dropout_rate)
        droppath = DropPath(self.deterministic)
        if self.norm_position == "pre":
            y = drop(sublayer(norm(x)), deterministic=self.deterministic)
            return x[:, :rows] + droppath(y, droppath_rate)
        if self.norm_position == "post":
            y = drop(sublayer(x), deterministic=self.deterministic)
            return norm(x[:, :rows] + droppath(y, droppath_rate))
        raise ValueError(f"unknown norm_position {self.norm_position!r}; choose 'pre' or 'post'")

    def _mlp(self):
        return MlpBlock(self.mlp_dim, self.dropout_rate, self.deterministic, self.dtype,
                        self.param_dtype, self.activation, name="MlpBlock_0")


class EncoderBlock(_BlockBase):
    """Self-attention and MLP, each with a residual connection and a norm.

    `output_tokens`: compute only the first N output tokens. Every token still serves as a key and
    value, so those N rows equal the full block's; the others would only be thrown away (a ViT that
    classifies from its CLS token reads one row of its last block). Norms and the MLP act on each
    token alone, so the saving is exact: for the last block, the queries, output projection and MLP
    of all but N tokens.
    """
    output_tokens: int | None = None

    @nn.compact
    def __call__(self, x, droppath_rate=0.0, mask=None):
        x = nn.with_logical_constraint(x, ("batch", "length", "embed"))
        attention = self._attention(0)
        rows = self.output_tokens
        if rows is None:
            attend = lambda y: attention(y, mask=mask, deterministic=self.deterministic)
        else:
            if mask is not None and mask.shape[-2] > 1:  # a per-query mask keeps its first rows
                mask = mask[..., :rows, :]
            attend = lambda y: attention(y[:, :rows], y, mask=mask, deterministic=self.deterministic)
        x = self._residual(x, 0, attend, droppath_rate, rows)
        return self._residual(x, 1, self._mlp(), droppath_rate)


class DecoderBlock(_BlockBase):
    """Causal self-attention, cross-attention into `encoded`, and MLP; each with residual and norm."""

    @nn.compact
    def __call__(self, x, encoded, droppath_rate=0.0, self_mask=None, cross_mask=None):
        self_attention, cross_attention = self._attention(0), self._attention(1)
        x = self._residual(
            x, 0, lambda y: self_attention(y, mask=self_mask, is_causal=True,
                                           deterministic=self.deterministic), droppath_rate)
        x = self._residual(
            x, 1, lambda y: cross_attention(y, encoded, mask=cross_mask,
                                            deterministic=self.deterministic), droppath_rate)
        return self._residual(x, 2, self._mlp(), droppath_rate)


class _StackedDecoderBlock(DecoderBlock):
    """DecoderBlock with the (x, droppath_rate, *args) call order that `_run_layers` uses."""

    def __call__(self, x, droppath_rate, encoded, self_mask=None, cross_mask=None):
        return super().__call__(x, encoded, droppath_rate, self_mask, cross_mask)


def _checkpointed(block_cls, remat_policy, static_rate):
    if remat_policy is None:
        return block_cls
    if remat_policy not in REMAT_POLICIES:
        raise ValueError(f"unknown remat_policy {remat_policy!r}; choose one of jax.checkpoint_policies: "
                         f"{', '.join(REMAT_POLICIES)}")
    # A static drop-path rate (argument 2; `self` counts as 0) stays a Python number under remat, so a
    # zero rate still skips DropPath; scanned stacks with stochastic depth pass traced rates instead.
    static = (2,) if static_rate else ()
    return nn.remat(block_cls, policy=getattr(jax.checkpoint_policies, remat_policy), static_argnums=static)


def _run_layers(block_cls, block_kwargs, depth, x, droppath_rate, *args, scan, remat_policy, name,
                last_block_kwargs=None):
    """Applies `depth` blocks, unrolled (`{name}_{i}`) or as one `nn.scan` (`{name}`, stacked params).

    Drop-path rates grow linearly from 0 at the first block to `droppath_rate` at the last.
    `last_block_kwargs` are extra fields for the last block; unrolled stacks only (a scan's blocks
    are one module).
    """
    rates = np.linspace(0.0, droppath_rate, depth, dtype=np.float32)
    block_cls = _checkpointed(block_cls, remat_policy, static_rate=not scan or droppath_rate == 0)
    if not scan:
        for i in range(depth):
            extra = (last_block_kwargs or {}) if i == depth - 1 else {}
            x = block_cls(name=f"{name}_{i}", **block_kwargs, **extra)(x, float(rates[i]), *args)
        return x
    if droppath_rate == 0:
        # Without stochastic depth the rate stays a Python 0.0 inside the scan, so the blocks skip it.
        step, xs = (lambda block, carry, _: (block(carry, 0.0, *args), None)), None
    else:
        step, xs = (lambda block, carry, rate: (block(carry, rate, *args), None)), jnp.asarray(rates)
    body = nn.scan(
        step,
        variable_axes={"params": 0, "intermediates": 0},
        split_rngs={"params": True, "dropout": True},
        length=depth,
        metadata_params={nn.PARTITION_NAME: "layers"})
    x, _ = body(block_cls(name=name, **block_kwargs), x, xs)
    return x


class _StackBase(nn.Module):
    depth: int
    mlp_dim: int
    num_heads: int
    dropout_rate: float = 0.0
    attention_dropout_rate: float = 0.0
    droppath_rate: float = 0.0
    norm: Norm = "layernorm"
    norm_position: NormPosition = "pre"
    scan: bool = False
    remat_policy: str | None = None
    attention_implementation: Implementation = "auto"
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32
    kernels: tuple[str, ...] = ()  # names from vitjax/models/kernels.py
    norm_epsilon: float = 1e-6
    activation: Activation = "gelu"

    def _block_kwargs(self, train):
        return dict(mlp_dim=self.mlp_dim, num_heads=self.num_heads, dropout_rate=self.dropout_rate,
                    attention_dropout_rate=self.attention_dropout_rate, norm=self.norm,
                    norm_position=self.norm_position, deterministic=not train,
                    attention_implementation=self.attention_implementation, dtype=self.dtype,
                    param_dtype=self.param_dtype, kernels=self.kernels, norm_epsilon=self.norm_epsilon,
                    activation=self.activation)

    def _final_norm(self, x, name):
        # Post-norm stacks already end on a norm; pre-norm ones need one after the last residual.
        if self.norm_position == "post":
            return x
        return make_norm(self.norm, self.dtype, self.param_dtype, name=name, kernels=self.kernels,
                         epsilon=self.norm_epsilon)(x)


class Encoder(_StackBase):
    """Position embedding, dropout, `depth` encoder blocks and a final norm (pre-norm).

    `output_tokens`: return only the first N tokens. An unrolled stack then computes only those in
    its last block (see EncoderBlock); a scanned one computes all and slices before the final norm.
    `pre_norm`: one more norm (`encoder_prenorm`) after the position embedding, before the first block,
    as CLIP's image tower has (its `pre_layrnorm`).
    """
    posemb: PosembKind = "none"
    posemb_grid: tuple[int, int] | None = None
    num_prefix_tokens: int = 0
    output_tokens: int | None = None
    posemb_table_grid: tuple[int, int] | None = None  # a learned table's stored grid (AddPositionEmbedding)
    pre_norm: bool = False

    @nn.compact
    def __call__(self, x, *, train=False, mask=None):
        x = AddPositionEmbedding(self.posemb, self.posemb_grid, self.num_prefix_tokens,
                                 self.param_dtype, table_grid=self.posemb_table_grid, name="posembed_input")(x)
        if self.pre_norm:
            x = make_norm(self.norm, self.dtype, self.param_dtype, name="encoder_prenorm", kernels=self.kernels,
                          epsilon=self.norm_epsilon)(x)
        x = nn.Dropout(self.dropout_rate)(x, deterministic=not train)
        x = _run_layers(EncoderBlock, self._block_kwargs(train), self.depth, x, self.droppath_rate,
                        mask, scan=self.scan, remat_policy=self.remat_policy, name="encoderblock",
                        last_block_kwargs={"output_tokens": self.output_tokens})
        return self._final_norm(x[:, :self.output_tokens], "encoder_norm")


class Decoder(_StackBase):
    """Position embedding, dropout, `depth` decoder blocks attending to `encoded`, and a final norm."""
    posemb: PosembKind = "sincos1d"

    @nn.compact
    def __call__(self, x, encoded, *, train=False, self_mask=None, cross_mask=None):
        x = AddPositionEmbedding(self.posemb, param_dtype=self.param_dtype, name="posembed_input")(x)
        x = nn.Dropout(self.dropout_rate)(x, deterministic=not train)
        x = _run_layers(_StackedDecoderBlock, self._block_kwargs(train), self.depth, x, self.droppath_rate,
                        encoded, self_mask, cross_mask, scan=self.scan,
                        remat_policy=self.remat_policy, name="decoderblock")
        return self._final_norm(x, "decoder_norm")
