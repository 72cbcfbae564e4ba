r"""The plain arm's budget ladder: how long each family must train at each size before more training
stops helping on validation (issue: the 8-epoch budget, not the data, decided the 55k gap).

    vitjax sweep experiments/convergence.py:part=1 --workdir runs/convergence   # 550, 5.5k, 55k
    vitjax sweep experiments/convergence.py:part=2 --workdir runs/convergence   # 1.7k, 17k
    vitjax sweep experiments/convergence.py:part=seeds --workdir runs/convergence  # seeds 1-2 at 55k
    vitjax sweep experiments/convergence.py:part=onehost --workdir runs/onehost  # C2-C4 on one host
    vitjax sweep experiments/convergence.py:part=small --workdir runs/onehost    # seeds 1-2 at 550, 1.7k
    python experiments/convergence_report.py runs/convergence --out experiments/results/convergence

For each family (configs/fashion_mnist/{vit,bit}.py, as the plain arm trains them: experiments/protocol.py)
and size, rungs of 1x, 2x and 4x the protocol's budget B(n) = max(1,200 steps, 8 epochs): 1,200 /
2,400 / 4,800 steps up to 17k images, 8 / 16 / 32 epochs at 55k. Every rung uses the warmup-stable-decay
schedule (constant rate, the last 20% a linear cooldown to zero), so the 4x run (the trunk) keeps its
checkpoints where the shorter rungs' cooldowns start, and each shorter rung trains only its cooldown
from there (`branch_from`): the same run as from step 0, for ~1.2x the trunk's steps per ladder. Seed 0,
the protocol's validation split; a rung's number is validation accuracy at its best step (test accuracy
at that step is reported beside it, never used to choose).

`:part=seeds` trains seeds 1 and 2 at 55k images at each family's converged budget as the committed
ladder chose it (experiments/results/convergence/convergence.json), and at 1x where that is longer (the
1x rung is C4's baseline), again as one trunk with the 1x cooldown branched off it. `:part=onehost`
trains seed 0 at 550, 5.5k and 55k and seeds 1-2 at 5.5k the same way, so that every term a seed pairs
ran on one host and code (seed 0's ladders did not); `:part=small` seeds 1-2 at 550 and 1.7k (C1).

The convergence rule, pre-registered in experiments/README.md: the converged budget of a family and
size is the shortest rung whose next rung gains <= 0.5 points of best validation accuracy; a point
whose last rung still gains more is **capped** at the top rung.

Expected time on 2 idle cores of the 2026-12-01 host (ViT ~0.08 s a step, BiT ~0.13, ~8% validation):
part 1 ~100 min (ViT 26.9k steps, BiT 26.9k); part 2 ~75 min (22.6k steps each). Measured on
2026-12-03's host, about 2x slower (experiments/README.md, Part 1c): the 55k ViT ladder 2,863 s (its
4x trunk 2,452 s, partly beside the test suite), the 55k BiT's 1,323 s of trunk to its 2x branch
point plus 485 s of 1x and 2x cooldowns; the 550-image ViT ladder 1,246 s under load (1,039 + 69 + 138).
"""
import json
import os

from vitjax.config import load_module
from vitjax.sweep.budget import Ladder

_HERE = os.path.dirname(os.path.abspath(__file__))
_protocol = load_module(os.path.join(_HERE, "protocol.py"))
CHOSEN = os.path.join(_HERE, "results", "convergence", "convergence.json")

LADDER = Ladder(_protocol.BUDGET, multiples=(1, 2, 4), cooldown_fraction=0.2)
BUDGET = LADDER.describe()
TITLE = "Plain arm, budget ladder (seed 0): best validation accuracy against training length"
FEWSHOT = None
MODELS = {"vit": "configs/fashion_mnist/vit.py", "bit": "configs/fashion_mnist/bit.py"}
PARTS = {"1": (550, 5_500, 55_000), "2": (1_700, 17_000)}
SEEDS = (0,)
# part: ((sizes, seeds), ...) at the converged budgets. "onehost": every term of C2-C4 for seed 0 and
# the 5.5k terms of seeds 1-2 again, on the host and code of "seeds" (experiments/README.md, Part 1c).
SEED_PARTS = {"seeds": (((55_000,), (1, 2)),),
              "onehost": (((550, 5_500, 55_000), (0,)), ((5_500,), (1, 2))),
              "small": (((550, 1_700), (1, 2)),)}


def rung_name(model: str, size: int, seed: int, multiple: int) -> str:
    return f"{model}_n{size}_s{seed}_x{multiple}"


def ladder_runs(model: str, config: str, size: int, seed: int, ladder: Ladder = LADDER) -> list:
    """The trunk (the longest rung) first, then each shorter rung branched off it."""
    return ladder.runs(lambda multiple: rung_name(model, size, seed, multiple), config,
                       _protocol.overrides(size, seed), size)


def converged_multiple(model: str, size: int, chosen_file: str = CHOSEN) -> int:
    """The multiple the committed seed-0 ladder chose for `model` at `size` (capped ones at their top)."""
    chosen = json.load(open(chosen_file)) if os.path.exists(chosen_file) else {}
    key = f"{model}_n{size}"
    if key not in chosen:
        raise ValueError(f"{chosen_file} has no ladder for {key}: run its seed-0 ladder and "
                         f"experiments/convergence_report.py before its other seeds")
    return chosen[key]["chosen"]


def converged_runs(model: str, config: str, size: int, seed: int, chosen_file: str = CHOSEN) -> list:
    """One seed at the converged budget, with the 1x rung beside it (branched off when shorter)."""
    multiples = tuple(sorted({1, converged_multiple(model, size, chosen_file)}))
    return ladder_runs(model, config, size, seed, Ladder(LADDER.budget, multiples, LADDER.cooldown_fraction))


def get_runs(arg=None):
    part = dict(item.split("=", 1) for item in arg.split(",")).get("part") if arg else None
    if part in SEED_PARTS:
        return [run for sizes, seeds in SEED_PARTS[part] for size in sizes for seed in seeds
                for model, config in MODELS.items() for run in converged_runs(model, config, size, seed)]
    if part not in PARTS:
        raise ValueError(f"choose a part: experiments/convergence.py:part=1 (sizes {PARTS['1']}), "
                         f":part=2 (sizes {PARTS['2']}) or a part at the converged budgets: "
                         f"{', '.join(f':part={name}' for name in SEED_PARTS)}")
    return [run for size in PARTS[part] for seed in SEEDS for model, config in MODELS.items()
            for run in ladder_runs(model, config, size, seed)]
