"""Parameter counts (224x224 inputs, 1000 classes) of ViT, BiT and Swin equal timm's for the same architectures.

timm (a test extra) builds each published model on PyTorch's meta device: shapes only, nothing
allocated or initialised, so even ViT-H/14 costs a fraction of a second. vitjax counts with
jax.eval_shape. Every model compared here exists in timm, so no count is copied from a paper.
"""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax import models

timm = pytest.importorskip("timm")
torch = pytest.importorskip("torch")

VIT = {"Ti/16": "vit_tiny_patch16_224", "S/16": "vit_small_patch16_224", "B/16": "vit_base_patch16_224",
       "B/32": "vit_base_patch32_224", "L/16": "vit_large_patch16_224", "H/14": "vit_huge_patch14_224"}


def count(model, image_size=224):
    """(all parameters, the head's) of a vitjax model."""
    images = jax.ShapeDtypeStruct((1, image_size, image_size, 3), jnp.float32)
    params = nn.meta.unbox(jax.eval_shape(lambda x: model.init(jax.random.key(0), x), images)["params"])
    size = lambda tree: sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(tree))  # noqa: E731
    return size(params), size(params["head"])


def timm_count(name):
    """(all parameters, the head's) of timm's model `name`."""
    with torch.device("meta"):
        model = timm.create_model(name, pretrained=False, num_classes=1000)
    params = dict(model.named_parameters())
    return (sum(p.numel() for p in params.values()),
            sum(p.numel() for key, p in params.items() if key.startswith("head.")))


@pytest.mark.parametrize("variant", list(VIT))
@pytest.mark.parametrize("scan", [False, True])
def test_vit_counts_equal_timms(variant, scan):
    assert count(models.ViT(num_classes=1000, variant=variant, scan=scan)) == timm_count(VIT[variant])


def test_bit_r50x1_count_equals_timms():
    total, head = count(models.BiT(num_classes=1000, variant="R50x1"))
    assert (total, head) == timm_count("resnetv2_50x1_bit")
    assert head == 2048 * 1000 + 1000


def test_r50_vit_b16_hybrid_count_equals_timms():
    # timm's R50+ViT-B/16 hybrid: a ResNet-v2 stem of 3 stages (3, 4, 9 units), stride 16 overall.
    assert count(models.ViT(num_classes=1000, variant="B/16", resnet="R50")) == timm_count("vit_base_r50_s16_224")


# Swin at 224x224, patch 4, window 7 (the published models); the counts as timm 1.0.31 reports them.
SWIN = {"T": ("swin_tiny_patch4_window7_224", 28_288_354), "S": ("swin_small_patch4_window7_224", 49_606_258),
        "B": ("swin_base_patch4_window7_224", 87_768_224)}


@pytest.mark.parametrize("variant", list(SWIN))
def test_swin_counts_equal_timms(variant):
    name, total = SWIN[variant]
    counted = count(models.Swin(num_classes=1000, variant=variant))
    assert counted == timm_count(name)
    assert counted[0] == total


DEIT_DISTILLED = {"Ti/16": ("deit_tiny_distilled_patch16_224", 5_910_800),
                  "S/16": ("deit_small_distilled_patch16_224", 22_436_432),
                  "B/16": ("deit_base_distilled_patch16_224", 87_338_192)}


@pytest.mark.parametrize("variant", list(DEIT_DISTILLED))
def test_distilled_deit_counts_equal_timms(variant):
    """A distillation token (one more token, one more position embedding) and its own head."""
    name, total = DEIT_DISTILLED[variant]
    model = models.ViT(num_classes=1000, variant=variant, distillation_token=True)
    assert count(model) == timm_count(name)
    assert count(model)[0] == total
