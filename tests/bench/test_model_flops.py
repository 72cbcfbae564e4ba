"""FLOP counts behind MFU: the analytic matmul count, and XLA's count of programs with loops."""
import os

import jax
import jax.numpy as jnp
import pytest

from vitjax import models
from vitjax.bench import jax_model
from vitjax.train import config_files

IMAGE = (16, 16, 3)
DIMS = dict(num_classes=10, patch_size=4, width=64, depth=2, mlp_dim=128, num_heads=4)
TINY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "train", "tiny_config.py")


def _xla_forward_flops(model):
    images = jax.ShapeDtypeStruct((2, *IMAGE), jnp.float32)
    params = jax.eval_shape(model.init, jax.random.key(0), images)
    cost = jax.jit(model.apply).lower(params, images).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    return cost["flops"] / 2


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


def _xla_flops(**overrides):
    config = config_files.load_config(TINY)
    config.batch_size = 8
    with config.unlocked():
        config.update_from_flattened_dict(overrides)
    jm = jax_model.build(config)
    counted = jm.info["xla_flops_per_step"]
    return counted["train"], counted["infer"], jm.info["xla_flops_counted_on"]


def test_scanned_blocks_and_accumulated_gradients_are_counted_in_full():
    # XLA counts a loop's body once: without the loop-free twin these would come out 2x too low.
    every_row, every_row_infer, how = _xla_flops(**{"model.cls_only_last_block": False, "model.depth": 2})
    assert how == "the compiled step"
    scanned, scanned_infer, how = _xla_flops(**{"model.scan": True, "model.depth": 2})
    assert how == "the loop-free twin"
    assert scanned == pytest.approx(every_row, rel=0.05)
    assert scanned_infer == pytest.approx(every_row_infer, rel=0.05)
    plain, _, _ = _xla_flops(**{"model.depth": 2})
    accumulated, _, how = _xla_flops(**{"model.depth": 2, "grad_accum_steps": 2})
    assert how == "the loop-free twin"
    assert accumulated == pytest.approx(plain, rel=0.05)
