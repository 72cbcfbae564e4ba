r"""Per-family optimiser tuning on the validation split (issue: both families ran the ViT pilots' Adam
2e-3, wd 1e-4; the BiT's config copied it).

    vitjax sweep experiments/tuning.py:part=small --workdir runs/tuning   # 550 and 5.5k images, 24 runs
    vitjax sweep experiments/tuning.py:part=extend,from=runs/tuning --workdir runs/tuning  # past picked edges
    vitjax sweep experiments/tuning.py:part=large --workdir runs/tuning   # 55k: the pick and its neighbours
    vitjax sweep experiments/tuning.py:part=between --workdir runs/tuning # 1.7k: the 550 and 5.5k picks
    vitjax sweep experiments/tuning.py:part=bracket --workdir runs/tuning_bracket  # a step past the edges left
    python experiments/readouts.py --tuning runs/tuning                     # each family's pick per size
    vitjax sweep experiments/tuning.py:part=primed,seed=0 --workdir runs/primed  # C1'-C4', one seed a part
    python experiments/readouts.py --primed runs/primed --chosen experiments/results/convergence/convergence.json
    vitjax sweep experiments/tuning.py:part=ladders,model=vit --workdir runs/tuned_ladders  # the 55k picks' own
    vitjax sweep experiments/tuning.py:part=ladders,model=bit --workdir runs/tuned_ladders  # ladders, seed 0
    vitjax sweep experiments/tuning.py:part=ladder_seeds,seed=1 --workdir runs/tuned_ladders  # at their choice
    python experiments/readouts.py --tuned_ladders runs/tuned_ladders   # C2t, C4t

The grid, registered in experiments/README.md before any of its runs: learning rate 1e-3, 2e-3, 4e-3
x decoupled weight decay 1e-4 (the configs' own, next to none: the update subtracts lr x wd x w)
and 0.05 (AdamW's usual strength), each family at 550 and 5.5k images, seed 0, the plain arm's
protocol on the ladder's schedule (warmup-stable-decay) at the 1x budget, 1,200 steps. The pick is the
highest best-validation accuracy; a pick on the grid's edge extends the grid one step past it (8e-3 or
5e-4; wd 0.3) before it counts: `part=extend` reads the picks of the sweep directory `from` and trains,
for each pick on an edge, the grid's next point past that edge at the pick's other setting (nothing
past the lowest decay, 1e-4, which the registration does not extend). At 55k (`part=large`) the rate
picked at 5.5k and its two grid neighbours train at the size's converged budget, seed 0. Test accuracy is never read.
`part=bracket` (registered after the picks were known, to answer "every pick on an edge"): each pick of
the committed grids still on an edge re-runs beside the next step past that edge (RATE_STEPS,
DECAY_STEPS), the pair on one host and code; 12 runs, ~1 h.

C1'-C4' re-run the converged arm's read-outs on the tuned optimisers (registered in experiments/README.md,
"The tuned re-runs"): at 1.7k, which the grid skipped, `part=between` trains both neighbouring sizes'
picks (seed 0, 1x) and validation chooses; `part=primed,seed=S` then trains seed S of each family at
550, 1.7k, 5.5k and 55k with that size's pick, at the multiples the plain optimiser's ladders chose
(convergence.json), the 1x rung beside (C4's). The picks come from the committed tables (`PICKS_FROM`),
or from `from=DIR+DIR...`.

Those multiples are the plain optimiser's; the tuned ViT's 2x rung at 55k still gained 0.6-1.4 validation
points over its 1x in every seed. `part=ladders,model=M` (registered in experiments/README.md, "The tuned
optimisers' own ladders at 55k") trains seed 0 of family M at its 55k pick as a ladder of its own
(TUNED_LADDERS: the ViT 1x-8x, the BiT 1x-4x, each one trunk with the shorter rungs branched off it);
`part=ladder_seeds,seed=S` trains seed S of both families at the multiples those ladders chose
(LADDER_CHOSEN, committed by experiments/convergence_report.py), the 1x rung beside.

Expected: ~80 min for part=small on 2 idle cores of this project's hosts (12 ViT runs ~2.5 min, 12 BiT
~4 min, each 1,200 steps with validation every 100); part=primed ~65 min a seed (its 55k ViT trunk ~15 min);
part=ladders ~75 min for the ViT (an 8x trunk of 27,504 steps at the primed runs' 7.8 steps/s, and three
cooldowns), ~60 min for the BiT (a 4x trunk of 13,752 steps at 4.6 steps/s, and two).
"""
import os

from vitjax.config import load_module, parse_part_arg
from vitjax.sweep import table

_here = os.path.dirname(os.path.abspath(__file__))
_protocol = load_module(os.path.join(_here, "protocol.py"))
_ladder = load_module(os.path.join(_here, "convergence.py"))

