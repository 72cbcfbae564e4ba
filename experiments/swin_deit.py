r"""Swin and DeiT on the small-data question: do locality (Swin) and distillation from a convnet with
strong augmentation (DeiT) close the ViT's gap to the BiT at small training-set sizes?

    vitjax sweep experiments/swin_deit.py:part=swin --workdir runs/swin
    vitjax sweep experiments/data_scaling.py --workdir runs/data_scaling --only bit_n550_s0 ...   # teachers
    for run in runs/data_scaling/bit_n*; do      # each teacher's best-validation step, as an .npz
      vitjax export $run/checkpoint_best --out experiments/results/deit_teachers/$(basename $run).npz; done
    vitjax sweep experiments/swin_deit.py:part=deit --workdir runs/deit
    vitjax sweep experiments/swin_deit.py:part=deit_aug --workdir runs/deit_aug
    vitjax plot runs/deit --out experiments/results/deit

The plain-arm protocol (experiments/protocol.py: 5,000 validation images, nested class-balanced
subsets 550 to 55k, budget max(1,200 steps, 8 epochs) of 128, test accuracy at the best-validation
step, seeds 0-2 up to 5.5k and 0-1 above, seed = training seed = subset draw). The ViT and BiT numbers
the read-outs compare against are the plain arm's (experiments/results/data_scaling), paired by seed.

Parts (13 runs each):
  swin      configs/fashion_mnist/swin.py: patch 2, window 7, stages of width 32 and 64 (164k parameters,
            1.24x the ViT's forward FLOPs), the ViT's recipe.
  deit      configs/fashion_mnist/vit_distilled.py: the default ViT with a distillation token, hard
            distillation from the plain arm's BiT run of the same size and seed at its best-validation
            step (the network whose test accuracy the study reports), no augmentation. `teachers=DIR`
            holds them as bit_n<size>_s<seed>.npz (default experiments/results/deit_teachers, committed:
            run directories do not outlive a session, 0.9 MB files do).
  deit_aug  configs/fashion_mnist/deit.py: the same student and teachers with DeiT's augmentation and
            regularisation fitted to 28x28 (RandAugment, erasing, Mixup/CutMix, smoothing, droppath).
`large_seeds=N` gives N seeds above 5.5k instead of the protocol's 2 (each needs its teacher).
A selected run whose teacher file is missing fails before any run starts (the runner checks every
run's inputs), naming the files; `--only` runs the students whose teachers exist.

Read-outs W1, W2 and D1-D4 in experiments/README.md, written before any run of this file.
Measured: part swin, 2026-12-02 on 2 CPU cores (AMD EPYC family 25 model 17), 380-416 s per 1,200-step
run and 1,008-1,091 s per 55k run (3,438 steps), ~110 minutes for all 13 (experiments/README.md, part
6). Parts deit and deit_aug, all 26 runs on the same host type: 284-368 s and 290-404 s per 1,200-step
run, 843-959 s per 55k run (the teacher's forward pass adds 1.32x the ViT's FLOPs but little time);
~90 and ~95 minutes for all 13 of each. Results: D1 fails, D2 inconclusive, D3 holds, D4 fails.
"""
import os

from vitjax.config import load_config, load_module, parse_part_arg, teacher_overrides

_protocol = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "protocol.py"))

BUDGET = _protocol.BUDGET.describe()
FEWSHOT = None
# The plain arm's BiT config: its model reads the teachers' .npz.
TEACHER_CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs", "fashion_mnist",
                              "bit.py")
PARTS = {"swin": ("swin", "configs/fashion_mnist/swin.py"),
         "deit": ("deit", "configs/fashion_mnist/vit_distilled.py"),
         "deit_aug": ("deitaug", "configs/fashion_mnist/deit.py")}
TITLE = ("Swin; DeiT students hard-distilled from the plain arm's BiT (deit_aug: with DeiT augmentation); "
         "plain-arm protocol, early stopping on validation")


def teacher(teachers: str, size: int, seed: int) -> str:
    """The plain arm's BiT of this size and seed, exported: the student's convnet teacher."""
    return os.path.join(teachers, f"bit_n{size}_s{seed}.npz")


def get_runs(arg=None):
    reads = {part: ("large_seeds",) if part == "swin" else ("teachers", "large_seeds") for part in PARTS}
    args = parse_part_arg(arg, reads, part="swin", teachers="experiments/results/deit_teachers",
                          large_seeds=_protocol.LARGE_SEEDS)
    prefix, config = PARTS[args.part]
    return [(f"{prefix}_n{size}_s{seed}", config, _overrides(args, size, seed))
            for size in _protocol.SIZES for seed in _protocol.seeds(size, large_seeds=args.large_seeds)]


def _overrides(args, size: int, seed: int) -> dict:
    out = _protocol.overrides(size, seed)
    if args.part == "deit_aug":  # the arm is the config's augmentation, which the protocol's plain pp would undo
        del out["data.pp_train"]
    if args.part != "swin":
        out["distillation.teacher"] = teacher(args.teachers, size, seed)
        out.update(_teacher_model())
    return out


def _teacher_model() -> dict:
    """The overrides that build the teachers' model: the plain arm's BiT config, as that sweep ran it."""
    bit = load_config(TEACHER_CONFIG)
    return teacher_overrides(bit.model_name, bit.model)
