r"""Model size against data size at laptop scale: two ViT widths and two BiT widths (ViT paper Figs. 3, 5).

    vitjax sweep experiments/model_size.py --workdir runs/model_size             # widths 32/64 and 4/8
    vitjax sweep experiments/model_size.py:part=large --workdir runs/model_size  # adds ViT 128, BiT 16
    vitjax plot runs/model_size --out experiments/results/model_size

Does the larger ViT need more data (read-outs M1, M2 in experiments/README.md: it trails the smaller one
at 550 images and leads at 55k), and which family reaches a given accuracy with fewer training FLOPs
(M3, the paper's Fig. 5, from every run's test accuracy against its training FLOPs)? The plain-arm
protocol (experiments/protocol.py) at 550, 5.5k and 55k images, 2 paired seeds per point.

The models (depth and patch as the default ViT, 6 blocks of patch 4; BiT-R26 with the small stem; head
width 16 for every ViT):
  ViT  width 32 (2 heads, MLP 64), 64 (the default), 128 (8 heads, MLP 256)
  BiT  root width 4 (4 GroupNorm groups), 8 (the default), 16 (8 groups)
Part `small` (default) holds the two smaller of each family, part `large` the larger two (width 64 and 8
again, so each part is a complete pair on its own).

Measured (2026-12-01/02, 2 CPU cores, partly under load; the results README): part small 217 minutes
summed over its 24 runs, so run it in `--only` parts; part large (never run) several times that
(each width doubled: ~2-4x the FLOPs per step).
"""
import os

from vitjax.config import load_module, parse_arg

_protocol = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "protocol.py"))

BUDGET = _protocol.BUDGET.describe()
TITLE = "Model size: the plain arm at two widths per family, early stopping on validation"
FEWSHOT = None
SIZES = (550, 5_500, 55_000)
SEEDS = 2

_VIT = {w: {"model.width": w, "model.num_heads": w // 16, "model.mlp_dim": 2 * w} for w in (32, 64, 128)}
_BIT = {w: {"model.width": w, "model.norm_groups": min(w, 8)} for w in (4, 8, 16)}
PARTS = {"small": {"vit": (32, 64), "bit": (4, 8)}, "large": {"vit": (64, 128), "bit": (8, 16)}}


def get_runs(arg=None):
    """`:large_seeds=N` trains N seeds at 55k instead of SEEDS (seeds added where they decide a read-out)."""
    args = parse_arg(arg, part="small", large_seeds=SEEDS)
    part = args.part
    if part not in PARTS:
        raise ValueError(f"part={part!r}; the parts are {', '.join(PARTS)}")
    models = [(f"vit_w{w}", "configs/fashion_mnist/vit.py", _VIT[w]) for w in PARTS[part]["vit"]]
    models += [(f"bit_w{w}", "configs/fashion_mnist/bit.py", _BIT[w]) for w in PARTS[part]["bit"]]
    return [(f"{name}_n{size}_s{seed}", config, {**_protocol.overrides(size, seed), **model})
            for size in SIZES for seed in _protocol.seeds(size, small_seeds=SEEDS, large_seeds=args.large_seeds)
            for name, config, model in models]
