"""DINO (Caron et al. 2021, "Emerging Properties in Self-Supervised Vision Transformers"): self-distillation
with no labels. `config.objective = "dino"`, `config.model_name = "dino"`, settings in `config.dino`:

    vitjax train --config configs/fashion_mnist/dino.py --workdir runs/fashion_mnist_dino

Each step cuts every image into 2 global and `local_crops` local views (vitjax/objectives/multicrop.py,
on the device, from the step's key; with `dino.photometric` the official brightness/contrast jitter and
solarisation, vitjax/objectives/photometric.py). The student (the trained parameters: ViT backbone + DINO head,
vitjax/models/dino.py) sees every view; the teacher sees the global ones. The loss
(vitjax/objectives/dino_formulas.py) is the mean over (teacher global view, other student view) pairs
of the cross-entropy between the teacher's centred, sharpened softmax and the student's softmax at 0.1.

The extra state (`TrainState.extra`) is {'teacher': parameters of the student's tree, 'centre': [1, K]}.
The teacher starts as the student and after each applied update becomes the EMA of the student, its
momentum on a cosine from `dino.teacher_momentum` (0.996) to 1 over the run; it takes no gradient
(the loss is differentiated with respect to the student only, and its outputs pass stop_gradient) and
the optimiser never holds it. The centre is the EMA (momentum 0.9) of the mean teacher output, moved by
this step's teacher outputs (handed to `update_extra` under EXTRA_INPUTS). The schedules are functions
of the step and the run's length, and the teacher and centre are checkpointed with the train state:
a resumed run repeats an uninterrupted one bit for bit.

Schedules and options as the official code (main_dino.py): the teacher temperature warms up linearly
per epoch from `warmup_teacher_temp` to `teacher_temp` over `warmup_teacher_temp_epochs`; the
prototypes (the head's last layer) take no gradient during the first `freeze_last_layer_epochs`
(the official code drops their gradient; here decoupled weight decay, which only shrinks their norm,
still applies, and with the norm fixed to 1 the scores do not change). The official weight-decay
schedule (0.04 to 0.4: `weight_decay_schedule='cosine'`) and lr scaling are the optimiser's config, not
the objective's.

Logged every log step besides the loss: teacher_entropy, teacher_kl_to_centre, teacher_student_kl,
embedding_std (the collapse monitors, `dino_formulas.collapse_monitors`), teacher_temperature and
teacher_momentum. Every evaluation reads the teacher (`evaluated`), as the official evaluation
scripts do (their --checkpoint_key defaults to 'teacher'; the paper finds the teacher the better network
throughout training): the trainer's label-free view metrics (eval_sums), the best-validation checkpoint,
and through the checkpoint's meta the frozen-feature k-NN (vitjax/evaluate/knn.py, `vitjax eval --knn`),
the few-shot probe on the backbone's CLS embedding, `vitjax analyze` and init_from.
"""
import dataclasses

import jax
import jax.numpy as jnp

from vitjax import durations
from vitjax.objectives import dino_config, dino_formulas as formulas, multicrop
from vitjax.objectives.base import EXTRA_INPUTS, Objective, Selection, StepInfo


