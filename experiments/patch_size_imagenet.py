r"""Patch size at the paper's scale (GPU/TPU): ViT-B with patches of 32, 16 and 8 pixels at 224 px.

    vitjax sweep experiments/patch_size_imagenet.py --workdir DIR [--parallel 3 --pin_gpus]
    vitjax plot DIR --out experiments/results/patch_size_imagenet

configs/imagenet/vit_b16.py with `model.variant` set to B/32, B/16 and B/8: 49, 196 and 784 tokens,
on the config's full ImageNet-21k training set, one step budget for all (`:steps=N`, default 90,000
steps of 4096), then the few-shot probe on ImageNet-1k as in experiments/data_scaling_imagenet.py.

Expected wall time (an estimate, not measured): B/16 ~1-2 GPU-days on an H100/H200-class GPU (see
data_scaling_imagenet.py); B/32 ~4x cheaper; B/8 ~5x dearer (attention over 785 tokens): ~5-10
GPU-days, better run on a multi-chip slice (`--parallel 1`: the mesh spreads one run over every chip).
"""
import os

from vitjax.config import load_module, parse_arg

_here = os.path.dirname(os.path.abspath(__file__))
_imagenet = load_module(os.path.join(_here, "data_scaling_imagenet.py"))

PATCHES = (32, 16, 8)
FEWSHOT = _imagenet.FEWSHOT


def get_runs(arg=None):
    steps = parse_arg(arg, steps=_imagenet.DEFAULT_STEPS).steps
    budget = {"total_epochs": 0.0, "total_steps": steps, "checkpoint_every_steps": 2_000, "keep_checkpoints": 2}
    return [(f"vit_b{patch}", "configs/imagenet/vit_b16.py", {**budget, "model.variant": f"B/{patch}"})
            for patch in PATCHES]
