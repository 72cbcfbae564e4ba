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

Evaluation is the objective's too, so the trainer evaluates any objective the same way
(vitjax/evaluate/evaluator.py's Evaluator, vitjax/train/best.py):
- `eval_sums(params, batch, rng)` gives per-batch SUMS over the batch's real rows of named per-example
  metrics; the evaluator adds them over a split and divides by the number of examples, so a metric is a
  mean over the split's examples whatever the batch size or device count. The names become the run's
  keys: metric `m` is logged as `val_m` / `test_m`, and results.json holds `test_m`, and with a
  validation split `best_val_m` and `test_m_at_best`. Classification (the default) gives
  {'accuracy', 'loss'}: a supervised run's keys are those of the runs made before objectives existed.
- `selection` names the metric that picks the best-validation checkpoint and whether higher is better
  (classification: accuracy, higher; MAE: the reconstruction loss, lower). A tie keeps the earlier step.
- `rng` is a key fixed for each batch of a split (the evaluator derives it from the batch's index alone),
  for objectives whose evaluation draws (MAE's masks): evaluating the same parameters twice, at another
  step or after a resume, gives the same numbers.
Evaluations that are not sums over examples (a k-NN classifier needs the whole train split's features)
are evaluators of their own in vitjax/evaluate, run on saved parameters.
"""
import dataclasses
from typing import Any, ClassVar

import flax
import flax.linen as nn
import jax

from vitjax.evaluate import classification


# The metrics key under which a loss may hand values (a pytree) to `update_extra`: averaged over
# micro-batches as the metrics are, taken out before the metrics are logged.
EXTRA_INPUTS = "extra_inputs"


@flax.struct.dataclass
class StepInfo:
    """What a loss may know about the step it is part of (traced values; a pytree)."""
    step: jax.Array  # optimiser updates made before this step (int32 scalar): schedules inside a loss


@dataclasses.dataclass(frozen=True)
class Selection:
    """Which evaluation metric (a name `eval_sums` returns) picks the best-validation checkpoint, and
    which way is better."""
    metric: str = "accuracy"
    higher_is_better: bool = True

    def improves(self, new: float, old: float) -> bool:
        """Whether `new` is strictly better than `old` (a tie is not: it keeps the earlier step)."""
        return new > old if self.higher_is_better else new < old


@dataclasses.dataclass(frozen=True)
class Objective:
    """The supervised defaults; subclasses override `loss` and whatever else they need.

    `model` is the student, the module whose parameters the optimiser trains.
    """
    model: nn.Module
    selection: ClassVar[Selection] = Selection("accuracy", higher_is_better=True)  # see the module docstring
    # Where in the train state the evaluated network is, as 'params' or 'extra/<key>' (`evaluated_params`).
    evaluated: ClassVar[str] = "params"

    def evaluated_params(self, state) -> Any:
        """The parameters every evaluation reads: the trainer's validation and test evaluations, the
        best-validation checkpoint, and (the trainer writes `evaluated` into each checkpoint's meta,
        locations.EVALUATED) whatever reads a run's parameters later: frozen-feature k-NN and few-shot,
        `vitjax eval`, `vitjax analyze`, init_from. By default the trained parameters; DINO's is its
        teacher, which the official evaluations read."""
        tree = {"params": state.params, "extra": state.extra}
        for key in self.evaluated.split("/"):
            tree = tree[key]
        return tree

    def init_extra(self, params, key) -> Any:
        """The extra state at step 0 given the initial parameters, traced (under jax.eval_shape for its
        shapes and shardings, under jit for its values): leaves may be boxed with logical axis names,
        as the model's parameters are. None: no extra state."""
        return None

    def loaded_extra(self) -> Any:
        """Host arrays replacing `init_extra`'s values in a new run (a teacher read from disk), or None.
        Called once, when a run starts from step 0; a resumed run restores its extra state instead."""
        return None

    def pretrained_params(self, path: str, params, image_shape) -> Any:
        """The parameters a new run starts from with `init_from=path`, given its initialised `params`
        (unboxed, on the devices) and the data's `image_shape` (H, W, C). By default the whole network read
        from `path`, a classifier's head new (vitjax/interop/pretrained.py), with no use for `params`;
        SAM's puts an encoder into its own."""
        from vitjax.interop import pretrained  # here: a run that fine-tunes nothing loads no converter

        return pretrained.load(path, self.model, image_shape)

    def frozen(self) -> tuple[str, ...]:
        """Top-level parameter subtrees the optimiser never updates (no gradient step, no weight decay, no
        optimiser state: vitjax/train/optimizer.py's `freeze`), e.g. LiT's locked image tower; none by default."""
        return ()

    def records(self) -> dict:
        """{file name: JSON payload} the trainer keeps in the run directory: what resuming or reading the
        run needs beyond its checkpoints once the files the config points at are gone (a teacher's model)."""
        return {}

    def loss(self, params, extra, batch, rng, info: StepInfo) -> tuple[jax.Array, dict]:
        """(scalar loss to minimise, {name: scalar metric}) of one (micro-)batch {'image', 'labels'}.

        Differentiated with respect to `params` only. `rng` is the step's dropout key. The metrics are
        averaged over micro-batches and logged beside the loss."""
        raise NotImplementedError

    def update_extra(self, extra, params, info: StepInfo, inputs=None) -> Any:
        """The extra state after an applied update, given the updated parameters and `inputs`, what the
        loss returned under metrics[EXTRA_INPUTS] (None when nothing); identity by default."""
        return extra

    def eval_sums(self, params, batch, rng) -> dict:
        """{metric name: its sum over the real rows of `batch`} (see the module docstring), traced.

        `batch`: {'image' [B, H, W, C], 'label' [B] int, 'mask' [B] bool: False for padding rows, which
        must add nothing}. From the parameters alone: the best-validation checkpoint holds no more.
        Default: classification of `eval_logits`, {'accuracy': correct predictions, 'loss': summed
        cross-entropy}."""
        return classification.sums(self.eval_logits(params, batch["image"]), batch)

    def eval_logits(self, params, images) -> jax.Array:
        """Logits [batch, classes] that classification evaluation scores (the default `eval_sums`)."""
        return self.model.apply({"params": params}, images, train=False)
