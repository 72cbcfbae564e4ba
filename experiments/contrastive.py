r"""Issue 40 item 6: (a) SigLIP's claim that the sigmoid loss beats CLIP's softmax loss at small batch sizes, and
(b) LiT, a locked image tower from a vitjax supervised, MAE or DINO run, against both towers from scratch;
zero-shot accuracy on the caption data's held-out colour-item pairs, paired seeds, the checkpoint chosen on
validation pairs only.

    vitjax sweep experiments/contrastive.py:part=batch_s0 --workdir runs/contrastive   # (a) seed 0
    vitjax sweep experiments/contrastive.py:part=batch_s1 --workdir runs/contrastive   # (a) seed 1
    vitjax sweep experiments/contrastive.py:part=batch_s2 --workdir runs/contrastive   # (a) seed 2
    vitjax sweep experiments/contrastive.py:part=sources --workdir runs/contrastive    # (b) the 3 encoders
    E=experiments/results/contrastive/encoders; mkdir -p $E                            # commit these exports
    for k in vit mae dino; do
        vitjax export runs/contrastive/encoder_$k/checkpoint_best --out $E/encoder_$k.npz
    done
    vitjax sweep experiments/contrastive.py:part=lit --workdir runs/contrastive        # (b) 4 arms x 3 seeds
    for d in runs/contrastive/*_s[0-9]; do                 # held-out / seen zero-shot at the best step
        vitjax eval --workdir $d --checkpoint $d/checkpoint_best --captions
    done
    python experiments/contrastive_readouts.py runs/contrastive --out experiments/results/contrastive/readouts.json
    python experiments/contrastive_figure.py runs/contrastive --out experiments/results/contrastive/figure

Committed under experiments/results/contrastive/: encoders/ and sources/ (the encoders' exports and
tables), lit/ (the LiT part's tables, captions_eval.json files, readouts.json and figure, read before
the batch parts ran), batch/ (the batch parts' tables, logs and captions_eval.json files), and, once
every part is in, readouts.json and figure.png/.json of all parts (L1-L4 recompute unchanged there).

The read-outs (S1-S3, L1-L4) and their rules are pre-registered (experiments/README.md) before any run.

(a) `batch_s<seed>`: configs/captions/dual_encoder.py as it stands (SigLIP's layout: MAP-pooled ViT, patch
8 on 48x48 canvases, width 64, depth 2; text tower width 64, depth 2) with each loss (`sigmoid`, SigLIP's,
with its learned bias; `softmax`, CLIP's, on the same towers) at batch sizes BATCHES, STEPS steps each
(equal steps: the larger batch sees more pairs, as in SigLIP's comparison), the same learning rate, warmup
and cosine decay at every size (untuned: a confound both losses share at each size). One seed a part, so
that both losses of a seed and size run on one host and one code and pair; seed s fixes the initial
parameters and the pairs' order for both losses. (b) `lit`: batch LIT_BATCH, sigmoid loss, STEPS steps;
four arms per seed: `scratch` (both towers from init) and `vit`, `mae`, `dino` (the image tower loaded
from that encoder's export and locked: contrastive.lock_image, vitjax/interop/lit_init.py). Every arm's
image tower is a vitjax ViT encoder (CLS token, exact GELU: model.vision_pool='tok', activation='gelu'),
the scratch arm's too, so the arms differ in where the tower starts and whether it trains, not in its
shape. The encoders (`sources`, configs/captions/encoder.py, one each, seed 0: their cost, DINO's
above all) are pre-trained on the same 18,000 training pairs' images, never a held-out composition.

Every run holds out VAL_PAIRS training pairs for validation (seen compositions only: held-out pairs
never enter the training split) and evaluates zero-shot accuracy over the 40 colour-item pairs on them
every EVAL_EVERY steps; the best step (the objective's selection) gives every test number. No test
evaluation during training (evals.zero_shot.every_steps=0). Afterwards `vitjax eval --captions` scores
the best step on all TEST_PAIRS test pairs: zero_shot_held_out (the ~27% of test pairs whose colour-item
pair no training pair had: the read-outs' metric), zero_shot_seen, R@k (captions_eval.json in each run).

Cost (pilots, 2026-12-04, 2 CPU cores shared with another sweep at load average 6-9, 4 XLA devices; rough:
alone expect less, under heavier load more): 150 steps took 40-49 s of training at b = 32 (~0.15 s a step
beside compilation and evaluation) and 170-192 s at b = 1,024 (~1.1-1.25 s a step, 830-1,260 img/s), each
loss; a locked LiT arm at b = 128 ~0.06 s a step (3,500 img/s); the DINO encoder ~0.4 s a step (318 img/s).
Estimates: a `batch_s<s>` part ~1.5-2 h (both losses x 6 sizes x 1,000 steps, ~2.6 s per step of the ladder
and loss, plus ~45 s a run of start-up, compilation and evaluation); `sources` ~35-40 min; `lit` ~30 min;
the `vitjax eval --captions` loop ~30 s a run.
"""
from vitjax.config import parse_part_arg

