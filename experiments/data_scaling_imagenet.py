r"""Data scaling at the paper's scale (GPU/TPU): ViT-B/16 vs BiT-R50x1 on nested ImageNet-21k subsets,
with the laptop study's protocol (experiments/protocol.py).

    vitjax sweep experiments/data_scaling_imagenet.py --workdir DIR                       # a TPU slice / 1 host
    vitjax sweep experiments/data_scaling_imagenet.py --workdir DIR --parallel 8 --pin_gpus  # 8 GPUs, a run each
    vitjax sweep experiments/data_scaling_imagenet.py:seeds=2 --workdir DIR                # paired seeds 0, 1
    vitjax sweep experiments/data_scaling_imagenet.py:scale=0.01 --workdir DIR             # a first, short look
    vitjax sweep experiments/data_scaling_imagenet.py:ladder=true --workdir DIR            # the convergence ladder
    vitjax plot DIR --out experiments/results/data_scaling_imagenet

The paper's question (Figs. 3-4): does the ViT's gap to a ResNet close, then reverse, as the pre-training
set grows? {ViT-B/16, BiT-R50x1} x {1.3M, 3M, 6M, 13M} ImageNet-21k examples (nested: the first N of the
config's train split, `data.train_size`) x `seeds` (default 1), with configs/imagenet/vit_b16.py and
bit_r50x1.py (224 px, bfloat16, batch 4096, each family's published recipe). The few-shot probe then
runs on ImageNet-1k (k-shot sets from its train split, scored on its validation split; Fig. 4 / Table 2).

Protocol, as on the laptop:
- **Validation split:** the configs' `data.val_split`, ImageNet-21k's first 51,200 examples, never
  trained on (the subsets come from the rest); scored every `steps / 20` steps and at the end. Each run
  reports the test accuracy at its best-validation step (`test_accuracy_at_best`).
- **Budget that grows with the data:** `RULE.steps(n)` = max(95,000 steps, 90 epochs) of 4096. The
  paper saw 0.4B examples on ImageNet (300 epochs of 1.3M), 1.3B on ImageNet-21k (90 epochs of 14M)
  and 2.1B on JFT (7 epochs of 300M): more data, more examples seen, fewer epochs. The floor is the
  ImageNet budget (95,000 x 4096 = 0.39B: 300 epochs of the 1.3M subset); 90 epochs is the
  ImageNet-21k one (13M -> 285,645 steps, 1.17B examples). So 1.3M and 3M train 95,000 steps (300 and
  130 epochs), 6M 131,836, 13M 285,645: the paper's 0.4B-to-1.3B pattern over our sizes.
- **Paired seeds:** seed s is the training seed of both families at every size. Streamed subsets are
  the first N examples in tfds's stored order, the same for every seed (vitjax/data/pipeline.py), so
  seeds vary initialisation, dropout and order, not the draw.
`:ladder=true` trains each family and size at 1x, 2x and 4x that budget (warmup-stable-decay, one trunk
of 4x whose checkpoints start the shorter rungs' cooldowns), for the laptop study's convergence rule
(experiments/protocol.py's converged_rung: the shortest rung whose next gains <= 0.5 validation
points), as experiments/convergence.py does at laptop scale; ~2.3x the plain sweep's steps.
`:scale=F` multiplies the budget (floor and epochs) and the warmups by F: `:scale=0.01` (950 to 2,857
steps) measures throughput and checks the pipeline end to end; its accuracies answer nothing (and the
figures' titles still name the unscaled BUDGET).

Data: tfds has no `imagenet21k` builder; build one (one split, named `full` as in big_vision, else pass
the config's `split=`), with at least 13.1M examples (fall11 has 14.2M); `imagenet2012` needs its manual
download (see the configs).

Expected wall time (an estimate, not measured: no accelerator run of these configs exists yet):
ViT-B/16 costs ~105 GFLOP per training image (3 x 2 x 17.6 GMAC), BiT-R50x1 ~25. On one H100/H200-class
GPU in bfloat16, rough rates are 2,000-4,000 img/s for ViT-B/16 and 3,000-6,000 img/s for BiT-R50x1.
One seed is 607k steps (2.5B examples) per family: ~7-14 GPU-days for ViT, ~5-10 for BiT, ~12-24
GPU-days in all (~1.5-3 days with `--parallel 8 --pin_gpus`). Measure first with `:scale=0.01`.
"""
from vitjax.config import parse_arg
from vitjax.sweep.budget import GrowingBudget, Ladder

SIZES = (1_300_000, 3_000_000, 6_000_000, 13_000_000)
BATCH = 4096
RULE = GrowingBudget(min_steps=95_000, epochs=90, batch_size=BATCH)
BUDGET = RULE.describe()  # spec.py puts it in sweep.json and the figures
EVALS = 20  # validation evaluations per run (and one at the end): enough to find the best step
LADDER_MULTIPLES = (1, 2, 4)  # `:ladder=true`, as experiments/convergence.py on the laptop
TITLE = "ImageNet-21k subsets: each family's published recipe, early stopping on validation"
FEWSHOT = {"shots": (1, 5, 10, 25), "seeds": 3, "max_test_examples": None,
           "data": {"name": "imagenet2012", "train_split": "train", "test_split": "validation"}}

MODELS = {  # (config, its warmup steps, which :scale shortens too)
    "vit_b16": ("configs/imagenet/vit_b16.py:data=imagenet21k", 10_000),
    "bit_r50x1": ("configs/imagenet/bit_r50x1.py:data=imagenet21k", 5_000),
}


def budget(scale: float = 1.0) -> GrowingBudget:
    """RULE, its floor and epochs times `scale`."""
    if scale == 1:
        return RULE
    return GrowingBudget(max(1, round(RULE.min_steps * scale)), RULE.epochs * scale, BATCH)


def overrides(size: int, seed: int, warmup: int, scale: float = 1.0) -> dict:
    """One run's config overrides: subset, seed, grown budget, evaluation cadence (the splits are the
    configs')."""
    steps = budget(scale).steps(size)
    return {"seed": seed, "data.train_size": size, "total_epochs": 0.0, "total_steps": steps,
            "warmup_steps": max(1, round(warmup * scale)),
            "eval_every_steps": max(1, steps // EVALS), "checkpoint_every_steps": 2_000, "keep_checkpoints": 2}


def get_runs(arg=None):
    a = parse_arg(arg, seeds=1, scale=1.0, ladder=False)
    if a.seeds < 1 or a.scale <= 0:
        raise ValueError(f"seeds must be >= 1 and scale > 0, got seeds={a.seeds}, scale={a.scale}")
    if a.ladder:  # the laptop study's convergence check: 1x, 2x, 4x of the budget from one trunk each
        ladder = Ladder(budget(a.scale), multiples=LADDER_MULTIPLES)
        return [run for size in SIZES for seed in range(a.seeds) for model, (config, warmup) in MODELS.items()
                for run in ladder.runs(lambda m: f"{model}_n{size / 1e6:g}M_s{seed}_x{m}", config,
                                       overrides(size, seed, warmup, a.scale), size)]
    return [(f"{model}_n{size / 1e6:g}M_s{seed}", config, overrides(size, seed, warmup, a.scale))
            # Pairs first: a sweep stopped part-way leaves paired seeds at the sizes it finished.
            for size in SIZES for seed in range(a.seeds) for model, (config, warmup) in MODELS.items()]
