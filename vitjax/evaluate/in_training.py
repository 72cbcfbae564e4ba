"""k-NN and few-shot accuracy of a run's frozen features while it trains (`config.evals`, as big_vision's
`config.evals`): a DINO or MAE run, which has no test accuracy of its own, shows its label-free progress as
it goes, in metrics.jsonl and TensorBoard beside the loss.

    vitjax train --config configs/fashion_mnist/dino.py --workdir runs/dino \
        --config.evals.knn.every_steps=1000 --config.evals.fewshot.every_steps=1000

Each runs every `every_steps` steps and at the last step, on the network the run evaluates
(Objective.evaluated_params: DINO's teacher), with the classifiers and features of `vitjax eval --knn` and
`--fewshot` (knn.scores, fewshot.scores, features.feature_model) on capped sets, so that an evaluation
costs seconds rather than an epoch of encoding: the k-NN's memory bank is the first `max_train` images
of the run's train split, both score the first `max_test` images of the validation split where the run
has one (data.val_size or val_split: a run is watched, and may be stopped, on validation, never on test),
else of the test split. Logged as <split>_knn_<k>_top1 (and _top5) and <split>_fewshot_<k>shot, <split>
'val' or 'test'; on the test split `vitjax eval --knn_only --knn_max_train M --knn_max_test T` on the same
checkpoint gives the same numbers (tested). They read the parameters only: the run trains the same steps
with them or without them.
"""
from vitjax import data
from vitjax.evaluate import features, fewshot, knn


class FeatureEvals:
    """The run's `config.evals` that are switched on; `due(step)` names those to run after a step, and
    calling it with them and the evaluated parameters returns the scalars to log. Single-process runs
    only (trainer.plan checks)."""

    def __init__(self, config, total_steps: int, num_classes: int):
        self._config = config
        self._every = {name: int(config.evals[name].every_steps) for name in ("knn", "fewshot")
                       if config.evals[name].every_steps}
        self._total_steps = total_steps
        self._probe_data = {**config.data.to_dict(), "train_size": None, "class_balanced": False}
        self._split = data.VAL if data.has_validation(config.data) else "test"
        self._num_classes = num_classes
        self._encode = None  # compiled once, on the first evaluation

    def due(self, step: int) -> tuple[str, ...]:
        return tuple(name for name, every in self._every.items() if step % every == 0 or step == self._total_steps)

    def __call__(self, names, params) -> dict:
        model, params = features.feature_model(self._config, params, self._num_classes)
        if self._encode is None:
            self._encode = fewshot.feature_fn(model)
        settings, batch_size, logged = self._config.evals, self._config.eval_batch_size, {}
        if "knn" in names:
            found = knn.scores(self._encode, params, self._probe_data, self._num_classes, ks=(settings.knn.k,),
                               temperature=settings.knn.temperature, max_train=settings.knn.max_train,
                               max_test=settings.knn.max_test, batch_size=batch_size, split=self._split)
            logged.update({f"{self._split}_{key}": value for key, value in found.items() if key.startswith("knn_")})
        if "fewshot" in names:
            found = fewshot.scores(self._encode, params, self._probe_data, self._num_classes,
                                   shots=tuple(settings.fewshot.shots), seeds=settings.fewshot.seeds,
                                   max_test=settings.fewshot.max_test, batch_size=batch_size, split=self._split)
            logged.update({f"{self._split}_fewshot_{k}shot": found[f"{k}shot"] for k in settings.fewshot.shots})
        return logged
