r"""The regularisation arm at laptop scale: AugReg-style augmentation and regularisation for both
families (Steiner et al. 2021), chosen on the validation split, then the data-scaling curve again.

    vitjax sweep experiments/regularisation.py:part=tune --workdir runs/regularisation_tune
    vitjax sweep experiments/regularisation.py:part=extend --workdir runs/regularisation_extend
    vitjax sweep experiments/regularisation.py:part=lower --workdir runs/regularisation_lower
    vitjax sweep experiments/regularisation.py --workdir runs/regularisation
    vitjax plot runs/regularisation --out experiments/results/regularisation

Part `tune` (6 runs, seed 0, 5.5k images): three strengths per family; the one with the best
validation accuracy (never test) is written into CHOSEN below and committed with the tuning table.
Part `extend` (4 runs, seed 0, 5.5k images): `tune` picked the weakest strength, an edge of its grid, for
both families, so the grid goes one step past it, `lighter` (each of light's settings halved), beside a
re-run of `light` on the same host and code; the higher validation accuracy picks (experiments/README.md,
"The regularisation grid, extended past its edge", registered before its runs).
Part `lower` (4 runs, seed 0, 5.5k images): `extend` picked `lighter`, its edge again; the strength axis
ends at none (the plain configs), which trains beside a re-run of `lighter` on one host and code, so
that the pick is bracketed or moves to none (experiments/README.md, "The regularisation strength's
lower end").
Part `curve` (default): the chosen strength at every size of the plain arm with its paired seeds, for
read-outs R1-R3 in experiments/README.md (the plain arm, experiments/data_scaling.py, is the control).
Part `converged`: the same runs at the extension's pick (EXTENDED_CHOSEN), which the arm's ladders
(experiments/convergence.py:part=arm,arm=reg; R1c-R3c) re-time; R1-R3 stay decided on CHOSEN.

Strengths (the same for both families except dropout and stochastic depth, which only the ViT has):
2-pixel random crops without flips (Fashion-MNIST's shoes all face one way), label smoothing 0.1,
then mixup and weight decay growing. Weight decay here is decoupled and multiplied by the learning
rate (AdamW's form): 0.1 at lr 2e-3 shrinks kernels by 2e-4 per step, against 2e-7 for the configs'
1e-4.

Measured (2026-12-01/02, 2 CPU cores, partly under load; the results README): part tune 65 minutes and
part curve 199 minutes summed over their runs (augmentation is computed on the host), so run the curve
in two `--only` halves to fit the 2-hour sitting.
"""
import os

from vitjax.config import load_module, parse_part_arg

_protocol = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "protocol.py"))

BUDGET = _protocol.BUDGET.describe()
TITLE = "Regularisation arm: crops, mixup, label smoothing, weight decay (+ dropout, stochastic depth for the ViT)"
FEWSHOT = None
MODELS = {"vit": "configs/fashion_mnist/vit.py", "bit": "configs/fashion_mnist/bit.py"}
TUNE_SIZE = 5_500

_SHARED = {"data.pp_train": "random_crop(28, pad=2)|value_range(-1, 1)", "label_smoothing": 0.1}
STRENGTHS = {
    "lighter": {"data.pp_train": "random_crop(28, pad=1)|value_range(-1, 1)", "label_smoothing": 0.05,
                "data.mixup_alpha": 0.0, "weight_decay": 0.015},
    "light": {**_SHARED, "data.mixup_alpha": 0.0, "weight_decay": 0.03},
    "medium": {**_SHARED, "data.mixup_alpha": 0.2, "weight_decay": 0.1},
    "heavy": {**_SHARED, "data.mixup_alpha": 0.5, "weight_decay": 0.3},
    "none": {},  # the plain arm's configs as they stand: the strength axis's own lower end
}
VIT_ONLY = {"lighter": {"model.dropout_rate": 0.0, "model.droppath_rate": 0.025},
            "light": {"model.dropout_rate": 0.0, "model.droppath_rate": 0.05},
            "medium": {"model.dropout_rate": 0.1, "model.droppath_rate": 0.1},
            "heavy": {"model.dropout_rate": 0.1, "model.droppath_rate": 0.2}, "none": {}}
TUNED = ("light", "medium", "heavy")  # part tune's grid
EXTENDED = ("light", "lighter")  # part extend: the pick at the grid's edge, re-run, and one step past it
LOWER = ("lighter", "none")  # part lower: the extension's pick, on the edge again, beside no regularisation
CHOSEN = {"vit": "light", "bit": "light"}  # part tune, best validation accuracy: experiments/results/regularisation_tune
# part extend, best validation accuracy (experiments/results/regularisation_extend): both on the edge again.
EXTENDED_CHOSEN = {"vit": "lighter", "bit": "lighter"}


def regularisation(family: str, strength: str) -> dict:
    return {**STRENGTHS[strength], **(VIT_ONLY[strength] if family == "vit" else {})}


def _at_tune_size(strengths) -> list:
    return [(f"{family}_{strength}_n{TUNE_SIZE}_s0", config,
             {**_protocol.overrides(TUNE_SIZE, 0), **regularisation(family, strength)})
            for strength in strengths for family, config in MODELS.items()]


def _curve(chosen: dict, large_seeds: int = _protocol.LARGE_SEEDS) -> list:
    return [(f"{family}_{chosen[family]}_n{size}_s{seed}", config,
             {**_protocol.overrides(size, seed), **regularisation(family, chosen[family])})
            for size in _protocol.SIZES for seed in _protocol.seeds(size, large_seeds=large_seeds)
            for family, config in MODELS.items()]


def get_runs(arg=None):
    """`:part=...`; the curves take `large_seeds=N` (N seeds above 5.5k instead of the protocol's 2), for
    seeds added where they decide a read-out (convergence.py:part=arm_seeds,arm=reg,seeds=...)."""
    parts = {"tune": (), "extend": (), "lower": (), "curve": ("large_seeds",), "converged": ("large_seeds",)}
    settings = parse_part_arg(arg, parts, part="curve", large_seeds=_protocol.LARGE_SEEDS)
    runs = {"tune": lambda: _at_tune_size(TUNED), "extend": lambda: _at_tune_size(EXTENDED),
            "lower": lambda: _at_tune_size(LOWER), "curve": lambda: _curve(CHOSEN, settings.large_seeds),
            "converged": lambda: _curve(EXTENDED_CHOSEN, settings.large_seeds)}
    return runs[settings.part]()
