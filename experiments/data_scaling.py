r"""Data scaling at laptop scale: ViT vs a BiT ResNet as the pre-training set grows (ViT paper, Figs. 3-4).

    vitjax sweep experiments/data_scaling.py --workdir runs/data_scaling
    vitjax plot runs/data_scaling --out experiments/results/data_scaling

12 runs: {ViT, BiT} x {1k, 2k, 5k, 10k, 20k, 60k} Fashion-MNIST training examples (nested subsets,
`data.train_size`), every run with the same hyper-parameters and the same budget in steps (default
700 steps of 128 = 89,600 examples seen: 90 epochs of the 1k subset, 1.5 of the full 60k), then the
few-shot linear probe (1, 5, 10, 25 examples per class, 3 draws, scored on 2,000 test images).

Measured on 2 quiet CPU cores (2026-11-29): 42 minutes for the 12 runs (ViT 650-740 img/s, BiT
450-530 img/s); results in experiments/README.md. `:steps=N` changes the budget of every run alike;
wall time is about 3.1 s per step (the 12 runs together) plus about 6 minutes of start-up,
compilation and few-shot probes.

The models (configs/fashion_mnist/{vit,bit}.py: the same Adam, lr 2e-3, batch 128, warmup then cosine
decay; no augmentation in either):
  ViT   the default Fashion-MNIST ViT: width 64, depth 6, patch 4 (7x7 tokens + CLS); 206k parameters,
        9.7 GFLOP per training step of 128.
  BiT   BiT-R26 (ResNet-v2, GroupNorm, weight standardisation) with the small 3x3/1 stem, narrowed to
        a root width of 8: 223k parameters, 7.3 GFLOP per training step. Matched to the ViT in size
        and compute, as the paper compares models of similar pre-training cost.
"""
from vitjax.config import parse_arg

SIZES = (1_000, 2_000, 5_000, 10_000, 20_000, 60_000)
DEFAULT_STEPS = 700
FEWSHOT = {"shots": (1, 5, 10, 25), "seeds": 3, "max_test_examples": 2_000}

MODELS = {
    "vit": "configs/fashion_mnist/vit.py",
    "bit": "configs/fashion_mnist/bit.py",
}


def budget(steps: int) -> dict:
    """The training budget every run shares: fixed steps (not epochs), so only the data size varies."""
    return {
        "total_epochs": 0.0, "total_steps": steps,
        "warmup_steps": min(100, steps // 4),
        # Checkpoints often enough that an interrupted run loses little; one kept, for the few-shot probe.
        "checkpoint_every_steps": 100, "keep_checkpoints": 1,
        "log_every_steps": 25,
        # No augmentation, spelled out so both models keep it whatever their configs' defaults become:
        # the paper's data-size study adds no regularisation for the small sets either.
        "data.pp_train": "value_range(-1, 1)",
    }


def steps_arg(arg, default: int) -> int:
    """The `:steps=N` of a sweep file's arg (the laptop and the accelerator sweeps take only that)."""
    return parse_arg(arg, steps=default).steps


def get_runs(arg=None):
    steps = steps_arg(arg, DEFAULT_STEPS)
    return [(f"{model}_n{size}", config, {**budget(steps), "data.train_size": size})
            for model, config in MODELS.items() for size in SIZES]
