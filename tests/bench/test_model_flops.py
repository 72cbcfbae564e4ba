"""FLOP counts behind MFU: the analytic matmul count, and XLA's count of programs with loops."""
import os

import flax.linen as nn
import jax
import jax.numpy as jnp
import pytest

from vitjax import models
from vitjax.bench import jax_model
from vitjax.config import load_config
from vitjax.train import flops, trainer

IMAGE = (16, 16, 3)
DIMS = dict(num_classes=10, patch_size=4, width=64, depth=2, mlp_dim=128, num_heads=4)
TINY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "train", "tiny_config.py")


def _xla_forward_flops(model):
    images = jax.ShapeDtypeStruct((2, *IMAGE), jnp.float32)
    params = jax.eval_shape(model.init, jax.random.key(0), images)
    return flops.of(jax.jit(model.apply).lower(params, images).compile()) / 2


@pytest.mark.parametrize("pool,cls_only", [("tok", True), ("tok", False), ("gap", True)])
def test_the_matmul_count_follows_what_the_model_computes(pool, cls_only):
    model = models.ViT(pool=pool, cls_only_last_block=cls_only, **DIMS)
    counted = jax_model.model_flops_per_image(model, IMAGE, 10)
    every_row = jax_model.model_flops_per_image(model, IMAGE, 10, every_row=True)
    # XLA also counts norms, softmax and GELU, which the matmul count leaves out: a few percent here.
    assert 0.9 < counted / _xla_forward_flops(model) <= 1.0
    if pool == "tok" and cls_only:
        # 16 patches + CLS in two blocks: the last one's queries, projection and MLP for 16 rows.
        assert every_row > 1.3 * counted
        assert 0.9 < every_row / _xla_forward_flops(model.clone(cls_only_last_block=False)) <= 1.0
    else:
        assert every_row == counted


def _tiny_config(**overrides):
    config = load_config(TINY)
    config.batch_size = 8
    with config.unlocked():
        config.update_from_flattened_dict({"model.depth": 2, **overrides})
    return config


def _lowered(config):
    p = trainer.plan(config)
    lowered, _ = trainer.lower_train_step(config, p, trainer.state_spec(config, p), jax.random.key(0))
    return p, lowered


def test_scanned_blocks_and_accumulated_gradients_are_counted_in_full():
    # XLA counts a loop's body once: these steps' own programs undercount by about half (depth 2, or
    # 2 micro-batches), and the counts must equal their loop-free equivalents'.
    for looped, loop_free in [({"model.scan": True}, {"model.cls_only_last_block": False}),
                              ({"grad_accum_steps": 2}, {})]:
        config = _tiny_config(**looped)
        p, lowered = _lowered(config)
        reference = flops.of(_lowered(_tiny_config(**loop_free))[1])
        assert flops.of(lowered) < 0.7 * reference, "the undercount this guards against is gone"
        # Steps with loops are counted without their compiled program.
        counted = trainer.train_step_flops(config, p, None, jax.random.key(0))
        assert counted == pytest.approx(reference, rel=0.01)


def test_the_benchmark_counts_a_scanned_forward_pass_in_full():
    jm = jax_model.build(_tiny_config(**{"model.scan": True}))
    assert jm.info["xla_flops_counted_on"] == "the loop-free twin"
    every_row = jm.plan.model.clone(scan=False, cls_only_last_block=False)
    images = jax.ShapeDtypeStruct((8, *jm.plan.info.image_shape), jnp.float32)
    variables = jax.eval_shape(lambda x: nn.unbox(every_row.init(jax.random.key(0), x)), images)
    unrolled = flops.of(jax.jit(every_row.apply).lower(variables, images).compile())
    assert jm.info["xla_flops_per_step"]["infer"] == pytest.approx(unrolled, rel=0.05)


SWINS = [
    # Swin-T at 224: windows 7 in all four stages, shifted in the first three.
    ("Swin-T@224", dict(variant="T"), (224, 224, 3), 1000),
    # Three stages at 32x32, patch 2: maps 16 (shifted windows of 8), 8 (one window, no shift) and 4,
    # where the window shrinks to the map.
    ("small@32", dict(variant=None, patch_size=2, window_size=8, embed_dim=64, depths=(2, 2, 2),
                      num_heads=(2, 4, 8)), (32, 32, 3), 10),
]


@pytest.mark.parametrize("name,dims,image,classes", SWINS, ids=[s[0] for s in SWINS])
def test_the_swin_matmul_count_agrees_with_xlas(name, dims, image, classes):
    model = models.Swin(num_classes=classes, **dims)
    images = jax.ShapeDtypeStruct((2, *image), jnp.float32)
    params = jax.eval_shape(model.init, jax.random.key(0), images)
    # The lowered program, as written: the compiled one's count also has the elementwise work XLA's
    # fusions duplicate (a few percent more for small widths), which is not the model's arithmetic.
    xla = flops.of(jax.jit(model.apply).lower(params, images)) / 2
    counted = jax_model.model_flops_per_image(model, image, classes)
    # XLA also counts norms, softmax, GELU, the bias and the shift mask: a few percent at these widths.
    assert 0.95 < counted / xla <= 1.0, f"{name}: {counted:.4g} counted, {xla:.4g} by XLA"
    assert jax_model.model_flops_per_image(model, image, classes, every_row=True) == counted
