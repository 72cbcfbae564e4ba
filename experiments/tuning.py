r"""Per-family optimiser tuning on the validation split (issue: both families ran the ViT pilots' Adam
2e-3, wd 1e-4; the BiT's config copied it).

    vitjax sweep experiments/tuning.py:part=small --workdir runs/tuning   # 550 and 5.5k images, 24 runs
    vitjax sweep experiments/tuning.py:part=extend,from=runs/tuning --workdir runs/tuning  # past picked edges
    vitjax sweep experiments/tuning.py:part=large --workdir runs/tuning   # 55k: the pick and its neighbours
    python experiments/readouts.py --tuning runs/tuning                     # each family's pick per size

The grid, registered in experiments/README.md before any of its runs: learning rate 1e-3, 2e-3, 4e-3
x decoupled weight decay 1e-4 (the configs' own, next to none: the update subtracts lr x wd x w)
and 0.05 (AdamW's usual strength), each family at 550 and 5.5k images, seed 0, the plain arm's
protocol on the ladder's schedule (warmup-stable-decay) at the 1x budget, 1,200 steps. The pick is the
highest best-validation accuracy; a pick on the grid's edge extends the grid one step past it (8e-3 or
5e-4; wd 0.3) before it counts: `part=extend` reads the picks of the sweep directory `from` and trains,
for each pick on an edge, the grid's next point past that edge at the pick's other setting (nothing
past the lowest decay, 1e-4, which the registration does not extend). At 55k (`part=large`) the rate
picked at 5.5k and its two grid neighbours train at the size's converged budget, seed 0. Test accuracy is never read.

Expected: ~80 min for part=small on 2 idle cores of this project's hosts (12 ViT runs ~2.5 min, 12 BiT
~4 min, each 1,200 steps with validation every 100).
"""
import os

from vitjax.config import load_module
from vitjax.sweep import table

_here = os.path.dirname(os.path.abspath(__file__))
_protocol = load_module(os.path.join(_here, "protocol.py"))
_ladder = load_module(os.path.join(_here, "convergence.py"))

RATES = (1e-3, 2e-3, 4e-3)
WEIGHT_DECAYS = (1e-4, 0.05)
SMALL_SIZES = (550, 5_500)
# The registered step past each edge a pick may sit on (readouts.tuning names the edges).
EXTENSIONS = {"lowest lr": ("lr", 5e-4), "highest lr": ("lr", 8e-3), "highest wd": ("weight_decay", 0.3)}
BUDGET = f"1x budget ({_protocol.BUDGET.describe()}), warmup-stable-decay, seed 0"
TITLE = "Per-family tuning on validation: learning rate x weight decay"
FEWSHOT = None


def tuning_name(model: str, size: int, lr: float, wd: float) -> str:
    return f"{model}_n{size}_lr{lr:g}_wd{wd:g}"


def _run(model: str, size: int, lr: float, wd: float, multiple: int = 1):
    overrides = {**_protocol.overrides(size, 0), "schedule": "wsd",
                 "cooldown_fraction": _ladder.LADDER.cooldown_fraction,
                 "total_steps": multiple * _protocol.BUDGET.steps(size), "lr": lr, "weight_decay": wd}
    return tuning_name(model, size, lr, wd), _ladder.MODELS[model], overrides


def extension_runs(picks: dict) -> list:
    """The runs one step past the grid edges each pick of `picks` (readouts.tuning's) sits on."""
    runs = []
    for key, point in picks.items():
        model, size = key.rsplit("_n", 1)
        for edge in point["edges"]:
            if edge in EXTENSIONS:
                axis, value = EXTENSIONS[edge]
                setting = {**point["pick"], axis: value}
                runs.append(_run(model, int(size), setting["lr"], setting["weight_decay"]))
    return runs


def get_runs(arg=None):
    settings = dict(item.split("=", 1) for item in arg.split(",")) if arg else {}
    part = settings.get("part")
    if part == "small":
        return [_run(model, size, lr, wd) for size in SMALL_SIZES for model in _ladder.MODELS
                for lr in RATES for wd in WEIGHT_DECAYS]
    if part == "extend":
        readouts = load_module(os.path.join(_here, "readouts.py"))  # only here: it imports scipy
        return extension_runs(readouts.tuning(table.read(settings["from"])))
    if part == "large":
        # :part=large,vit_lr=...,bit_lr=...,wd_vit=...,wd_bit=...,multiple_vit=...,multiple_bit=...: the picks
        # at 5.5k and the 55k converged multiples, as experiments/README.md records them once known.
        runs = []
        for model in _ladder.MODELS:
            lr = float(settings[f"{model}_lr"])
            neighbours = sorted({lr / 2, lr, lr * 2})
            runs += [_run(model, 55_000, rate, float(settings[f"wd_{model}"]), int(settings[f"multiple_{model}"]))
                     for rate in neighbours]
        return runs
    raise ValueError("choose experiments/tuning.py:part=small, :part=extend,from=DIR, or :part=large with the "
                     "picks (vit_lr=..,bit_lr=..,wd_vit=..,wd_bit=..,multiple_vit=..,multiple_bit=..)")