TITLE = "Dual encoders on captions: sigmoid vs softmax loss against batch size; LiT vs from scratch"
FEWSHOT = None  # a dual encoder has no class head; its evaluation is zero-shot (vitjax eval --captions)
BUDGET = "equal steps at every batch size"
LOSSES = ("sigmoid", "softmax")
BATCHES = (32, 64, 128, 256, 512, 1024)
SEEDS = (0, 1, 2)
STEPS = 1_000
EVAL_EVERY = 100
VAL_PAIRS = 2_000
TEST_PAIRS = 10_000
LIT_BATCH = 128
ENCODERS = ("vit", "mae", "dino")
ARMS = ("scratch",) + ENCODERS
ENCODER_DIR = "experiments/results/contrastive/encoders"
PARTS = tuple(f"batch_s{seed}" for seed in SEEDS) + ("sources", "lit")
# Every run's shared settings: validation on training pairs only, no test evaluation during training.
COMMON = {"data.val_size": VAL_PAIRS, "eval_every_steps": EVAL_EVERY, "checkpoint_every_steps": EVAL_EVERY,
          "evals.zero_shot.every_steps": 0, "evals.zero_shot.max_test": TEST_PAIRS}


def batch_name(loss: str, batch: int, seed: int) -> str:
    return f"{loss}_b{batch}_s{seed}"


def lit_name(arm: str, seed: int) -> str:
    return f"lit_{arm}_s{seed}"


def encoder_name(kind: str) -> str:
    return f"encoder_{kind}"


def _lit_run(arm: str, seed: int, encoders: str):
    overrides = {**COMMON, "seed": seed, "batch_size": LIT_BATCH, "model.vision_pool": "tok",
                 "model.activation": "gelu"}
    if arm != "scratch":
        overrides.update({"init_from": f"{encoders}/{encoder_name(arm)}.npz", "contrastive.lock_image": True})
    return lit_name(arm, seed), f"configs/captions/dual_encoder.py:steps={STEPS}", overrides


def get_runs(arg=None):
    """`part` picks the runs (PARTS); `encoders` is the directory holding the encoders' exports
    (`encoder_<kind>.npz`, written by the commands above) for part `lit`."""
    arg = parse_part_arg(arg, {part: ("encoders",) if part == "lit" else () for part in PARTS},
                         part="batch_s0", encoders=ENCODER_DIR)
    if arg.part == "sources":
        return [(encoder_name(kind), f"configs/captions/encoder.py:kind={kind}", {"seed": 0}) for kind in ENCODERS]
    if arg.part == "lit":
        return [_lit_run(arm, seed, arg.encoders) for seed in SEEDS for arm in ARMS]
    seed = int(arg.part.removeprefix("batch_s"))
    return [(batch_name(loss, batch, seed), f"configs/captions/dual_encoder.py:loss={loss},steps={STEPS}",
             {**COMMON, "seed": seed, "batch_size": batch}) for batch in BATCHES for loss in LOSSES]
