"""Parameter counts equal the published ones (224x224 inputs, 1000 classes), counted with jax.eval_shape."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax import models

PUBLISHED = {
    "Ti/16": 5_717_416,
    "S/16": 22_050_664,
    "B/16": 86_567_656,
    "B/32": 88_224_232,
    "L/16": 304_326_632,
    "H/14": 632_045_800,
}


def count(model, image_size=224):
    images = jax.ShapeDtypeStruct((1, image_size, image_size, 3), jnp.float32)
    params = nn.meta.unbox(jax.eval_shape(lambda x: model.init(jax.random.key(0), x), images)["params"])
    return sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(params)), params


@pytest.mark.parametrize("variant", list(PUBLISHED))
@pytest.mark.parametrize("scan", [False, True])
def test_vit_counts(variant, scan):
    total, _ = count(models.ViT(num_classes=1000, variant=variant, scan=scan))
    assert total == PUBLISHED[variant]


def test_bit_r50x1_count():
    total, params = count(models.BiT(num_classes=1000, variant="R50x1"))
    head = sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(params["head"]))
    assert total == 25_549_352
    assert total - head == 23_500_352


def test_r50_vit_b16_hybrid_count():
    total, _ = count(models.ViT(num_classes=1000, variant="B/16", resnet="R50"))
    assert total == 98_659_112
