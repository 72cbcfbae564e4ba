"""Dual encoders (CLIP, Radford et al. 2021; SigLIP, Zhai et al. 2023): an image tower and a text tower,
each pooled to one embedding, compared by cosine similarity with a learned temperature.

    model = DualEncoder(image=ViT(num_classes=512, ...), text=TextTransformer(out_dim=512, ...))
    out = model.apply(variables, images, tokens)          # images [N, H, W, C] float, tokens [M, L] int
    logits = logits_per_image(out)                        # [N, M]: image i against text j

The image tower is vitjax's ViT: CLIP's with a class token, its pre-norm (`pre_norm=True`) and a head
without bias as the projection; SigLIP's with MAP pooling and no head (`num_classes=0`). The text tower
is vitjax/models/text.py. `clip(...)` and `siglip(...)` build the published layouts; their defaults
are transformers' `CLIPConfig()` and `SiglipConfig()` (ViT-B/32 with a width-512 text tower, and
ViT-B/16 at 224 with a width-768 one).

The model returns the L2-normalised embeddings and the learned scalars, not the logits: the losses of
vitjax/objectives/contrastive.py score them in blocks across devices, never forming the global
similarity matrix. `logit_scale` is the log of the inverse temperature (logits are exp(logit_scale) *
cosine); `logit_bias` (SigLIP only) is added after. Initial values are the papers': CLIP log(1 / 0.07);
SigLIP log(10) and -10, which keep the sigmoid loss's many negatives from swamping the first steps
(transformers' SigLIP starts both at 0; its weights are converted as they are).
"""
import math
from typing import Any, Literal

import flax.linen as nn
import jax.numpy as jnp

from vitjax.models.text import TextTransformer
from vitjax.models.vit import ViT

CLIP_LOGIT_SCALE = math.log(1 / 0.07)
SIGLIP_LOGIT_SCALE = math.log(10.0)
SIGLIP_LOGIT_BIAS = -10.0


def l2_normalize(x, axis: int = -1):
    """x / ||x||, in float32 (embeddings are compared by cosine)."""
    x = x.astype(jnp.float32)
    return x / jnp.linalg.norm(x, axis=axis, keepdims=True)


class DualEncoder(nn.Module):
    """Image tower `image` and text tower `text`, each ending in its embedding (the same width), and the
    learned `logit_scale` (and `logit_bias` unless `logit_bias_init` is None). See the module docstring.

    `model.apply(v, images, method="embed_images")` and `method="embed_texts"` run one tower alone
    (zero-shot classifiers embed their prompts once). `tokens` may come with `valid` [M, L] booleans,
    False at padding."""
    image: nn.Module
    text: nn.Module
    logit_scale_init: float = CLIP_LOGIT_SCALE
    logit_bias_init: float | None = None

    def embed_images(self, images, *, train=False):
        """[N, D] unit-norm image embeddings."""
        return l2_normalize(self.image(images, train=train))

    def embed_texts(self, tokens, valid=None, *, train=False):
        """[M, D] unit-norm text embeddings."""
        return l2_normalize(self.text(tokens, valid, train=train))

    @nn.compact
    def __call__(self, images, tokens, valid=None, *, train=False) -> dict[str, Any]:
        """{'image_embeds' [N, D], 'text_embeds' [M, D], 'logit_scale' [], and 'logit_bias' [] (SigLIP)}."""
        out = {"image_embeds": self.embed_images(images, train=train),
               "text_embeds": self.embed_texts(tokens, valid, train=train),
               "logit_scale": self.param("logit_scale", nn.initializers.constant(self.logit_scale_init), ())}
        if self.logit_bias_init is not None:
            out["logit_bias"] = self.param("logit_bias", nn.initializers.constant(self.logit_bias_init), ())
        return out


def pairwise_logits(image_embeds, text_embeds, logit_scale, logit_bias=None):
    """[N, M] exp(logit_scale) * image_embeds @ text_embeds.T (+ logit_bias): image rows, text columns."""
    logits = jnp.exp(logit_scale) * image_embeds @ text_embeds.T
    return logits if logit_bias is None else logits + logit_bias