RATES = (1e-3, 2e-3, 4e-3)
WEIGHT_DECAYS = (1e-4, 0.05)
SMALL_SIZES = (550, 5_500)
# The registered step past each edge a pick may sit on (readouts.tuning names the edges).
EXTENSIONS = {"lowest lr": ("lr", 5e-4), "highest lr": ("lr", 8e-3), "highest wd": ("weight_decay", 0.3)}
# part=bracket: a further step past each edge the picks still sit on (experiments/README.md, "The tuning's
# edges, bracketed"); the lowest decay is never extended, and at 55k only the rate was tuned.
RATE_STEPS = (5e-4, 1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2)
DECAY_STEPS = (1e-4, 0.05, 0.3, 1.0)
BETWEEN = {1_700: (550, 5_500)}  # a size the grid skipped: its neighbours' picks compete there
LARGE_SIZE, LARGE_RATES = 55_000, 3  # part=large: the 5.5k pick's rate and its two neighbours
PRIMED_SIZES = (550, 1_700, 5_500, 55_000)
# The committed tables of every tuning part (experiments/README.md, Part 1c), where part=primed reads its picks.
PICKS_FROM = tuple(os.path.join(_here, "results", "tuning", part) for part in ("", "large", "between"))
# part=ladders: each family's 55k pick as its own ladder; part=ladder_seeds reads what they chose.
TUNED_LADDERS = {"vit": _ladder.CLIMB, "bit": _ladder.LADDER}
LADDER_CHOSEN = os.path.join(_here, "results", "tuning", "ladders", "convergence.json")
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


def _past(steps: tuple, value: float, direction: int) -> float:
    index = steps.index(value) + direction
    if not 0 <= index < len(steps):
        raise ValueError(f"no registered step past {value:g} (steps: {', '.join(f'{v:g}' for v in steps)})")
    return steps[index]


def bracket_runs(directories) -> list:
    """For each family and size whose pick (over `directories`' runs) sits on an edge the grid may pass,
    the pick again, beside one run per such edge at the next of RATE_STEPS / DECAY_STEPS past it, at the
    pick's multiple of the budget, so that each pair shares host and code. Sizes of BETWEEN (two
    candidates, no grid) have no edges."""
    rows = [row for d in directories if os.path.isdir(d) for row in table.read(d)]
    multiple = {(r["family"], r["train_size"]): round(r["steps"] / _protocol.BUDGET.steps(r["train_size"]))
                for r in rows if r.get("status") == "finished"}
    past = {"lowest lr": ("lr", RATE_STEPS, -1), "highest lr": ("lr", RATE_STEPS, 1),
            "highest wd": ("weight_decay", DECAY_STEPS, 1)}
    runs = []
    for key, point in picks(directories).items():
        model, size = key.rsplit("_n", 1)
        size = int(size)
        edges = [edge for edge in point["edges"] if edge in past and size not in BETWEEN
                 and not (size == LARGE_SIZE and past[edge][0] == "weight_decay")]
        if not edges:
            continue
        pick, times = point["pick"], multiple[model, size]
        runs.append(_run(model, size, pick["lr"], pick["weight_decay"], times))
        for edge in edges:
            axis, steps, direction = past[edge]
            setting = {**pick, axis: _past(steps, pick[axis], direction)}
            runs.append(_run(model, size, setting["lr"], setting["weight_decay"], times))
    return runs


def picks(directories) -> dict:
    """readouts.tuning's picks over the finished runs of every directory that exists."""
    readouts = load_module(os.path.join(_here, "readouts.py"))  # only here: it imports scipy
    return readouts.tuning([row for d in directories if os.path.isdir(d) for row in table.read(d)])


def _pick(found: dict, model: str, size: int) -> dict:
    if f"{model}_n{size}" not in found:
        part = "part=between" if size in BETWEEN else "part=small" if size in SMALL_SIZES else "part=large"
        raise ValueError(f"no tuning pick for {model} at {size} images: run experiments/tuning.py:{part} and "
                         f"commit its tables (or name its sweep directory with from=DIR)")
    point = found[f"{model}_n{size}"]
    if size == LARGE_SIZE and len(point["grid"]) < LARGE_RATES:  # a part cut short picks among too few
        raise ValueError(f"the tuning at {size} images holds {len(point['grid'])} of {model}'s {LARGE_RATES} rates: "
                         f"train the rest of experiments/tuning.py:part=large and commit its tables")
    return point["pick"]


def between_runs(found: dict) -> list:
    """At each size the grid skipped, both neighbouring sizes' picks for each family (one run if equal)."""
    runs = []
    for size, neighbours in BETWEEN.items():
        for model in _ladder.MODELS:
            settings = {(p["lr"], p["weight_decay"]) for p in (_pick(found, model, n) for n in neighbours)}
            runs += [_run(model, size, lr, wd) for lr, wd in sorted(settings)]
    return runs


