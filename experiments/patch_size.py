r"""Patch size at laptop scale: ViT accuracy and throughput with patches of 2, 4, 7 and 14 pixels.

    vitjax sweep experiments/patch_size.py --workdir runs/patch_size
    vitjax plot runs/patch_size --out experiments/results/patch_size

4 runs of the default Fashion-MNIST ViT (width 64, depth 6; configs/fashion_mnist/vit.py) on the full
60k training set, differing only in `model.patch_size`: 14x14, 7x7, 4x4 and 2x2 tokens (+ CLS) on
28x28 images. The budget of experiments/data_scaling.py (default 700 steps of 128), so vit_p4 here is
that sweep's vit_n60000 on the unpermuted split; then the few-shot probe. Smaller patches mean more
tokens: patch 2 costs 5.8x the FLOPs of patch 4 (197 tokens), patch 7 0.31x, patch 14 0.09x.

Measured on 2 quiet CPU cores (2026-11-29): 26 minutes, 18.5 of them for patch 2 (88 img/s); results
in experiments/README.md. `:steps=N` changes the budget, about 2.0 s per step for the four runs
together plus about 3 minutes of start-up, compilation and few-shot probes.
"""
import os

from vitjax.config import load_module

# One training budget for both laptop sweeps: data_scaling.py defines it.
_data_scaling = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data_scaling.py"))

PATCHES = (2, 4, 7, 14)
DEFAULT_STEPS = 700
FEWSHOT = {"shots": (1, 5, 10, 25), "seeds": 3, "max_test_examples": 2_000}


def get_runs(arg=None):
    steps = _data_scaling.steps_arg(arg, DEFAULT_STEPS)
    return [(f"vit_p{patch}", "configs/fashion_mnist/vit.py", {**_data_scaling.budget(steps), "model.patch_size": patch})
            for patch in PATCHES]