def logits_per_image(out: dict[str, Any]):
    """`pairwise_logits` of `DualEncoder`'s output, as transformers' `logits_per_image`."""
    return pairwise_logits(out["image_embeds"], out["text_embeds"], out["logit_scale"], out.get("logit_bias"))


def clip(*, image_size: int = 224, patch_size: int = 32, vision_width: int = 768, vision_depth: int = 12,
         vision_mlp_dim: int = 3072, vision_heads: int = 12, text_width: int = 512, text_depth: int = 12,
         text_mlp_dim: int = 2048, text_heads: int = 8, vocab_size: int = 49408, max_length: int = 77,
         embed_dim: int = 512, eos_token_id: int = 49407, norm_epsilon: float = 1e-5,
         activation: str = "quick_gelu", vision_pool: str = "tok", **dtypes) -> DualEncoder:
    """CLIP: a class-token ViT with a pre-norm and a bias-free projection; a causal text tower read at the
    end-of-text token (`eos_token_id` 2 means the legacy highest-id rule: vitjax/models/text.py)."""
    grid = image_size // patch_size
    image = ViT(num_classes=embed_dim, patch_size=patch_size, width=vision_width, depth=vision_depth,
                mlp_dim=vision_mlp_dim, num_heads=vision_heads, pool=vision_pool, posemb_table_grid=(grid, grid),
                head_bias=False, head_zero_init=False, activation=activation, norm_epsilon=norm_epsilon,
                patch_bias=False, pre_norm=True, **dtypes)
    text = TextTransformer(vocab_size=vocab_size, width=text_width, depth=text_depth, mlp_dim=text_mlp_dim,
                           num_heads=text_heads, max_length=max_length, out_dim=embed_dim, head_bias=False,
                           causal=True, pool="argmax" if eos_token_id == 2 else "eos", eos_token_id=eos_token_id,
                           activation=activation, norm_epsilon=norm_epsilon, **dtypes)
    return DualEncoder(image=image, text=text, logit_scale_init=CLIP_LOGIT_SCALE)


def siglip(*, image_size: int = 224, patch_size: int = 16, vision_width: int = 768, vision_depth: int = 12,
           vision_mlp_dim: int = 3072, vision_heads: int = 12, text_width: int = 768, text_depth: int = 12,
           text_mlp_dim: int = 3072, text_heads: int = 12, vocab_size: int = 32000, max_length: int = 64,
           embed_dim: int | None = None, norm_epsilon: float = 1e-6, activation: str = "gelu_tanh",
           vision_pool: str = "map", **dtypes) -> DualEncoder:
    """SigLIP: a ViT without class token, pooled by a MAP head (its output is the image embedding); a
    bidirectional text tower read at its last token, with a linear head to `embed_dim` (default: the
    text width, as transformers' `projection_size`). Another `vision_pool` ('tok': a class token read
    after the final norm, as vitjax's ViT) makes the image tower a vitjax ViT's encoder, which LiT locks."""
    if embed_dim not in (None, vision_width):
        raise ValueError(f"SigLIP's image embedding is its MAP head's output, {vision_width} wide: the text "
                         f"tower's embed_dim={embed_dim} must equal vision_width")
    grid = image_size // patch_size
    image = ViT(num_classes=0, patch_size=patch_size, width=vision_width, depth=vision_depth,
                mlp_dim=vision_mlp_dim, num_heads=vision_heads, pool=vision_pool, posemb_table_grid=(grid, grid),
                activation=activation, norm_epsilon=norm_epsilon, **dtypes)
    text = TextTransformer(vocab_size=vocab_size, width=text_width, depth=text_depth, mlp_dim=text_mlp_dim,
                           num_heads=text_heads, max_length=max_length, out_dim=embed_dim or text_width,
                           pool="last", activation=activation, norm_epsilon=norm_epsilon, **dtypes)
    return DualEncoder(image=image, text=text, logit_scale_init=SIGLIP_LOGIT_SCALE,
                       logit_bias_init=SIGLIP_LOGIT_BIAS)


