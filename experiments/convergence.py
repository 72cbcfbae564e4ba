r"""The plain arm's budget ladder: how long each family must train at each size before more training
stops helping on validation (issue: the 8-epoch budget, not the data, decided the 55k gap).

    vitjax sweep experiments/convergence.py:part=1 --workdir runs/convergence   # 550, 5.5k, 55k
    vitjax sweep experiments/convergence.py:part=2 --workdir runs/convergence   # 1.7k, 17k
    vitjax sweep experiments/convergence.py:part=seeds --workdir runs/convergence  # seeds 1-2 at 55k
    vitjax sweep experiments/convergence.py:part=onehost --workdir runs/onehost  # C2-C4 on one host
    vitjax sweep experiments/convergence.py:part=small --workdir runs/onehost    # seeds 1-2 at 550, 1.7k
    vitjax sweep experiments/convergence.py:part=climb,ladders=vit_lighter --workdir runs/climb  # capped: 8x
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

`:part=arm,arm=ARM` runs seed 0's ladders of an arm whose read-outs depend on the budget, and
`:part=arm_seeds,arm=ARM` its other seeds at the multiples its ladders chose (`seeds=2` only those,
which may lie past the protocol's: seeds added where they decide a read-out) (R1c-R3c, M1c, M3c, D4c in
experiments/README.md): ARM is `deit` (the augmented DeiT student at 55k), `size` (ViT width 32 and BiT
root width 4 at 550 and 55k; the other widths, 64 and 8, are the plain configs, whose converged runs
are C1-C4's) or `reg` (the regularisation arm at 550, 1.7k, 5.5k and 55k, at the strength its extended
grid picked). Each arm's own sweep file gives its runs at the protocol's budget; the ladder re-times
them. Beside them each part trains, for the same seeds and sizes, the plain runs its read-outs pair
with (its controls: the plain families at their converged multiples), so that a seed's terms share one
host and code; `controls=false` leaves them out where the committed plain runs already share the arm's
host and code. Arms run in one workdir share their controls (a finished run is not trained again), and
`readouts.py --arms` picks each arm's ladders out by name; `sizes=A+B` trains only those of an arm's sizes,
so that a part fits a sitting of ~2 h on 2 cores. Estimates: each part's steps (cooldown branches at 20%
of theirs) at the primed seed 1's measured rates on the AMD host (ViT 0.135 s a step, BiT 0.23, validation
included), controls counted once: `reg` as sizes=550+1700 ~1.6 h, sizes=5500 ~0.7 h, sizes=55000 ~2.1 h;
`size` as sizes=550 ~1 h, sizes=55000 ~2.1 h (its narrower models are faster: an upper bound); `deit`
whole ~1-1.5 h (its teacher's forward pass on top of a ViT step). Its table and figure:
`python experiments/convergence_report.py runs/arms --arm ARM --out experiments/results/convergence/arms/ARM`,
which is also where `:part=arm_seeds` reads the chosen multiples.

`:part=climb` (`ladders=A+B`: some of them) trains every seed-0 ladder that a committed convergence.json
marks capped again as a 1x-8x ladder (CLIMB), all its rungs on one host and code, so that the rule can
pick among four rungs (experiments/README.md, "The capped ladders one rung higher").

The convergence rule, pre-registered in experiments/README.md: the converged budget of a family and
size is the shortest rung whose next rung gains <= 0.5 points of best validation accuracy; a point
whose last rung still gains more is **capped** at the top rung.

Expected time on 2 idle cores of the 2026-12-01 host (ViT ~0.08 s a step, BiT ~0.13, ~8% validation):
part 1 ~100 min (ViT 26.9k steps, BiT 26.9k); part 2 ~75 min (22.6k steps each). Measured on
2026-12-03's host, about 2x slower (experiments/README.md, Part 1c): the 55k ViT ladder 2,863 s (its
4x trunk 2,452 s, partly beside the test suite), the 55k BiT's 1,323 s of trunk to its 2x branch
point plus 485 s of 1x and 2x cooldowns; the 550-image ViT ladder 1,246 s under load (1,039 + 69 + 138).
"""
import dataclasses
import json
import os

from vitjax.config import load_module, parse_part_arg
from vitjax.sweep.budget import Ladder

_HERE = os.path.dirname(os.path.abspath(__file__))
_protocol = load_module(os.path.join(_HERE, "protocol.py"))
CHOSEN = os.path.join(_HERE, "results", "convergence", "convergence.json")

