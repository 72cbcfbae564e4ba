r"""Data scaling at the paper's scale (GPU/TPU): ViT-B/16 vs BiT-R50x1 on nested ImageNet-21k subsets.

    vitjax sweep experiments/data_scaling_imagenet.py --workdir DIR                       # a TPU slice / 1 host
    vitjax sweep experiments/data_scaling_imagenet.py --workdir DIR --parallel 8 --pin_gpus  # 8 GPUs, a run each
    vitjax sweep experiments/data_scaling_imagenet.py:steps=20000 --workdir DIR            # a first, shorter look
    vitjax plot DIR --out experiments/results/data_scaling_imagenet

The paper's question (Figs. 3-4): does the ViT's gap to a ResNet close, then reverse, as the pre-training
set grows? 8 runs: {ViT-B/16, BiT-R50x1} x {1.3M, 3M, 6M, 13M} ImageNet-21k examples (nested subsets,
`data.train_size`), with the paper-scale configs configs/imagenet/vit_b16.py and bit_r50x1.py (224 px,
bfloat16, batch 4096, each family's own published recipe) and one step budget for all (`:steps=N`,
default 90,000 steps = 369M examples: 280 epochs of the 1.3M subset, 28 of 13M). The few-shot probe then
runs on ImageNet-1k (imagenet2012: k-shot sets from its train split, scored on its validation split),
as in the paper's Fig. 4 / Table 2.

Data: the tfds `imagenet21k` dataset must be built by the user, with at least 13M training examples
(the fall11 release has 14.2M), and `imagenet2012` needs its manual download (see the configs).

Expected wall time (an estimate, not measured: no accelerator run of these configs exists yet):
ViT-B/16 costs ~105 GFLOP per training image (3 x 2 x 17.6 GMAC), BiT-R50x1 ~25. On one H100/H200-class
GPU in bfloat16, rough rates are 2,000-4,000 img/s for ViT-B/16 and 3,000-6,000 img/s for BiT-R50x1
(GroupNorm and weight standardisation use the chip less well than the FLOPs suggest). One run of 369M
examples: ~1-2 GPU-days for ViT, ~0.7-1.4 for BiT; the sweep ~7-14 GPU-days, or ~1-2 days on 8 GPUs
with `--parallel 8 --pin_gpus`. Measure first with `:steps=2000` (a few minutes a run) and scale.
"""
from vitjax.config import parse_arg

SIZES = (1_300_000, 3_000_000, 6_000_000, 13_000_000)
DEFAULT_STEPS = 90_000
FEWSHOT = {"shots": (1, 5, 10, 25), "seeds": 3, "max_test_examples": None,
           "data": {"name": "imagenet2012", "train_split": "train", "test_split": "validation"}}

MODELS = {
    "vit_b16": "configs/imagenet/vit_b16.py",
    "bit_r50x1": "configs/imagenet/bit_r50x1.py",
}


def get_runs(arg=None):
    steps = parse_arg(arg, steps=DEFAULT_STEPS).steps
    budget = {"total_epochs": 0.0, "total_steps": steps, "checkpoint_every_steps": 2_000, "keep_checkpoints": 2}
    return [(f"{model}_n{size / 1e6:g}M", config, {**budget, "data.train_size": size})
            for model, config in MODELS.items() for size in SIZES]
