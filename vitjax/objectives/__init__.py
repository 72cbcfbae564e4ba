"""Objectives: what a train step optimises, as plug-ins the trainer picks by `config.objective`.

    objective = objectives.build(config, model, data_info, run_dir)   # trainer.plan does this
    loss, metrics = objective.loss(params, extra, batch, rng, StepInfo(step))
    sums = objective.eval_sums(params, eval_batch, rng)   # evaluation: {metric: sum over real rows}
    objective.selection                                   # Selection('accuracy', higher_is_better=True)

The interface is vitjax/objectives/base.py's `Objective`; vitjax/train/step.py runs any of them through
one train step. Each objective's settings live in a config group of its own name (config.distillation),
or on the model where they are the model's (MAE's mask_ratio and norm_pix_loss).

OBJECTIVES is the one registry: each objective's module, class and the model family it alone trains.
It imports nothing, so `vitjax train` checks a config's objective against it before JAX starts
(vitjax/train/checks.py), and an objective's module loads only when a run names it.
Adding one: a module here with an Objective subclass and its `from_config(config, model, info, run_dir)`,
and an entry in OBJECTIVES.
"""
import dataclasses
import importlib


@dataclasses.dataclass(frozen=True)
class Registered:
    module: str  # vitjax/objectives/<module>.py
    name: str  # its Objective subclass
    # The one model family the objective trains, which no other objective can train; None: any classifier.
    model: str | None = None
    config: str = ""  # a config file training that family ('': configs/fashion_mnist/<model>.py), for errors
    encoder_for_vit: bool = True  # whether its runs give a ViT classifier an encoder (init_from), for errors


OBJECTIVES = {
    "supervised": Registered("supervised", "Supervised"),
    "distillation": Registered("distillation", "Distillation"),
    # Its loss is its reconstruction, which only the MAE model makes; the MAE model has no class head.
    "mae": Registered("mae", "MAE", model="mae"),
    # Its loss compares the projection head's outputs, which only the DINO model has.
    "dino": Registered("dino", "DINO", model="dino"),
    # Its loss is the masks' and the IoU head's, answers to prompts that only SAM takes.
    "sam": Registered("sam", "PromptableSegmentation", model="sam", config="configs/sam/tiny.py",
                      encoder_for_vit=False),
    # Its loss compares image and text embeddings, which only a dual encoder makes.
    "contrastive": Registered("contrastive_objective", "Contrastive", model="dual_encoder"),
}


def objective_class(name: str) -> type:
    """The Objective subclass registered as `name` (its module is imported now)."""
    registered = OBJECTIVES[name]
    return getattr(importlib.import_module(f"vitjax.objectives.{registered.module}"), registered.name)


def build(config, model, info, run_dir: str | None = None):
    """The objective `config.objective` names, for `model` trained on data described by `info`
    (data.DataInfo) in the run directory `run_dir` (None: no run yet, e.g. a dry plan); raises
    ValueError naming the fix for an unknown name or unusable settings."""
    name = config.get("objective", "supervised")
    if name not in OBJECTIVES:
        raise ValueError(f"objective={name!r}: choose one of {sorted(OBJECTIVES)}")
    return objective_class(name).from_config(config, model, info, run_dir)
