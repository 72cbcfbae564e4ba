"""What every objective (a plug-in saying what the train step optimises) provides, and its defaults.

An objective owns the model call and the loss; the train step (vitjax/train/step.py) owns the rest
(micro-batches, gradients, the optimiser, the non-finite guard) and is the same for every objective.
Besides the parameters an objective may keep extra state in the train state (`TrainState.extra`), which
is checkpointed and restored with it, so a resumed run repeats an uninterrupted one exactly: a frozen
teacher (distillation), an EMA teacher and a centre (DINO). The extra state gets no gradient and is
never seen by the optimiser; `update_extra` changes it after each applied update (a skipped,
non-finite step leaves it as it was), from the updated parameters and from what the loss handed it
under `EXTRA_INPUTS` in its metrics (DINO's centre moves by the teacher outputs of the step). None
means no extra state, and keeps the checkpoint layout of the runs made before objectives existed.
"""
import dataclasses
from typing import Any

import flax
import flax.linen as nn
import jax


# The metrics key under which a loss may hand values (a pytree) to `update_extra`: averaged over
# micro-batches as the metrics are, taken out before the metrics are logged.
EXTRA_INPUTS = "extra_inputs"


@flax.struct.dataclass
class StepInfo:
    """What a loss may know about the step it is part of (traced values; a pytree)."""
    step: jax.Array  # optimiser updates made before this step (int32 scalar): schedules inside a loss


@dataclasses.dataclass(frozen=True)
class Objective:
    """The supervised defaults; subclasses override `loss` and whatever else they need.

    `model` is the student, the module whose parameters the optimiser trains.
    """
    model: nn.Module

    def init_extra(self, params, key) -> Any:
        """The extra state at step 0 given the initial parameters, traced (under jax.eval_shape for its
        shapes and shardings, under jit for its values): leaves may be boxed with logical axis names,
        as the model's parameters are. None: no extra state."""
        return None

    def loaded_extra(self) -> Any:
        """Host arrays replacing `init_extra`'s values in a new run (a teacher read from disk), or None.
        Called once, when a run starts from step 0; a resumed run restores its extra state instead."""
        return None

    def loss(self, params, extra, batch, rng, info: StepInfo) -> tuple[jax.Array, dict]:
        """(scalar loss to minimise, {name: scalar metric}) of one (micro-)batch {'image', 'labels'}.

        Differentiated with respect to `params` only. `rng` is the step's dropout key. The metrics are
        averaged over micro-batches and logged beside the loss."""
        raise NotImplementedError

    def update_extra(self, extra, params, info: StepInfo, inputs=None) -> Any:
        """The extra state after an applied update, given the updated parameters and `inputs`, what the
        loss returned under metrics[EXTRA_INPUTS] (None when nothing); identity by default."""
        return extra

    def eval_logits(self, params, images) -> jax.Array:
        """Logits [batch, classes] that evaluation scores (accuracy and loss on the test or
        validation split). From the parameters alone: the best-validation checkpoint holds no more."""
        return self.model.apply({"params": params}, images, train=False)
