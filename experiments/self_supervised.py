r"""Label-free pre-training against the ViT's small-data gap: MAE and DINO on the 55k training images without
labels, then the ViT fine-tuned from each encoder on N labelled images, under the study's protocol.

    vitjax sweep experiments/self_supervised.py:part=mae --workdir runs/self_supervised    # MAE pre-training
    vitjax sweep experiments/self_supervised.py:part=dino --workdir runs/self_supervised   # DINO pre-training
    vitjax export runs/self_supervised/mae_pretrain --out experiments/results/self_supervised/pretrained/mae_pretrain.npz
    vitjax export runs/self_supervised/dino_pretrain --out experiments/results/self_supervised/pretrained/dino_pretrain.npz
    vitjax sweep experiments/self_supervised.py:part=finetune --workdir runs/self_supervised  # both encoders, N labels
    vitjax eval --workdir runs/self_supervised/dino_pretrain --knn_only   # frozen features (and the MAE's)
    vitjax analyze --workdir runs/self_supervised/dino_pretrain --beside runs/data_scaling/vit_n55000_s0 \
        --num_images 256                                                  # U5's 256 test images
    vitjax plot runs/self_supervised --out experiments/results/self_supervised

U4's k-NN on N labels, for N in 550 and 1700 and seed S in 0 1 2: the DINO teacher's, and the plain arm's
ViT trained on those N images (`vitjax sweep experiments/data_scaling.py --workdir runs/data_scaling
--only vit_n550_s0 ...` re-trains them where runs/ was not kept; their test accuracy should repeat the
committed table's):

    vitjax eval --workdir runs/self_supervised/dino_pretrain --knn_only --knn_train_size N --knn_subset_seed S
    vitjax eval --workdir runs/data_scaling/vit_nN_sS --knn_only --knn_train_size N --knn_subset_seed S
    python experiments/readouts.py --data_scaling experiments/results/data_scaling \
        --self_supervised runs/self_supervised --knn_dino runs/self_supervised/dino_pretrain \
        --knn_vit runs/data_scaling/vit_n550_s* runs/data_scaling/vit_n1700_s* \
        --segmentation runs/self_supervised/dino_pretrain/analysis/cls_segmentation.json

The read-outs it tests (U1-U5) are pre-registered in experiments/README.md, Part 7.

Pre-training (parts `mae` and `dino`, one run each): configs/fashion_mnist/{mae,dino}.py as they stand
(20 and 50 epochs of the 55,000 training images, the 5,000 validation images held out as in every study
run, labels unused), seed 0. One pre-training seed: its cost (~17 minutes and ~3.5 hours on 2 cores)
is the reason; the fine-tuning seeds below vary the labelled subset and the head, not the encoder.

Fine-tuning (part `finetune`, after both pre-trainings): the plain arm's ViT config and protocol
(experiments/protocol.py: the same sizes, budgets, validation split, best-validation test accuracy and
paired seeds, so each run pairs with the plain arm's ViT and BiT of the same size and seed), starting
from the pre-trained encoder (`init_from`; the classifier head starts at zero, the learned position
embedding from the encoder's table). The encoders come from the committed exports above (the MAE's
encoder, the DINO teacher's backbone; each loads exactly as its run directory would): run directories
do not outlive a session here, and the fine-tuning runs span sessions. Sizes 550, 1.7k, 5.5k and
55k (17k left out to fit the part into ~2 hours): 11 runs per encoder.

Expected (2 CPU cores): the MAE pre-training took 1,003 s (2026-12-03; 1,069 s alone the day before);
DINO's 12,682 s (3.5 hours, in three resumed segments, 200-255 img/s alone), more than the ~2 hours
its token count suggested. The fine-tuning part (measured 2026-12-03): 197-224 s per 1,200-step run
alone at 550 and 1.7k (226-241 s at 5.5k with test runs beside them), 532-565 s per 3,438-step run at
55k: ~1 hour 45 minutes for the 22 runs. Test accuracy at best validation (%, 550 / 1.7k / 5.5k / 55k):
MAE 79.06 / 83.09 / 86.06 / 91.13, DINO 71.45 / 78.64 / 83.16 / 89.75 (U1-U3 hold, U4 fails, U5
inconclusive: experiments/README.md, Part 7).
"""
import os

from vitjax.config import load_module, parse_part_arg

_protocol = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "protocol.py"))

BUDGET = _protocol.BUDGET.describe()
TITLE = "ViT fine-tuned from label-free pre-training (MAE, DINO on 55k unlabelled), early stopping on validation"
FEWSHOT = None
SIZES = (550, 1_700, 5_500, 55_000)
PRETRAIN = {"mae": "configs/fashion_mnist/mae.py", "dino": "configs/fashion_mnist/dino.py"}
PRETRAIN_SEED = 0
PARTS = ("mae", "dino", "finetune")


def pretrain_name(method: str) -> str:
    return f"{method}_pretrain"


def get_runs(arg=None):
    """`part` picks the runs; `pretrained` is the directory holding the pre-trainings' exports
    (`<method>_pretrain.npz`, written by the commands above)."""
    arg = parse_part_arg(arg, {part: ("pretrained",) if part == "finetune" else () for part in PARTS},
                         part="finetune", pretrained="experiments/results/self_supervised/pretrained")
    if arg.part in PRETRAIN:
        return [(pretrain_name(arg.part), PRETRAIN[arg.part], {"seed": PRETRAIN_SEED})]
    encoder = {method: os.path.join(arg.pretrained, f"{pretrain_name(method)}.npz") for method in PRETRAIN}
    return [(f"{method}_ft_n{size}_s{seed}", "configs/fashion_mnist/vit.py",
             {**_protocol.overrides(size, seed), "init_from": encoder[method]})
            for size in SIZES for seed in _protocol.seeds(size) for method in PRETRAIN]
