r"""A Swin Transformer on synthetic images, for `vitjax bench` (speed only: the data carry no real task).

    vitjax bench --config configs/bench/swin.py:variant=T,res=224,batch=8
    vitjax bench --config configs/bench/swin.py:variant=T,res=448,batch=2 --no_pipeline
Runs vitjax's Swin beside timm's `SwinTransformer` holding the same weights (vitjax/bench/timm_nets.py),
train step and inference in alternating rounds.
Expected (T, 224, batch 8; experiments/results/bench/README.md, "Swin's products on rows"): on 2 idle
vCPUs of an AMD EPYC (family 25, model 17), 2026-12-07, one XLA device (the default for a batch of 8),
train 4.7-4.8 img/s, 1.12x timm, inference 14.9-15.1 img/s, 1.18-1.20x; runs of the same code differ
by about 0.1 in either ratio, and on the Intel host (family 6, model 167) they ran lower.
Deterministic: XLA counts 9.06 GFLOPs per 224x224 image for Swin-T's forward pass
(experiments/results/bench/swin_cost_flops.md).

Arguments: `variant` (T, S, B or L: Swin paper Table 7, patch 4, window 7), `res` (square image size;
the resolution after each patch merging must be a multiple of the window or no larger than it, e.g.
224, 448, 896 for window 7; the model names the valid sizes otherwise), `window`, `channels`, `batch`,
`classes`. Everything else is `base()`'s: Adam with decoupled weight decay and gradient clipping, as in
the training configs.

Choices:
- Synthetic images: the benchmark measures speed, and synthetic data needs no download at any size.
- batch 8 by default: Swin-T's step costs about as many FLOPs per image as ViT-S/16's, 5x ViT-Ti/16's
  (configs/bench/vit.py's batch 16), so a round stays short on 2 CPU cores.
- No stochastic depth (droppath_rate 0): a benchmark times the arithmetic, which drop-path leaves the
  same; 0 keeps both frameworks' steps deterministic.
"""
import os

from vitjax.config import base, load_module, parse_arg

_vit = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "vit.py"))


def get_config(arg=None):
    arg = parse_arg(arg, variant="T", res=224, window=7, channels=3, batch=8, classes=10)
    c = base()
    c.model_name = "swin"
    c.model.variant = arg.variant
    c.model.window_size = arg.window
    c.model.droppath_rate = 0.0
    _vit.synthetic_benchmark(c, arg)
    return c
