"""A contrastive run's evaluations on the caption data (vitjax/data/captions.py) over its first test pairs:
zero-shot classification of colour-item pairs, apart for pairs held out of training and pairs seen in it,
and image-text retrieval recall, both directions.

    vitjax eval --workdir runs/captions --captions          # writes captions_eval.json in the run
    scores = caption_evals.workdir_scores("runs/captions")  # the same, from Python
    vitjax train ... --config.evals.zero_shot.every_steps=100   # logged during training (in_training.py)

Keys: zero_shot_accuracy (all pairs), zero_shot_held_out, zero_shot_seen (40 colour-item classes, each
the mean of its template prompts: vitjax/evaluate/zero_shot.py), image_to_text_r1/_r5 and
text_to_image_r1/_r5 (vitjax/evaluate/retrieval.py, between the `max_test` pairs' images and their
distinct captions, each caption once: `caption_retrieval`), num_test, num_held_out. Images pass through the
run's pp_eval; texts through the run's tokenizer (its tokenizer.json record).
Tests: tests/objectives/test_contrastive_objective.py (logged during a tiny run); the metrics themselves:
tests/evaluate/test_zero_shot_and_retrieval.py.
"""
import jax
import jax.numpy as jnp
import numpy as np

from vitjax.data import captions
from vitjax.evaluate import retrieval, zero_shot

REPORT = "captions_eval.json"


class CaptionEvals:
    """Compiled once per model; `scores(params)` as the module docstring says."""

    def __init__(self, model, tokenizer, templates, data_config, *, max_test: int, batch_size: int,
                 split: str = "test"):
        self._model, self._data_config, self._split = model, data_config, split
        self._max_test, self._batch_size = int(max_test), int(batch_size)
        self._caption_tokens = tokenizer.encode(captions.captions())
        self._prompt_tokens = tokenizer.encode(zero_shot.prompts(captions.colour_item_pairs(), tuple(templates)),
                                               strict=True)
        self._num_templates = len(templates)
        self._embed_images = jax.jit(lambda p, x: model.apply({"params": p}, x, method="embed_images"))
        self._embed_texts = jax.jit(lambda p, t: model.apply({"params": p}, t, method="embed_texts"))

    def _test_pairs(self, params):
        """(image embeddings [n, D], composition ids [n]) of the split's first max_test pairs."""
        from vitjax import data  # here: its TensorFlow only when an evaluation runs

        embeds, labels = [], []
        for batch in data.eval_batches(self._data_config, split=self._split, global_batch_size=self._batch_size):
            real = batch["mask"]
            embeds.append(np.asarray(self._embed_images(params, batch["image"]))[real])
            labels.append(batch["label"][real])
            if sum(map(len, labels)) >= self._max_test:
                break
        return np.concatenate(embeds)[:self._max_test], np.concatenate(labels)[:self._max_test]

    def scores(self, params) -> dict:
        images, labels = self._test_pairs(params)
        texts = np.asarray(self._embed_texts(params, jnp.asarray(self._caption_tokens)))
        prompts = np.asarray(self._embed_texts(params, jnp.asarray(self._prompt_tokens)))
        classifier = np.asarray(zero_shot.class_embeddings(prompts, self._num_templates))
        correct = np.asarray(zero_shot.predict(images, classifier)) == captions.colour_item_pair(labels)
        item, colour, _, _ = captions.attributes(labels)
        held = captions.held_out(item, colour)
        found = {"zero_shot_accuracy": float(correct.mean()),
                 "zero_shot_held_out": float(correct[held].mean()) if held.any() else float("nan"),
                 "zero_shot_seen": float(correct[~held].mean()) if (~held).any() else float("nan"),
                 "num_test": int(len(labels)), "num_held_out": int(held.sum())}
        found.update(caption_retrieval(images, texts, labels))
        return found


def caption_retrieval(images, texts, labels) -> dict:
    """Retrieval R@1 and R@5 between the images [n, D] and the distinct captions among their composition
    ids `labels` [n] (`texts` [compositions, D] holds every composition's caption embedding): each caption
    once, because copies of one caption embed identically and would tie, filling an image's top 5 with
    one caption (its R@5 then equal to its R@1)."""
    shown = np.unique(labels)
    return retrieval.recall_at_k(images @ texts[shown].T, labels[:, None] == shown[None, :])


def for_run(config, model, tokenizer, *, max_test: int, split: str = "test") -> CaptionEvals:
    """The CaptionEvals of a run's config (its templates, data and eval batch size)."""
    return CaptionEvals(model, tokenizer, tuple(config.contrastive.templates), config.data, max_test=max_test,
                        batch_size=config.eval_batch_size, split=split)


def workdir_scores(workdir: str, checkpoint: str | None = None, *, max_test: int | None = None) -> dict:
    """`CaptionEvals.scores` of a contrastive run's newest (or the given) checkpoint on its test split,
    with the step's checkpoint path; also written to the run's captions_eval.json."""
    from vitjax import models, rundir
    from vitjax.checkpoints import locations, reader
    from vitjax.data.tokenizer import RECORD, WordTokenizer

    run_dir = locations.locate(workdir).run_dir
    config = rundir.load_config(run_dir)
    if config.get("objective") != "contrastive":
        raise ValueError(f"{workdir} was trained with objective={config.get('objective')!r}; caption evaluations "
                         f"read a dual encoder trained with objective='contrastive'")
    record = rundir.read_json(run_dir, RECORD)
    if record is None:
        raise FileNotFoundError(f"{run_dir} has no {RECORD} (the trainer writes it when a contrastive run "
                                f"starts); re-run its `vitjax train` command to write it")
    model = models.build(config.model_name, 0, **config.model.to_dict())
    evals = for_run(config, model, WordTokenizer.from_json(record),
                    max_test=max_test or config.evals.zero_shot.max_test)
    results = {**evals.scores(reader.read_params(checkpoint or workdir)), "checkpoint": checkpoint or workdir}
    rundir.write_report(run_dir, REPORT, results)
    return results