class ConfiguredDualEncoder(nn.Module):
    """A dual encoder from flat fields, as `vitjax train` builds one (`model_name='dual_encoder'`,
    config.model holding these fields): `clip(...)` or `siglip(...)` by `layout`, tiny by default (a
    48x48 image tower and a width-64 text tower for the caption data, vitjax/data/captions.py).

    Its variables are those of the DualEncoder it wraps (`towers()`; flax's share_scope), so
    `towers().apply(variables, ...)`, the converters of vitjax/interop/hf_dual_encoder.py and this
    module read the same tree. `model.init(key, images)` works without tokens, as the trainer
    initialises every model: a zero text of `max_length` tokens stands in. `eos_token_id` 1 is
    vitjax/data/tokenizer.py's end-of-text token, which CLIP's layout reads. `vision_pool` and
    `activation` (None: the layout's) let the image tower be a vitjax ViT's encoder ('tok', 'gelu'), the
    tower a locked-image run (LiT) loads from a vitjax ViT, MAE or DINO run
    (vitjax/interop/lit_init.py); `activation` is both towers'."""
    layout: Literal["clip", "siglip"] = "siglip"
    image_size: int = 48
    patch_size: int = 8
    vision_width: int = 64
    vision_depth: int = 2
    vision_mlp_dim: int = 128
    vision_heads: int = 4
    text_width: int = 64
    text_depth: int = 2
    text_mlp_dim: int = 128
    text_heads: int = 4
    vocab_size: int = 64
    max_length: int = 12
    embed_dim: int | None = None  # None: the layout's (CLIP: the text width; SigLIP: the vision width)
    eos_token_id: int = 1
    vision_pool: str | None = None  # None: the layout's (CLIP 'tok', SigLIP 'map')
    activation: str | None = None  # None: the layout's (CLIP 'quick_gelu', SigLIP 'gelu_tanh')
    kernels: tuple[str, ...] = ()  # names from vitjax/models/kernels.py, for both towers
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.nowrap
    def towers(self) -> DualEncoder:
        """The DualEncoder these fields describe (unbound when called from outside a module)."""
        shared = dict(image_size=self.image_size, patch_size=self.patch_size, vision_width=self.vision_width,
                      vision_depth=self.vision_depth, vision_mlp_dim=self.vision_mlp_dim,
                      vision_heads=self.vision_heads, text_width=self.text_width, text_depth=self.text_depth,
                      text_mlp_dim=self.text_mlp_dim, text_heads=self.text_heads, vocab_size=self.vocab_size,
                      max_length=self.max_length, kernels=tuple(self.kernels), dtype=self.dtype,
                      param_dtype=self.param_dtype)
        shared.update({name: value for name, value in (("vision_pool", self.vision_pool),
                                                       ("activation", self.activation)) if value is not None})
        if self.layout == "clip":
            return clip(embed_dim=self.embed_dim or self.text_width, eos_token_id=self.eos_token_id, **shared)
        if self.layout == "siglip":
            return siglip(embed_dim=self.embed_dim, **shared)
        raise ValueError(f"model.layout={self.layout!r}: choose 'clip' or 'siglip'")

    def setup(self):
        self.encoder = self.towers()
        nn.share_scope(self, self.encoder)

    def embed_images(self, images, *, train=False):
        return self.encoder.embed_images(images, train=train)

    def embed_texts(self, tokens, valid=None, *, train=False):
        return self.encoder.embed_texts(tokens, valid, train=train)

    def __call__(self, images, tokens=None, valid=None, *, train=False) -> dict[str, Any]:
        if tokens is None:
            tokens = jnp.zeros((images.shape[0], self.max_length), jnp.int32)
        return self.encoder(images, tokens, valid, train=train)


def example_inputs(model: DualEncoder, batch: int = 1, channels: int = 3):
    """(images, tokens) of the sizes the towers were built for, zeros: for `init` and `jax.eval_shape`."""
    patch = model.image.dims()[1]
    rows, cols = model.image.posemb_table_grid
    return (jnp.zeros((batch, rows * patch, cols * patch, channels), jnp.float32),
            jnp.zeros((batch, model.text.max_length), jnp.int32))
