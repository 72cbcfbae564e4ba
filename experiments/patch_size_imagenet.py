r"""Patch size at the paper's scale (GPU/TPU): ViT-B with patches of 32, 16 and 8 pixels at 224 px, with
the protocol of experiments/data_scaling_imagenet.py.

    vitjax sweep experiments/patch_size_imagenet.py --workdir DIR [--parallel 3 --pin_gpus]
    vitjax sweep experiments/patch_size_imagenet.py:seeds=2,scale=0.01 --workdir DIR   # a short look
    vitjax sweep experiments/patch_size_imagenet.py:ladder=true --workdir DIR          # the convergence ladder
    vitjax plot DIR --out experiments/results/patch_size_imagenet

configs/imagenet/vit_b16.py with `model.variant` set to B/32, B/16 and B/8 (49, 196 and 784 tokens) on
the 13M-example ImageNet-21k subset, with data_scaling_imagenet.py's validation split, budget
(`RULE.steps(13M)`: 285,645 steps, 90 epochs, 1.17B examples), evaluation cadence, paired seeds
(`:seeds=N`, default 1) and `:scale=F`; the B/16 runs repeat that sweep's vit_b16_n13M runs. Each run
reports the test accuracy at its best-validation step; the few-shot probe runs on ImageNet-1k.

Expected wall time (an estimate, not measured): B/16 ~3.5-7 GPU-days on an H100/H200-class GPU (see
data_scaling_imagenet.py); B/32 ~4x cheaper; B/8 ~5x dearer (attention over 785 tokens): ~17-34
GPU-days, better run on a multi-chip slice (`--parallel 1`: the mesh spreads one run over every chip).
"""
import os

from vitjax.config import load_module, parse_arg
from vitjax.sweep.budget import Ladder

_here = os.path.dirname(os.path.abspath(__file__))
_imagenet = load_module(os.path.join(_here, "data_scaling_imagenet.py"))

PATCHES = (32, 16, 8)
SIZE = 13_000_000  # the largest subset of data_scaling_imagenet.py, whose budget is known without the data
BUDGET = _imagenet.BUDGET
TITLE = "Patch size: ViT-B on 13M ImageNet-21k examples, early stopping on validation"
FEWSHOT = _imagenet.FEWSHOT


def get_runs(arg=None):
    a = parse_arg(arg, seeds=1, scale=1.0, ladder=False)
    config, warmup = _imagenet.MODELS["vit_b16"]

    def run_overrides(seed, patch):
        return {**_imagenet.overrides(SIZE, seed, warmup, a.scale), "model.variant": f"B/{patch}"}
    if a.ladder:  # data_scaling_imagenet.py's convergence ladder, per patch size
        ladder = Ladder(_imagenet.budget(a.scale), multiples=_imagenet.LADDER_MULTIPLES)
        return [run for seed in range(a.seeds) for patch in PATCHES
                for run in ladder.runs(lambda m: f"vit_b{patch}_s{seed}_x{m}", config, run_overrides(seed, patch),
                                       SIZE)]
    return [(f"vit_b{patch}_s{seed}", config, run_overrides(seed, patch))
            for seed in range(a.seeds) for patch in PATCHES]
