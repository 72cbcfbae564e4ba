"""The text tower of a dual encoder (CLIP, SigLIP): token ids -> one embedding per text.

    text = TextTransformer(vocab_size=49408, width=512, depth=12, mlp_dim=2048, num_heads=8, max_length=77,
                           out_dim=512, head_bias=False, causal=True, pool="eos", eos_token_id=49407,
                           activation="quick_gelu", norm_epsilon=1e-5)            # CLIP's
    embeddings = text.apply(variables, tokens)                                     # tokens: int [N, L]

Token and learned position embeddings, vitjax's pre-norm transformer encoder (the ViT's blocks, with a
final norm), one token's output read as the text's, then an optional linear head. The position table
holds `max_length` rows and a text of L <= max_length tokens takes the first L, so texts need no
padding to the full length.

Which token is read (`pool`) follows the reference models:
  "argmax"  the position of the highest token id: OpenAI CLIP's rule (its end-of-text token has the
            highest id of the vocabulary); transformers keeps it for configs whose `eos_token_id` is 2.
  "eos"     the first position holding `eos_token_id` (transformers' CLIP otherwise; pad tokens may
            equal the end-of-text token, so the first one is the text's own). A text without it reads
            position 0, as transformers does.
  "last"    the last position: SigLIP's, whose texts are padded to a fixed length.
CLIP's tower is causal (`causal=True`): a token sees only those before it, so the end-of-text token
has read the whole text and nothing after it. `valid` ([N, L] bool, False for padding) also hides
padded tokens as keys, as an attention mask does in transformers.
"""
from typing import Any, Literal

import flax.linen as nn
import jax.numpy as jnp

from vitjax.models.attention import Implementation, causal_mask, check_heads, padding_mask
from vitjax.models.transformer import Activation, Encoder

Pool = Literal["argmax", "eos", "last"]
POOLS = ("argmax", "eos", "last")


def pooled_positions(tokens, pool: Pool, eos_token_id: int | None = None):
    """[N] int: the position each text of `tokens` [N, L] is read at (see the module docstring)."""
    if pool == "argmax":
        return jnp.argmax(tokens, axis=-1)
    if pool == "eos":
        if eos_token_id is None:
            raise ValueError("pool='eos' needs eos_token_id, the id of the end-of-text token")
        return jnp.argmax(tokens == eos_token_id, axis=-1)  # argmax of booleans: the first True
    if pool == "last":
        return jnp.full(tokens.shape[:1], tokens.shape[1] - 1)
    raise ValueError(f"unknown text pool {pool!r}; choose one of {POOLS}")


class TextTransformer(nn.Module):
    """Token ids [N, L] -> [N, out_dim] (or [N, width] with `out_dim=None`); see the module docstring.

    `head_bias=False`: the head has no bias (CLIP's `text_projection`). The embeddings start as
    transformers' do (normal, std 0.02 for tokens, 0.01 for positions); the blocks keep the ViT's
    initialisers."""
    vocab_size: int
    width: int
    depth: int
    mlp_dim: int
    num_heads: int
    max_length: int
    out_dim: int | None = None
    head_bias: bool = True
    causal: bool = False
    pool: Pool = "last"
    eos_token_id: int | None = None
    activation: Activation = "gelu"
    norm_epsilon: float = 1e-6
    dropout_rate: float = 0.0
    attention_dropout_rate: float = 0.0
    attention_implementation: Implementation = "auto"
    kernels: tuple[str, ...] = ()  # names from vitjax/models/kernels.py
    scan: bool = False
    remat_policy: str | None = None
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    def check_input_shape(self, token_shape) -> None:
        """Raises ValueError for token arrays this configuration cannot take."""
        check_heads(self.width, self.num_heads)
        if len(token_shape) != 2:
            raise ValueError(f"tokens must be [batch, length] integers; got shape {tuple(token_shape)}")
        if token_shape[1] > self.max_length:
            raise ValueError(f"texts of {token_shape[1]} tokens are longer than max_length={self.max_length}, "
                             f"the rows of the position table; cut them to {self.max_length}")
        if self.pool not in POOLS:
            raise ValueError(f"unknown text pool {self.pool!r}; choose one of {POOLS}")

    def attention_mask(self, tokens, valid=None):
        """Boolean mask broadcasting to [N, heads, L, L] (True: may attend), or None for no mask."""
        mask = causal_mask(tokens.shape[1]) if self.causal else None
        if valid is not None:
            keys = padding_mask(valid)
            mask = keys if mask is None else jnp.logical_and(mask, keys)
        return mask

    @nn.compact
    def __call__(self, tokens, valid=None, *, train=False):
        self.check_input_shape(tokens.shape)
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        x = nn.Embed(self.vocab_size, self.width, embedding_init=nn.initializers.normal(0.02),
                     name="token_embedding", **dtypes)(tokens)
        positions = self.param("pos_embedding", nn.initializers.normal(0.01), (self.max_length, self.width),
                               self.param_dtype)
        x = x + positions[:tokens.shape[1]].astype(x.dtype)
        x = Encoder(
            depth=self.depth, mlp_dim=self.mlp_dim, num_heads=self.num_heads, dropout_rate=self.dropout_rate,
            attention_dropout_rate=self.attention_dropout_rate, scan=self.scan, remat_policy=self.remat_policy,
            attention_implementation=self.attention_implementation, kernels=tuple(self.kernels), posemb="none",
            norm_epsilon=self.norm_epsilon, activation=self.activation, name="Transformer", **dtypes,
        )(x, train=train, mask=self.attention_mask(tokens, valid))
        rows = pooled_positions(tokens, self.pool, self.eos_token_id)
        x = jnp.take_along_axis(x, rows[:, None, None], axis=1)[:, 0]
        if self.out_dim is None:
            return x
        return nn.Dense(self.out_dim, use_bias=self.head_bias, name="head", **dtypes)(x)
