"""Best-validation model selection: evaluate on the validation split, keep the best step's parameters.

With a validation split (`data.has_validation`: `data.val_size > 0` holds one out of the train split, or
`data.val_split` names one) the trainer's scheduled evaluations (every `eval_every_steps`, and the last
step) are on it, never on the test split: choosing a
step by test accuracy would report an optimistic test accuracy. `BestValidation` logs each one and
saves the parameters whenever validation accuracy strictly improves (a tie keeps the earlier step), so
at the end the best step's parameters can be evaluated on the test split once.

The parameters go to the run's checkpoint_best/ through the trainer's own Checkpointer with
max_to_keep=1, not through orbax's best_fn/best_mode: those keep the best of the steps a manager saves,
so every evaluated step would be written in full and then deleted, the tie rule would be orbax's, and
the resume record would be orbax's metrics file; the Checkpointer writes only on an improvement, and
its checksums, layout check and corrupt-step handling cover this checkpoint as they cover the others.
Saves are synchronous, and come before the step's train-state checkpoint: a train state that resumes
at step S finds every improvement up to S already saved.

On resume the best so far is read back from that checkpoint's meta. It may be from a step past the one
the run resumes from (saved before the train state of its step was): the resumed run evaluates that
step again on the same parameters, gets the same metrics (evaluation is deterministic, its keys
fixed), and a tie keeps it, so the run ends with the
results an uninterrupted one has.
"""
import dataclasses

from vitjax import rundir
from vitjax.checkpoints import checkpointer, locations
from vitjax.objectives.base import Selection

_PREFIX = "val_"  # of the metrics in the log and in the best checkpoint's meta


@dataclasses.dataclass(frozen=True)
class Best:
    step: int
    metrics: dict  # {metric name: its validation value at `step`}


class BestValidation:
    """Called as (step, params, log) at each scheduled evaluation; `best` is the best step so far (None
    before the first evaluation).

    `evaluator` evaluates parameters on the validation split ({metric: value}); `selection` says which
    metric picks the best and which way (default: accuracy, higher). `save(checkpointer, step, tree,
    meta)` saves, as the trainer saves its train state (it turns a non-finite state into the trainer's error).
    """

    def __init__(self, workdir: str, evaluator, abstract_params, *, val_size: int, save, config: dict,
                 val_split: str = "", selection: Selection = Selection()):
        self._evaluate = evaluator
        self._abstract = {"params": abstract_params}  # reader.read_params reads it as any step
        self._val_size = val_size  # examples of the validation split, however it was made
        self._val_split = val_split
        self._save = save
        self._selection = selection
        self._ckpt = checkpointer.Checkpointer(locations.best_checkpoint_dir(workdir), max_to_keep=1,
                                               async_save=False, config=config)
        self.best = self._recorded()

    def _recorded(self) -> Best | None:
        """The best step an earlier attempt of this run saved; None when there is none."""
        if not self._ckpt.steps():  # before restore_latest, which would look for set-aside steps
            return None
        _, meta = self._ckpt.restore_latest(self._abstract)
        return Best(int(meta["step"]), {k[len(_PREFIX):]: v for k, v in meta.items() if k.startswith(_PREFIX)})

    def __call__(self, step: int, params, log) -> None:
        """Evaluates `params` (step `step`) on the validation split, logs it, and keeps them if best."""
        metrics = self._evaluate(params)
        logged = {_PREFIX + name: value for name, value in metrics.items()}
        log.write(step, logged)
        name = self._selection.metric
        if name not in metrics:
            raise KeyError(f"the objective selects the best step by {name!r}, which its evaluation does not "
                           f"give (it gives {sorted(metrics)})")
        if self.best is None or self._selection.improves(metrics[name], self.best.metrics[name]):
            self._save(self._ckpt, step, {"params": params}, logged)
            self.best = Best(step, dict(metrics))
        if rundir.is_writer():
            print(f"step {step}: validation {name} {metrics[name]:.4f} (best {self.best.metrics[name]:.4f} "
                  f"at step {self.best.step})", flush=True)

    def test_at_best(self, test_evaluator) -> dict:
        """{'test_m_at_best'} for each metric m (classifiers: accuracy and loss): the best step's
        parameters, restored from their checkpoint (checksums verified), evaluated by `test_evaluator`."""
        if self.best is None:
            raise RuntimeError("no validation evaluation was made; the trainer evaluates the last step always")
        restored, _ = self._ckpt.restore_latest(self._abstract)  # the one step kept: self.best's
        test = test_evaluator(restored["params"])
        return {f"test_{name}_at_best": value for name, value in test.items()}

    def summary(self) -> dict:
        """results.json's keys of the validation split (its size; its name when data.val_split named it)
        and of its best step ('best_step', 'best_val_m' for each metric m)."""
        named = {"val_split": self._val_split} if self._val_split else {}
        return {"val_size": self._val_size, **named, "best_step": self.best.step,
                **{f"best_val_{name}": value for name, value in self.best.metrics.items()}}

    def close(self) -> None:
        self._ckpt.close()
