r"""Where should a small SAM's image encoder start (issue 39 item 6)? At random, from vitjax's own MAE (as SAM
starts from an MAE), or from a supervised ViT: paired seeds, mIoU after 1, 3 and 5 clicks and for a box on
the canvases' seen and unseen classes, the checkpoint chosen on validation canvases only.

    vitjax sweep experiments/sam_init.py:part=pretrain --workdir runs/sam_init     # 6 encoders, ~30 min
    E=experiments/results/sam_init/encoders                                         # commit these exports
    for s in 0 1 2; do for m in mae vit; do
        vitjax export runs/sam_init/encoder_${m}_s$s/checkpoint_best --out $E/encoder_${m}_s$s.npz
    done; done
    vitjax sweep experiments/sam_init.py:part=seed0 --workdir runs/sam_init        # SAM x 3 arms, ~1.75 h
    vitjax sweep experiments/sam_init.py:part=seed1 --workdir runs/sam_init
    vitjax sweep experiments/sam_init.py:part=seed2 --workdir runs/sam_init
    R=experiments/results/sam_init
    python experiments/readouts.py --sam_init runs/sam_init --out $R/readouts.json
    python experiments/sam_table.py runs/sam_init --out $R/miou                    # miou.md, miou.csv
    W=runs/sam_init; for s in 0 1 2; do                                             # figures of prompts and masks
        vitjax analyze --workdir $W/sam_mae_s$s --checkpoint $W/sam_mae_s$s/checkpoint_best --beside \
            $W/sam_vit_s$s/checkpoint_best $W/sam_random_s$s/checkpoint_best --out $R/s$s
    done

Committed under experiments/results/sam_init/: encoders/ (the exports), pretrain/ (the pre-training
part's sweep tables and log), seeds/ (the SAM parts' results.csv/json, summary.csv/json and sweep logs),
readouts.json, miou.md/.csv and s<seed>/ (the figures).

The read-outs (I1-I6) and their decision rule are pre-registered in experiments/README.md before any run.

Pre-training (`part=pretrain`): configs/sam/encoder_mae.py and configs/sam/encoder_vit.py as they stand,
one of each per seed s = 0, 1, 2 (training seed s): configs/fashion_mnist's MAE (20 epochs) and ViT (7
epochs) at patch 8 on 32-pixel images, the canvases' 5 seen classes only, 2,500 of their training images
held out; each keeps its best-validation step (lowest reconstruction loss, highest accuracy), which is what
is exported and what SAM starts from. A pre-training per seed, so that the seeds vary the encoder as well
as SAM's own training: the read-outs are about the initialisation, not about one encoder.

SAM (`part=seed<s>`, one seed a part, so that each seed's three arms run on one host and one code and pair):
configs/sam/tiny.py (width 64, depth 6, patch 8, 64-pixel canvases of 3 items, 10,000 training canvases) for
2,500 steps (STEPS; 40,000 canvases, ~4 passes over the 9,500 trained on) of 16 canvases, warmup 100, the
rest of its settings as they stand; seed s for all three arms, so they share the canvases, their order, the
prompts drawn and every initial parameter that init_from does not replace. The arms differ only in
`init_from`: none (`sam_random_s<s>`), the seed's MAE export (`sam_mae_s<s>`) or the seed's ViT export
(`sam_vit_s<s>`) (what maps: vitjax/interop/sam_init.py). 500 of the training canvases are held out for
validation (seen classes only) and scored every EVAL_EVERY steps; the best step by validation mIoU after 3
clicks (the objective's selection) gives every test number (`test_miou_<group>_<prompt>_at_best`, 500 seen
and 500 unseen test canvases). Test is never used to select.

Cost (pilots of 150 steps a kind, 2026-12-04, on 2 CPU cores shared with another engineer's long sweep, load
average 4-7: rough): MAE pre-training ~1,700 img/s, 37 s for 150 steps with data, compiling and its
evaluation; ViT ~1,700 img/s, 34 s; SAM 0.68-0.80 s a step (21-24 canvases/s) for every arm, 37-54 s
compiling, ~17 s a validation of 500 canvases (the first one compiling), ~40 s the test of 1,000, 215-236 s
in all for 150 steps. At that load: an MAE (4,297 steps) ~6 min, a ViT (1,504 steps) ~3 min, the
pre-training part ~30 min; a SAM run of 2,500 steps ~30 min of steps + ~3 min of 10 validations + ~2 min
compiling, data and test, ~35 min; a seed's part (3 runs) ~1 h 45 min. On idle cores expect less.
Measured (2026-12-06, AMD EPYC, idle cores): the pre-training part 18 min (an MAE ~4 min, a ViT ~1.5 min).
"""
import os

from vitjax.config import parse_part_arg

TITLE = "SAM's image encoder: random, from vitjax's MAE, from a supervised ViT; mIoU seen/unseen, best validation"
FEWSHOT = None  # SAM classifies nothing
SEEDS = (0, 1, 2)
STEPS = 2_500
EVAL_EVERY = 250
VAL_CANVASES = 500
ENCODERS = {"mae": "configs/sam/encoder_mae.py", "vit": "configs/sam/encoder_vit.py"}
ARMS = ("random", *ENCODERS)  # SAM's encoder at init, or from each encoder
PARTS = ("pretrain", *(f"seed{s}" for s in SEEDS))


def encoder_name(method: str, seed: int) -> str:
    return f"encoder_{method}_s{seed}"


def sam_name(arm: str, seed: int) -> str:
    return f"sam_{arm}_s{seed}"


def sam_overrides(arm: str, seed: int, encoders: str) -> dict:
    """The config overrides of one SAM run of the study."""
    overrides = {"seed": seed, "total_steps": STEPS, "warmup_steps": 100, "data.val_size": VAL_CANVASES,
                 "eval_every_steps": EVAL_EVERY, "checkpoint_every_steps": 500, "keep_checkpoints": 1}
    if arm != "random":
        overrides["init_from"] = os.path.join(encoders, f"{encoder_name(arm, seed)}.npz")
    return overrides


def get_runs(arg=None):
    """`part` picks the runs: 'pretrain' (every encoder) or 'seed<s>' (SAM's three arms at seed s);
    `encoders` is the directory holding the exports (`encoder_<method>_s<s>.npz`, the commands above)."""
    arg = parse_part_arg(arg, {part: () if part == "pretrain" else ("encoders",) for part in PARTS},
                         part="pretrain", encoders="experiments/results/sam_init/encoders")
    if arg.part == "pretrain":
        return [(encoder_name(method, seed), config, {"seed": seed})
                for seed in SEEDS for method, config in ENCODERS.items()]
    seed = int(arg.part.removeprefix("seed"))
    return [(sam_name(arm, seed), "configs/sam/tiny.py", sam_overrides(arm, seed, arg.encoders)) for arm in ARMS]