LADDER = Ladder(_protocol.BUDGET, multiples=(1, 2, 4), cooldown_fraction=0.2)
# part=climb: the ladders capped at 4x, one rung higher, all rungs again on one host and code.
CLIMB = Ladder(_protocol.BUDGET, multiples=(1, 2, 4, 8), cooldown_fraction=0.2)
BUDGET = LADDER.describe()
TITLE = "Budget ladders (the plain arm's, or an arm's with its controls): one line per rung, test accuracy at best validation"
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


def ladder_runs(model: str, config: str, size: int, seed: int, ladder: Ladder = LADDER,
                overrides: dict | None = None) -> list:
    """The trunk (the longest rung) first, then each shorter rung branched off it. `overrides`: the run's
    at the protocol's budget (default: the plain arm's, protocol.overrides)."""
    overrides = _protocol.overrides(size, seed) if overrides is None else overrides
    return ladder.runs(lambda multiple: rung_name(model, size, seed, multiple), config, overrides, size)


def converged_multiple(model: str, size: int, chosen_file: str = CHOSEN) -> int:
    """The multiple the committed seed-0 ladder chose for `model` at `size` (capped ones at their top)."""
    chosen = json.load(open(chosen_file)) if os.path.exists(chosen_file) else {}
    key = f"{model}_n{size}"
    if key not in chosen:
        raise ValueError(f"{chosen_file} has no ladder for {key}: run its seed-0 ladder and "
                         f"experiments/convergence_report.py before its other seeds")
    return chosen[key]["chosen"]


def converged_runs(model: str, config: str, size: int, seed: int, chosen_file: str = CHOSEN,
                   overrides: dict | None = None) -> list:
    """One seed at the converged budget, with the 1x rung beside it (branched off when shorter)."""
    multiples = tuple(sorted({1, converged_multiple(model, size, chosen_file)}))
    return ladder_runs(model, config, size, seed, Ladder(LADDER.budget, multiples, LADDER.cooldown_fraction),
                       overrides)


@dataclasses.dataclass(frozen=True)
class Arm:
    """A budget-dependent arm: its sweep file and argument (its runs at the protocol's budget), the
    sizes its read-outs use, the run names that train as ladders (the model-size arm's default widths
    are the plain configs), and the plain families its read-outs pair with (its controls)."""
    file: str
    arg: str
    sizes: tuple
    ladders: tuple
    controls: tuple


ARMS = {"deit": Arm("swin_deit.py", "part=deit_aug", (55_000,), ("deitaug",), ("bit",)),
        "size": Arm("model_size.py", "part=small", (550, 55_000), ("vit_w32", "bit_w4"), ("vit", "bit")),
        "reg": Arm("regularisation.py", "part=converged", (550, 1_700, 5_500, 55_000), ("vit_lighter", "bit_lighter"),
                   ("vit", "bit"))}
ARM_LABELS = {"deitaug": "DeiT + augmentation", "vit_w32": "ViT width 32", "bit_w4": "BiT width 4",
              "vit_lighter": "ViT regularised (lighter)", "bit_lighter": "BiT regularised (lighter)"}


def arm_chosen_file(arm: str) -> str:
    return os.path.join(_HERE, "results", "convergence", "arms", arm, "convergence.json")


