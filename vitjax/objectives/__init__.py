"""Objectives: what a train step optimises, as plug-ins the trainer picks by `config.objective`.

    objective = objectives.build(config, model, data_info)   # trainer.plan does this
    loss, metrics = objective.loss(params, extra, batch, rng, objectives.StepInfo(step))
    sums = objective.eval_sums(params, eval_batch, rng)   # evaluation: {metric: sum over real rows}
    objective.selection                                   # Selection('accuracy', higher_is_better=True)

The interface is vitjax/objectives/base.py's `Objective`; vitjax/train/step.py runs any of them through
one train step. Each objective's settings live in a config group of its own name (config.distillation),
or on the model where they are the model's (MAE's mask_ratio and norm_pix_loss).
Adding one: a module here with an Objective subclass and its `from_config(config, model, info)`, an
entry in OBJECTIVES, and its name in vitjax/train/validate.py's OBJECTIVES (checked before JAX starts).
"""
from vitjax.objectives.base import Objective, Selection, StepInfo
from vitjax.objectives.dino import DINO
from vitjax.objectives.distillation import Distillation
from vitjax.objectives.losses import cross_entropy, kl_divergence
from vitjax.objectives.mae import MAE
from vitjax.objectives.supervised import Supervised

OBJECTIVES = {"supervised": Supervised, "distillation": Distillation, "mae": MAE, "dino": DINO}

__all__ = ["DINO", "OBJECTIVES", "Distillation", "MAE", "Objective", "Selection", "StepInfo", "Supervised",
           "build", "cross_entropy", "kl_divergence"]


def build(config, model, info) -> Objective:
    """The objective `config.objective` names, for `model` trained on data described by `info`
    (data.DataInfo); raises ValueError naming the fix for an unknown name or unusable settings."""
    name = config.get("objective", "supervised")
    if name not in OBJECTIVES:
        raise ValueError(f"objective={name!r}: choose one of {sorted(OBJECTIVES)}")
    return OBJECTIVES[name].from_config(config, model, info)
