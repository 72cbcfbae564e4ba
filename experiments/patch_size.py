r"""Patch size at laptop scale, trained to convergence: the ViT with patches of 14, 7 and 4 pixels on 55k
images, and of 4 and 2 on 5.5k (patch 2 costs ~6x patch 4 per image, too slow for 55k here).

    vitjax sweep experiments/patch_size.py --workdir runs/patch_size
    vitjax plot runs/patch_size --out experiments/results/patch_size

The default Fashion-MNIST ViT (width 64, depth 6; configs/fashion_mnist/vit.py), differing only in
`model.patch_size`: 4, 16, 49 and 196 tokens (+ CLS) on 28x28 images. The data-scaling protocol
(experiments/protocol.py: validation split, budget growing with the data, test accuracy at the
best-validation step, 2 paired seeds), so the patch-4 runs at 55k repeat data_scaling.py's vit_n55000
runs. Read-out S1 in experiments/README.md: smaller patches are better once trained to convergence.

Measured (2026-12-01/02, 2 CPU cores, mostly idle; experiments/README.md, part 4): ~100 minutes for
all 10 runs; per run at 55k ~4 min (patch 14), ~7 min (7), ~15 min (4); at 5.5k ~6 min (4), ~18 min (2).
"""
import os

from vitjax.config import load_module, parse_arg

_protocol = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "protocol.py"))

BUDGET = _protocol.BUDGET.describe()
TITLE = "Patch size: the plain-arm ViT, early stopping on validation"
FEWSHOT = None
PATCHES = {55_000: (14, 7, 4), 5_500: (4, 2)}
SEEDS = 2


def get_runs(arg=None):
    parse_arg(arg)  # takes no argument: a key given by mistake is refused, not ignored
    return [(f"vit_p{patch}_n{size}_s{seed}", "configs/fashion_mnist/vit.py",
             {**_protocol.overrides(size, seed), "model.patch_size": patch})
            for size, patches in PATCHES.items() for patch in patches for seed in range(SEEDS)]
