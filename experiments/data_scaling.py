r"""Data scaling at laptop scale, the plain arm: ViT vs a BiT ResNet as the labelled training set grows.

    vitjax sweep experiments/data_scaling.py --workdir runs/data_scaling
    vitjax plot runs/data_scaling --out experiments/results/data_scaling

The ViT paper's Fig. 3/4 question at 550 to 55,000 Fashion-MNIST images: does the ResNet's lead shrink
as data grows? Protocol (experiments/protocol.py): 5,000 validation images held out, nested
class-balanced subsets of 550, 1.7k, 5.5k, 17k and 55k, a budget that grows with the data, test accuracy
at the best-validation step, paired seeds (3 up to 5.5k, 2 above): 26 runs. The read-outs it tests are
pre-registered in experiments/README.md.

The models (configs/fashion_mnist/{vit,bit}.py, same Adam, lr 2e-3, batch 128, warmup then cosine):
  ViT   width 64, depth 6, patch 4 (7x7 tokens + CLS); 206k parameters.
  BiT   BiT-R26 (ResNet-v2, GroupNorm, weight standardisation), small 3x3 stem, root width 8; 223k
        parameters, matched to the ViT in size and compute as the paper compares models of similar cost.

Expected: about 70 minutes on 2 idle CPU cores (2026-12-01 rates: ViT ~1,950 img/s, BiT ~1,200; 2.6M
training examples per family, plus ~20 s of start-up per run and ~8% for validation); measured: the
results README.
"""
import os

from vitjax.config import load_module, parse_arg

_protocol = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "protocol.py"))

BUDGET = _protocol.BUDGET.describe()
TITLE = "Plain arm: no augmentation or extra regularisation, early stopping on validation"
FEWSHOT = None  # the transfer probe is its own sweep

MODELS = {
    "vit": "configs/fashion_mnist/vit.py",
    "bit": "configs/fashion_mnist/bit.py",
}


def get_runs(arg=None):
    """`:large_seeds=N` trains N seeds above 5.5k instead of the protocol's 2 (e.g. a DeiT teacher for
    seed 2 at 55k: `:large_seeds=3 --only bit_n55000_s2`)."""
    args = parse_arg(arg, large_seeds=_protocol.LARGE_SEEDS)
    return [(f"{model}_n{size}_s{seed}", config, _protocol.overrides(size, seed))
            # Pairs first: a sweep stopped part-way leaves paired seeds at the sizes it finished.
            for size in _protocol.SIZES
            for seed in _protocol.seeds(size, large_seeds=args.large_seeds)
            for model, config in MODELS.items()]
