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

EVALS = ("knn", "fewshot", "zero_shot")  # config.evals' groups


class FeatureEvals:
    """The run's `config.evals` that are switched on; `due(step)` names those to run after a step, and
    calling it with them and the evaluated parameters returns the scalars to log. Single-process runs
    only (trainer.plan checks)."""

    def __init__(self, config, total_steps: int, num_classes: int, *, model=None, records=None):
        self._config = config
        self._every = {name: int(config.evals[name].every_steps) for name in EVALS
                       if name in config.evals and config.evals[name].every_steps}
        self._total_steps = total_steps
        self._probe_data = {**config.data.to_dict(), "train_size": None, "class_balanced": False}
        self._split = data.VAL if data.has_validation(config.data) else "test"
        self._num_classes = num_classes
        self._encode = None  # compiled once, on the first evaluation
        self._model, self._records = model, records or {}  # the run's model and objective records (zero_shot)
        self._captions = None  # compiled once, on the first zero-shot evaluation

    def due(self, step: int) -> tuple[str, ...]:
        return tuple(name for name, every in self._every.items() if step % every == 0 or step == self._total_steps)

    def __call__(self, names, params) -> dict:
        logged = self._caption_scores(params) if "zero_shot" in names else {}
        if "knn" in names or "fewshot" in names:
            logged.update(self._feature_scores(names, params))
        return logged

    def _caption_scores(self, params) -> dict:
        """A contrastive run's zero-shot and retrieval scores (vitjax/evaluate/caption_evals.py; on a
        validation split, held out of training pairs, zero_shot_held_out is NaN: it has none)."""
        from vitjax.data.tokenizer import RECORD, WordTokenizer
        from vitjax.evaluate import caption_evals

        if self._captions is None:
            self._captions = caption_evals.for_run(
                self._config, self._model, WordTokenizer.from_json(self._records[RECORD]),
                max_test=self._config.evals.zero_shot.max_test, split=self._split)
        found = self._captions.scores(params)
        return {f"{self._split}_{key}": value for key, value in found.items() if not key.startswith("num_")}

    def _feature_scores(self, names, params) -> dict:
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