def arm_runs(arm: str, other_seeds: bool = False, controls: bool = True, sizes: tuple | None = None,
             seeds: tuple | None = None) -> list:
    """Seed 0's ladders of `arm` (or, with `other_seeds`, its other seeds at the chosen multiples), from
    the runs its own sweep file gives at the protocol's budget; with `controls`, each of those seeds'
    plain-arm runs its read-outs pair with, at the plain ladders' chosen multiples, so that every term
    of a seed trains on one host and code. `sizes`: only those of the arm's sizes (a part of it).
    `seeds` (with `other_seeds`): only these, which may lie past the protocol's (the arm's sweep file
    then gives them through its `large_seeds`, as seeds added where they decide a read-out)."""
    if arm not in ARMS:
        raise ValueError(f"arm={arm!r}; the arms are {', '.join(ARMS)}")
    spec = ARMS[arm]
    wanted = spec.sizes if sizes is None else sizes
    if not set(wanted) <= set(spec.sizes):
        raise ValueError(f"sizes={'+'.join(map(str, wanted))}: arm {arm!r} reads sizes "
                         f"{'+'.join(map(str, spec.sizes))}; name some of them")
    if seeds is not None and 0 in seeds:
        raise ValueError("seeds=0: seed 0's runs are the arm's ladders (part=arm); name its other seeds")
    arg = spec.arg if seeds is None else f"{spec.arg},large_seeds={max(seeds) + 1}"
    runs, seeds_at = [], {}
    for name, config, overrides in load_module(os.path.join(_HERE, spec.file)).get_runs(arg):
        model, size, seed = name.rsplit("_n", 1)[0], overrides["data.train_size"], overrides["seed"]
        if model not in spec.ladders or size not in wanted or (seed != 0) != other_seeds or \
                (seeds is not None and seed not in seeds):
            continue
        seeds_at.setdefault(size, set()).add(seed)
        if other_seeds:
            runs += converged_runs(model, config, size, seed, arm_chosen_file(arm), overrides)
        else:
            runs += ladder_runs(model, config, size, seed, overrides=overrides)
    if controls:
        runs += [run for size, seeds in seeds_at.items() for seed in sorted(seeds) for model in spec.controls
                 for run in converged_runs(model, MODELS[model], size, seed)]
    return runs


def capped(chosen_file: str) -> set:
    """{(ladder, size)} of the ladders a committed convergence.json marks capped (none if it is absent)."""
    if not os.path.exists(chosen_file):
        return set()
    with open(chosen_file) as f:
        return {(point["family"], point["size"]) for point in json.load(f).values() if point["capped"]}


def climb_runs(wanted: tuple | None = None) -> list:
    """Seed 0 of every ladder capped at its top rung (the plain arm's and each arm's committed
    convergence.json), as a CLIMB ladder (1x-8x, one trunk); `wanted`: only these ladders by name."""
    found = [(model, MODELS[model], size, None) for model, size in sorted(capped(CHOSEN)) if model in MODELS]
    for arm, spec in ARMS.items():
        tops = capped(arm_chosen_file(arm))
        for name, config, overrides in load_module(os.path.join(_HERE, spec.file)).get_runs(spec.arg):
            model, size = name.rsplit("_n", 1)[0], overrides["data.train_size"]
            if overrides["seed"] == 0 and (model, size) in tops:
                found.append((model, config, size, overrides))
    known = {model for model, *_ in found}
    if wanted is not None and not set(wanted) <= known:
        raise ValueError(f"ladders={'+'.join(wanted)}: the capped ladders are {', '.join(sorted(known)) or 'none'}")
    return [run for model, config, size, overrides in found if wanted is None or model in wanted
            for run in ladder_runs(model, config, size, 0, CLIMB, overrides)]


def _numbers(text: str, key: str, example: str) -> tuple | None:
    """`key`'s integers joined by '+' (sizes=550+1700), or None when not given."""
    if not text:
        return None
    try:
        return tuple(int(n) for n in text.split("+"))
    except ValueError:
        raise ValueError(f"{key}={text!r}: integers joined by '+', e.g. {key}={example}") from None


ARM_KEYS = ("arm", "controls", "sizes", "seeds")  # what part=arm and part=arm_seeds read beside `part`


def get_runs(arg=None):
    parts = {**{name: () for name in (*PARTS, *SEED_PARTS)}, "arm": ARM_KEYS, "arm_seeds": ARM_KEYS,
             "climb": ("ladders",)}
    settings = parse_part_arg(arg, parts, part="", arm="", controls=True, sizes="", seeds="", ladders="")
    part = settings.part
    if part == "climb":
        return climb_runs(tuple(settings.ladders.split("+")) if settings.ladders else None)
    if part in ("arm", "arm_seeds"):
        sizes, seeds = _numbers(settings.sizes, "sizes", "550+1700"), _numbers(settings.seeds, "seeds", "2")
        if seeds is not None and part != "arm_seeds":
            raise ValueError("seeds= chooses part=arm_seeds's seeds; part=arm trains seed 0's ladders")
        return arm_runs(settings.arm, other_seeds=part == "arm_seeds", controls=settings.controls,
                        sizes=sizes, seeds=seeds)
    if part in SEED_PARTS:
        return [run for sizes, seeds in SEED_PARTS[part] for size in sizes for seed in seeds
                for model, config in MODELS.items() for run in converged_runs(model, config, size, seed)]
    return [run for size in PARTS[part] for seed in SEEDS for model, config in MODELS.items()
            for run in ladder_runs(model, config, size, seed)]