@dataclasses.dataclass(frozen=True)
class DINO(Objective):
    # Label-free, so collapse-blind (eval_sums); runs without a validation split evaluate the last step.
    selection = Selection("view_agreement", higher_is_better=True)
    evaluated = "extra/teacher"
    crops: multicrop.Crops = None
    image_shape: tuple = ()  # the data's (H, W, C): the patch grid the position table is stored for
    total_steps: int = 1
    steps_per_epoch: int = 1
    student_temp: float = 0.1
    teacher_temp: float = 0.04
    warmup_teacher_temp: float = 0.04
    warmup_teacher_temp_epochs: int = 0
    teacher_momentum: float = 0.996
    centre_momentum: float = 0.9
    freeze_last_layer_steps: int = 0

    @classmethod
    def from_config(cls, config, model, info, run_dir=None) -> "DINO":
        """From config.dino; raises ValueError naming the fix before anything is compiled."""
        settings = dino_config.check(config, model, info)
        steps_per_epoch = -(-info.num_train // config.batch_size)
        total = durations.steps_of(config, "total", num_train_examples=info.num_train,
                                   batch_size=config.batch_size, required=True)
        return cls(model, crops=settings.crops, image_shape=tuple(info.image_shape), total_steps=total,
                   steps_per_epoch=steps_per_epoch,
                   student_temp=settings.student_temp, teacher_temp=settings.teacher_temp,
                   warmup_teacher_temp=settings.warmup_teacher_temp,
                   warmup_teacher_temp_epochs=settings.warmup_teacher_temp_epochs,
                   teacher_momentum=settings.teacher_momentum, centre_momentum=settings.centre_momentum,
                   freeze_last_layer_steps=settings.freeze_last_layer_epochs * steps_per_epoch)

    def init_extra(self, params, key):
        # The teacher starts as the student (the official code copies the student's state dict).
        return {"teacher": params, "centre": jnp.zeros((1, self.model.head_out_dim), jnp.float32)}

    def temperature(self, step):
        """The teacher temperature at `step` (its epoch's, as the official per-epoch schedule)."""
        return formulas.teacher_temperature(step // self.steps_per_epoch, self.teacher_temp,
                                            self.warmup_teacher_temp, self.warmup_teacher_temp_epochs)

    def loss(self, params, extra, batch, rng, info: StepInfo):
        crop_key, global_key, local_key = jax.random.split(rng, 3)
        # The named scopes are the parts `vitjax bench --profile` reports the step's time by.
        with jax.named_scope("crops"):
            views = multicrop.views(crop_key, batch["image"], self.crops)
        student = self._student_params(params, info.step)
        with jax.named_scope("student_global"):
            student_out, embeddings = self._apply(student, views.global_crops, train=True, rng=global_key)
        if views.local_crops is not None:
            with jax.named_scope("student_local"):
                local_out, _ = self._apply(student, views.local_crops, train=True, rng=local_key)
            student_out = jnp.concatenate([student_out, local_out])
        with jax.named_scope("teacher"):
            teacher_out, _ = self._apply(jax.lax.stop_gradient(extra["teacher"]), views.global_crops, train=False)
        teacher_out = jax.lax.stop_gradient(teacher_out)
        temperature = self.temperature(info.step)
        with jax.named_scope("loss_and_centre"):
            loss = formulas.dino_loss(student_out, teacher_out, extra["centre"], temperature, self.student_temp)
            metrics = formulas.collapse_monitors(teacher_out, extra["centre"], temperature, loss, embeddings)
        metrics.update(teacher_temperature=temperature,
                       teacher_momentum=formulas.teacher_momentum(info.step, self.total_steps, self.teacher_momentum),
                       **{EXTRA_INPUTS: {"batch_centre": jnp.mean(teacher_out, axis=(0, 1))[None]}})
        return loss, metrics

    def update_extra(self, extra, params, info: StepInfo, inputs=None):
        momentum = formulas.teacher_momentum(info.step, self.total_steps, self.teacher_momentum)
        with jax.named_scope("teacher_ema"):
            teacher = formulas.ema(extra["teacher"], params, momentum)
        # The batch centre is averaged over micro-batches of equal size: the whole batch's mean.
        centre = extra["centre"] * self.centre_momentum + inputs["batch_centre"] * (1.0 - self.centre_momentum)
        return {"teacher": teacher, "centre": centre}

    def _apply(self, params, crops, *, train: bool, rng=None):
        """(scores [views, batch, K], backbone embeddings [views * batch, D]) of crops [views, batch, ...]:
        one forward pass over all views of a size, as the official code groups crops by resolution."""
        views, batch = crops.shape[:2]
        rngs = {"dropout": rng} if rng is not None else {}
        # Here rather than at construction: a model swapped in later (the FLOP count's loop-free twin)
        # takes every crop size too.
        network = dino_config.with_table_grid(self.model, self.image_shape)
        scores, embeddings = network.apply({"params": params}, crops.reshape(views * batch, *crops.shape[2:]),
                                              train=train, rngs=rngs)
        return scores.reshape(views, batch, -1), embeddings

    def _student_params(self, params, step):
        """The student's parameters, the prototypes (head's last layer) cut from the gradient while frozen."""
        if not self.freeze_last_layer_steps:
            return params
        head = dict(params["dino_head"])
        last = dict(head["last_layer"])
        frozen = step < self.freeze_last_layer_steps
        last = {k: jnp.where(frozen, jax.lax.stop_gradient(v), v) for k, v in last.items()}
        return {**params, "dino_head": {**head, "last_layer": last}}

    def eval_sums(self, params, batch, rng):
        """Label-free: each example's two global views (crops drawn from the evaluator's fixed key) seen by
        the evaluated network (the teacher) alone. 'view_agreement': 1 where their top prototypes agree; 'view_cross_entropy':
        the loss's cross-entropy between them, one view at the final teacher temperature, no centre, both
        ways averaged. Both also reward a collapse: the frozen-feature k-NN is the measure of quality."""
        crops = dataclasses.replace(self.crops, local_crops=0)
        views = multicrop.views(rng, batch["image"], crops).global_crops
        scores, _ = self._apply(params, views, train=False)
        first, second = scores[0], scores[1]
        agree = (jnp.argmax(first, -1) == jnp.argmax(second, -1)).astype(jnp.float32)
        cross = 0.5 * (_cross_entropy(first, second, self.teacher_temp, self.student_temp)
                       + _cross_entropy(second, first, self.teacher_temp, self.student_temp))
        real = batch["mask"].astype(jnp.float32)
        return {"view_agreement": jnp.sum(agree * real), "view_cross_entropy": jnp.sum(cross * real)}

    def eval_logits(self, params, images):
        raise NotImplementedError("a DINO model has no classifier: its evaluation is eval_sums' view metrics; "
                                  "evaluate its frozen features with `vitjax eval --knn` or the few-shot probe")


def _cross_entropy(target, prediction, target_temp, prediction_temp):
    """Per example: -sum_k softmax(target / target_temp) log_softmax(prediction / prediction_temp)."""
    p = jax.nn.softmax(target / target_temp, -1)
    return -jnp.sum(p * jax.nn.log_softmax(prediction / prediction_temp, -1), -1)
