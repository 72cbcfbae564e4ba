r"""The plain arm's budget ladder: how long each family must train at each size before more training
stops helping on validation (issue: the 8-epoch budget, not the data, decided the 55k gap).

    vitjax sweep experiments/convergence.py:part=1 --workdir runs/convergence   # 550, 5.5k, 55k
    vitjax sweep experiments/convergence.py:part=2 --workdir runs/convergence   # 1.7k, 17k
    python experiments/convergence_report.py runs/convergence --out experiments/results/convergence

For each family (configs/fashion_mnist/{vit,bit}.py, as the plain arm trains them: experiments/protocol.py)
and size, rungs of 1x, 2x and 4x the protocol's budget B(n) = max(1,200 steps, 8 epochs): 1,200 /
2,400 / 4,800 steps up to 17k images, 8 / 16 / 32 epochs at 55k. Every rung uses the warmup-stable-decay
schedule (constant rate, the last 20% a linear cooldown to zero), so the 4x run (the trunk) keeps its
checkpoints where the shorter rungs' cooldowns start, and each shorter rung trains only its cooldown
from there (`branch_from`): the same run as from step 0, for ~1.2x the trunk's steps per ladder. Seed 0,
the protocol's validation split; a rung's number is validation accuracy at its best step (test accuracy
at that step is reported beside it, never used to choose).

The convergence rule, pre-registered in experiments/README.md: the converged budget of a family and
size is the shortest rung whose next rung gains <= 0.5 points of best validation accuracy; a point
whose last rung still gains more is **capped** at the top rung.

Expected time on 2 idle cores of the 2026-12-01 host (ViT ~0.08 s a step, BiT ~0.13, ~8% validation):
part 1 ~100 min (ViT 26.9k steps, BiT 26.9k); part 2 ~75 min (22.6k steps each). Measured on
2026-12-03's host, about 2x slower (experiments/README.md, Part 1c): the 55k ViT ladder 2,863 s (its
4x trunk 2,452 s, partly beside the test suite), the 55k BiT's 1,323 s of trunk to its 2x branch
point plus 485 s of 1x and 2x cooldowns; the 550-image ViT ladder 1,246 s under load (1,039 + 69 + 138).
"""
import os

from vitjax.config import load_module
from vitjax.sweep.budget import Ladder

_protocol = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "protocol.py"))

LADDER = Ladder(_protocol.BUDGET, multiples=(1, 2, 4), cooldown_fraction=0.2)
BUDGET = LADDER.describe()
TITLE = "Plain arm, budget ladder (seed 0): best validation accuracy against training length"
FEWSHOT = None
MODELS = {"vit": "configs/fashion_mnist/vit.py", "bit": "configs/fashion_mnist/bit.py"}
PARTS = {"1": (550, 5_500, 55_000), "2": (1_700, 17_000)}
SEEDS = (0,)


def rung_name(model: str, size: int, seed: int, multiple: int) -> str:
    return f"{model}_n{size}_s{seed}_x{multiple}"


def ladder_runs(model: str, config: str, size: int, seed: int, ladder: Ladder = LADDER) -> list:
    """The trunk (the longest rung) first, then each shorter rung branched off it."""
    return ladder.runs(lambda multiple: rung_name(model, size, seed, multiple), config,
                       _protocol.overrides(size, seed), size)


def get_runs(arg=None):
    part = dict(item.split("=", 1) for item in arg.split(",")).get("part") if arg else None
    if part not in PARTS:
        raise ValueError(f"choose a part: experiments/convergence.py:part=1 (sizes {PARTS['1']}) or "
                         f":part=2 (sizes {PARTS['2']})")
    return [run for size in PARTS[part] for seed in SEEDS for model, config in MODELS.items()
            for run in ladder_runs(model, config, size, seed)]
