"""DeiT distillation (Touvron et al. 2021): a student with a distillation token learns from a frozen teacher.

`config.objective = "distillation"`; the student needs `model.distillation_token=true`, which gives it two
heads. The CLS head learns the labels; the distillation head learns the teacher's predictions on the
same (augmented) images, which the teacher sees inside the train step:

    loss = (1 - alpha) * CE(cls logits, labels) + alpha * D
    hard (DeiT's default, alpha = 0.5):  D = CE(distillation logits, argmax of the teacher's logits)
    soft:  D = T^2 * KL(softmax(teacher / T) || softmax(distillation logits / T)), averaged over the batch

Label smoothing (config.label_smoothing) applies to the labels' term only. (The DeiT code's soft loss
divides its KL by batch x classes rather than by the batch; this follows the paper's formula.)
Evaluation scores the mean of the two heads' logits, which the model returns at inference.

The teacher's parameters are this objective's extra state: no gradient reaches them (they are not
differentiated, and stop_gradient says so), the optimiser never holds them, and they are saved in
every checkpoint, so a resumed run goes on with the very teacher it started with even if the teacher's
run has trained further since. They are read from `distillation.teacher` (a vitjax run directory or an
official .npz, vitjax/objectives/teacher.py) once, when the run starts; the teacher's model is recorded
beside the run (teacher.json), so the run resumes and evaluates after the teacher's files moved.
"""
import dataclasses

import jax
import jax.numpy as jnp

from vitjax.objectives import teacher as teacher_lib
from vitjax.objectives.base import Objective, StepInfo
from vitjax.objectives.losses import cross_entropy, kl_divergence

KINDS = ("hard", "soft")


@dataclasses.dataclass(frozen=True)
class Distillation(Objective):
    teacher: teacher_lib.Teacher = None
    kind: str = "hard"
    temperature: float = 1.0
    alpha: float = 0.5
    label_smoothing: float = 0.0

    @classmethod
    def from_config(cls, config, model, info, run_dir=None) -> "Distillation":
        """From config.distillation; raises ValueError naming the fix before anything is compiled."""
        settings = config.distillation
        if not getattr(model, "distillation_token", False):
            raise ValueError("objective='distillation' trains a distillation head: the student needs "
                             "--config.model.distillation_token=true (a ViT with token pooling)")
        if settings.type not in KINDS:
            raise ValueError(f"distillation.type={settings.type!r}: choose 'hard' or 'soft'")
        if not settings.temperature > 0:
            raise ValueError(f"distillation.temperature={settings.temperature!r}: use a temperature > 0, e.g. 3.0")
        if not 0 <= settings.alpha <= 1:
            raise ValueError(f"distillation.alpha={settings.alpha!r}: use a weight in [0, 1] (0.5: DeiT's)")
        teacher = teacher_lib.resolve(settings, num_classes=info.num_classes, image_shape=info.image_shape,
                                      dtype=config.dtype, run_dir=run_dir)
        return cls(model, teacher=teacher, kind=settings.type, temperature=float(settings.temperature),
                   alpha=float(settings.alpha), label_smoothing=config.label_smoothing)

    def init_extra(self, params, key):
        # Zeros of the teacher's shapes: the values come from loaded_extra (XLA drops the unused init).
        return {"teacher": jax.tree.map(jnp.zeros_like, self.teacher.abstract_params(key))}

    def loaded_extra(self):
        return {"teacher": self.teacher.load_params()}

    def records(self) -> dict:
        return {teacher_lib.RECORD: self.teacher.record}

    def loss(self, params, extra, batch, rng, info: StepInfo):
        images = batch["image"]
        logits, logits_dist = self.model.apply({"params": params}, images, train=True, rngs={"dropout": rng})
        teacher_logits = self.teacher.logits(extra["teacher"], images)
        labels_loss = cross_entropy(logits, batch["labels"], self.label_smoothing)
        distill_loss = self.distillation_term(logits_dist, teacher_logits)
        loss = (1.0 - self.alpha) * labels_loss + self.alpha * distill_loss
        teacher_agrees = jnp.argmax(logits_dist, -1) == jnp.argmax(teacher_logits, -1)
        return loss, {"loss_labels": labels_loss, "loss_distillation": distill_loss,
                      "agreement_with_teacher": jnp.mean(teacher_agrees.astype(jnp.float32))}

    def distillation_term(self, logits_dist, teacher_logits):
        """D of the module docstring: the distillation head against the teacher."""
        if self.kind == "hard":
            hard = jax.nn.one_hot(jnp.argmax(teacher_logits, -1), teacher_logits.shape[-1])
            return cross_entropy(logits_dist, hard)
        return self.temperature ** 2 * kl_divergence(teacher_logits, logits_dist, self.temperature)
