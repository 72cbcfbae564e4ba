"""Supervised classification: softmax cross-entropy against the labels, with label smoothing.

`config.objective = "supervised"` (the default): what every run trained before objectives were plug-ins.
"""
import dataclasses

from vitjax.objectives.base import Objective, StepInfo
from vitjax.objectives.losses import cross_entropy


@dataclasses.dataclass(frozen=True)
class Supervised(Objective):
    label_smoothing: float = 0.0

    @classmethod
    def from_config(cls, config, model, info, run_dir=None) -> "Supervised":
        if getattr(model, "distillation_token", False):
            raise ValueError("model.distillation_token=true needs objective='distillation' (its head learns from "
                             "a teacher); set --config.objective=distillation and --config.distillation.teacher, "
                             "or drop the distillation token")
        return cls(model, label_smoothing=config.label_smoothing)

    def loss(self, params, extra, batch, rng, info: StepInfo):
        logits = self.model.apply({"params": params}, batch["image"], train=True, rngs={"dropout": rng})
        return cross_entropy(logits, batch["labels"], self.label_smoothing), {}
