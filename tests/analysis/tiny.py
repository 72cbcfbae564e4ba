"""Tiny models with initial parameters: the analyses need no training to be exercised."""
import functools

import flax.linen as nn
import jax
import numpy as np

from vitjax.models import build

IMAGE_SHAPE = (16, 16, 3)
NUM_CLASSES = 4


def random_params(model, scale=0.3, seed=0):
    """Random draws of the right shapes. Much cheaper than model.init, whose XLA compile of the
    initialisers takes 15 s on a loaded 2-core machine; the analyses only need plausible numbers."""
    shapes = jax.eval_shape(model.init, jax.random.key(0), np.zeros((1, *IMAGE_SHAPE), np.float32))["params"]
    shapes = nn.meta.unbox(shapes)
    rng = np.random.default_rng(seed)

    def draw(path, s):
        noise = scale * rng.normal(size=s.shape)
        is_scale = getattr(path[-1], "key", None) == "scale"  # norm gains sit around one
        return (1.0 + noise if is_scale else noise).astype(s.dtype)
    return jax.tree_util.tree_map_with_path(draw, shapes)


def vit(**overrides):
    """A ViT of width 16, depth 2, 2 heads, patch 4 on 16x16 images (a 4x4 grid), and its params.

    Cached, so tests share one compilation per configuration; treat the params as read-only."""
    return _vit(tuple(sorted(overrides.items())))


@functools.lru_cache(maxsize=None)
def _vit(overrides):
    kwargs = dict(patch_size=4, width=16, depth=2, mlp_dim=32, num_heads=2)
    kwargs.update(overrides)
    model = build("vit", NUM_CLASSES, **kwargs)
    return model, random_params(model)


@functools.lru_cache(maxsize=None)
def bit():
    """The smallest BiT, with random parameters (cached)."""
    model = build("bit", NUM_CLASSES, variant="R26x1", stem="small")
    return model, random_params(model)


@functools.lru_cache(maxsize=None)
def swin():
    """A Swin of width 16, patch 2, window 4 on 16x16 images (8x8 then 4x4 maps), with random parameters (cached)."""
    model = build("swin", NUM_CLASSES, variant=None, patch_size=2, window_size=4, embed_dim=16, depths=(2, 2),
                  num_heads=(2, 4))
    return model, random_params(model)


def images(count=3, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=(count, *IMAGE_SHAPE)).astype(np.float32)
