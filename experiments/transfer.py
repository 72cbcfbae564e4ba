r"""Transfer probe, closer to the ViT paper's Fig. 4: pre-train on five Fashion-MNIST classes, then a linear
few-shot probe on the other five, beside the in-domain probe (read-out T1 in experiments/README.md).

    vitjax sweep experiments/transfer.py --workdir runs/transfer
    vitjax plot runs/transfer --out experiments/results/transfer

Pre-training: ViT and BiT (configs/fashion_mnist/{vit,bit}.py) on classes 0-4 only (T-shirt/top, trouser,
pullover, dress, coat; `data.classes`, relabelled 0-4, so the heads have 5 outputs) with the protocol's
overrides (experiments/protocol.py: nested class-balanced subsets, budget max(1,200 steps, 8 epochs),
test accuracy at the best-validation step, paired seeds 0 and 1 for both families). The class filter
comes before the validation hold-out, so val_size counts the kept classes: 2,500 = 500 per class, the
protocol's 500 per class, leaving 5 x 5,500 = 27,500 training images, the largest size here.

Probes (frozen pre-logit features, ridge regression, k = 1, 5, 10, 25 per class, 10 draws of the k-shot
set each, mean and std over draws; vitjax/evaluate/fewshot.py):
  transfer  classes 5-9 (sandal, shirt, sneaker, bag, ankle boot), never seen in pre-training: k-shot
            sets from their train split, scored on all 5,000 of their test images (transfer.json;
            table columns transfer_<k>shot and transfer_<k>shot_std).
  in-domain classes 0-4 as pre-trained: k-shot sets from their train split (they may overlap the
            pre-training set, as in the paper), scored on all 5,000 of their test images (fewshot.json;
            fewshot_<k>shot, fewshot_<k>shot_std).
T1 reads transfer_10shot at the smallest and largest size, per family.

Measured (2026-12-02, 2 CPU cores; the results README, part 5): 89 minutes summed over the 12 runs,
an upper bound (two runs trained at a time for an hour, tests beside them for part of it).
"""
import os

from vitjax.config import load_module, parse_arg

_protocol = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "protocol.py"))

PRETRAIN_CLASSES = (0, 1, 2, 3, 4)
PROBE_CLASSES = (5, 6, 7, 8, 9)
VAL_SIZE = 2_500  # 500 per kept class, as the protocol's 5,000 over ten classes
SIZES = (550, 2_750, 27_500)  # 27,500: all five classes' training images left after validation
SEEDS = (0, 1)
MODELS = {"vit": "configs/fashion_mnist/vit.py", "bit": "configs/fashion_mnist/bit.py"}

BUDGET = _protocol.BUDGET.describe()
TITLE = "Pre-trained on classes 0-4; linear few-shot probe on classes 5-9 (transfer) and 0-4 (in-domain)"
_PROBE = {"shots": (1, 5, 10, 25), "seeds": 10, "max_test_examples": None}
FEWSHOT = dict(_PROBE)  # in-domain: the run's own classes
FEWSHOT_TRANSFER = {**_PROBE, "data": {"classes": PROBE_CLASSES}}


def overrides(size: int, seed: int) -> dict:
    """The protocol's overrides of one run, on the pre-training classes with their validation split."""
    return {**_protocol.overrides(size, seed), "data.classes": PRETRAIN_CLASSES, "data.val_size": VAL_SIZE}


def get_runs(arg=None):
    parse_arg(arg)  # takes no argument: a key given by mistake is refused, not ignored
    return [(f"{model}_n{size}_s{seed}", config, overrides(size, seed))
            # Pairs first: a sweep stopped part-way leaves paired seeds at the sizes it finished.
            for size in SIZES for seed in SEEDS for model, config in MODELS.items()]