def primed_runs(found: dict, seed: int, chosen_file: str = _ladder.CHOSEN) -> list:
    """Seed `seed` of C1'-C4': each family and size at its pick, at the converged multiple the plain
    optimiser's ladders chose (`chosen_file`)."""
    runs = []
    for size in PRIMED_SIZES:
        for model, config in _ladder.MODELS.items():
            runs += _ladder.converged_runs(model, config, size, seed, chosen_file, _tuned(found, size, seed, model))
    return runs


def _tuned(found: dict, size: int, seed: int, model: str) -> dict:
    pick = _pick(found, model, size)
    return {**_protocol.overrides(size, seed), "lr": pick["lr"], "weight_decay": pick["weight_decay"]}


def tuned_ladder_runs(found: dict, model: str) -> list:
    """Seed 0 of `model` at its 55k pick, as TUNED_LADDERS's ladder (trunk first)."""
    if model not in TUNED_LADDERS:
        raise ValueError(f"model={model!r}; the tuned ladders are {', '.join(TUNED_LADDERS)}")
    return _ladder.ladder_runs(model, _ladder.MODELS[model], LARGE_SIZE, 0, TUNED_LADDERS[model],
                               _tuned(found, LARGE_SIZE, 0, model))


def tuned_seed_runs(found: dict, seed: int, chosen_file: str = LADDER_CHOSEN) -> list:
    """Seed `seed` of both families at their 55k picks and the multiples their tuned ladders chose."""
    if seed == 0:
        raise ValueError("seed=0: seed 0's runs are part=ladders's; name another seed")
    if not os.path.exists(chosen_file):
        raise ValueError(f"{chosen_file} is missing: run part=ladders for both families and "
                         f"experiments/convergence_report.py on its sweep before other seeds")
    return [run for model, config in _ladder.MODELS.items()
            for run in _ladder.converged_runs(model, config, LARGE_SIZE, seed, chosen_file,
                                              _tuned(found, LARGE_SIZE, seed, model))]


# part=large's picks: the 5.5k rate and decay of each family and its 55k converged multiple, as
# experiments/README.md records them once known.
_LARGE_KEYS = tuple(key for model in _ladder.MODELS for key in (f"{model}_lr", f"wd_{model}", f"multiple_{model}"))
PART_KEYS = {"small": (), "extend": ("from",), "between": ("from",), "primed": ("from", "seed"), "large": _LARGE_KEYS,
             "bracket": ("from",), "ladders": ("from", "model"), "ladder_seeds": ("from", "seed")}
REQUIRED = {"extend": ("from",), "large": _LARGE_KEYS, "ladders": ("model",)}
_DEFAULTS = {"seed": 0, "from": None, "model": None, **dict.fromkeys(_LARGE_KEYS)}


def _settings(arg: str | None):
    """`:arg` read and checked against its part's keys: none it does not read, none it needs missing."""
    settings = parse_part_arg(arg, PART_KEYS, part="", **_DEFAULTS)
    missing = [key for key in REQUIRED.get(settings.part, ()) if settings[key] is None]
    if missing:
        raise ValueError(f"part={settings.part} needs {', '.join(f'{key}=...' for key in missing)}")
    for key in _LARGE_KEYS if settings.part == "large" else ():
        whole = key.startswith("multiple_")
        if isinstance(settings[key], bool) or not isinstance(settings[key], int if whole else (int, float)):
            raise ValueError(f"{key}={settings[key]!r}: expected {'an int' if whole else 'a number'}")
    return settings


def get_runs(arg=None):
    settings = _settings(arg)
    part, source = settings.part, settings["from"]
    if part == "small":
        return [_run(model, size, lr, wd) for size in SMALL_SIZES for model in _ladder.MODELS
                for lr in RATES for wd in WEIGHT_DECAYS]
    if part == "extend":
        return extension_runs(picks([str(source)]))
    if part == "bracket":
        return bracket_runs(str(source).split("+") if source is not None else PICKS_FROM[:2])
    if part in ("between", "primed", "ladders", "ladder_seeds"):
        found = picks(str(source).split("+") if source is not None else PICKS_FROM)
        if part == "ladders":
            return tuned_ladder_runs(found, str(settings.model))
        if part == "ladder_seeds":
            return tuned_seed_runs(found, settings.seed)
        return between_runs(found) if part == "between" else primed_runs(found, settings.seed)
    runs = []
    for model in _ladder.MODELS:
        lr = float(settings[f"{model}_lr"])
        neighbours = sorted({lr / 2, lr, lr * 2})
        runs += [_run(model, LARGE_SIZE, rate, float(settings[f"wd_{model}"]), settings[f"multiple_{model}"])
                 for rate in neighbours]
    return runs
