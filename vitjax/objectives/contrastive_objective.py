"""Contrastive image-text training of a dual encoder (CLIP, SigLIP) on the caption data made here.

    vitjax train --config configs/captions/dual_encoder.py --workdir runs/captions

`config.objective = "contrastive"` with `model_name = "dual_encoder"` (vitjax/models/dual_encoder.py's
ConfiguredDualEncoder) and `data.name = "captions"` (vitjax/data/captions.py). Settings in
config.contrastive: `loss` 'sigmoid' (SigLIP; the model needs its learned bias, layout 'siglip') or
'softmax' (CLIP; any layout, a bias gets no gradient from it), and the zero-shot `templates`.

A pair's label is its caption's id; the captions are encoded once, here, by a word tokenizer built from
their vocabulary (vitjax/data/tokenizer.py), and a step looks its texts up by label, so the pipeline
moves no text (its exact resume holds as for images). The tokenizer is a record of the run
(`tokenizer.json` in the workdir): what reads the run later encodes with it.

The loss is vitjax/objectives/contrastive.py's on the batch's [B, B] pairs. SigLIP's, when the batch is
split over several devices (the CLI's 4 CPU devices), is its chunked form under shard_map: each device
scores its images against its own texts, then the texts travel the ring; it equals the gathered loss
(tests/objectives/test_contrastive.py) and never forms the [B, B] matrix on one device. CLIP's needs
each row's and column's logsumexp over the whole batch: it stays the gathered form (XLA gathers the
[B, D] text embeddings, cheap beside the towers at these sizes). With grad_accum_steps > 1 each
micro-batch is its own contrastive batch (fewer negatives), as in big_vision.

LiT (locked-image tuning): with `init_from` (a vitjax ViT, MAE or DINO run, or its export) the image tower
is that run's encoder (vitjax/interop/lit_init.py: what loads, what is refused before anything compiles),
and with `contrastive.lock_image=True` it is locked: it gets no gradient and no optimiser update (`frozen`),
so after any number of steps it is the source's to the bit. The run's log says what was loaded and locked;
init_from.json in its directory lists every key, results.json names the frozen subtree.

Evaluation (`eval_sums`, per test example): `zero_shot_accuracy`, an image's colour-item pair
(40 classes) picked by prompt ensembling over the templates (vitjax/evaluate/zero_shot.py), which picks
the best checkpoint; `caption_accuracy`, its own caption ranked first of all 400. Accuracy on held-out
versus seen pairs and retrieval R@k: vitjax/evaluate/caption_evals.py (`vitjax eval --captions`,
config.evals.zero_shot during training).
"""
import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from vitjax import rundir
from vitjax.data import captions
from vitjax.parallel import BATCH_AXES
from vitjax.data.tokenizer import EOS_ID, RECORD, WordTokenizer, words_of
from vitjax.evaluate import zero_shot
from vitjax.interop import lit_init
from vitjax.models.dual_encoder import logits_per_image
from vitjax.objectives import contrastive
from vitjax.objectives.base import Objective, Selection, StepInfo

LOSSES = ("sigmoid", "softmax")


@dataclasses.dataclass(frozen=True, eq=False)
class Contrastive(Objective):
    selection: ClassVar[Selection] = Selection("zero_shot_accuracy", higher_is_better=True)
    loss_name: str = "sigmoid"
    tokenizer: WordTokenizer | None = None
    caption_tokens: np.ndarray | None = None  # int32 [compositions, L]: each label's caption
    prompt_tokens: np.ndarray | None = None  # int32 [classes * templates, L], zero_shot.prompts' order
    num_templates: int = 1
    tower: lit_init.LockedTower | None = None  # the image tower read from init_from, when set
    lock_image: bool = False  # LiT: the loaded image tower gets no gradient and no update

    @classmethod
    def from_config(cls, config, model, info, run_dir=None) -> "Contrastive":
        """Checks that data, model and settings fit together (each error names its fix), then encodes the
        captions and prompts."""
        settings = config.contrastive
        check_setup(config, model, info)
        longest = max(len(words_of(text)) for text in captions.captions()) + 1  # with the end-of-text token
        if model.max_length < longest:
            raise ValueError(f"captions take up to {longest} tokens (words and the end-of-text token), more than "
                             f"model.max_length={model.max_length}: set --config.model.max_length={longest} or more")
        tokenizer = WordTokenizer.from_texts(captions.captions(), length=model.max_length)
        if tokenizer.vocab_size > model.vocab_size:
            raise ValueError(f"the captions' vocabulary has {tokenizer.vocab_size} tokens, more than "
                             f"model.vocab_size={model.vocab_size}: set --config.model.vocab_size="
                             f"{tokenizer.vocab_size} or more")
        try:
            caption_tokens = tokenizer.encode(captions.captions())
            prompts = zero_shot.prompts(captions.colour_item_pairs(), tuple(settings.templates))
            prompt_tokens = tokenizer.encode(prompts, strict=True)
        except ValueError as error:
            raise ValueError(f"contrastive objective (model.max_length={model.max_length}, "
                             f"contrastive.templates): {error}") from None
        lock_image = bool(settings.get("lock_image", False))  # absent from configs saved before LiT
        if lock_image and not config.init_from:
            raise ValueError("contrastive.lock_image=True locks an image tower loaded by init_from: set "
                             "--config.init_from=<a vitjax ViT, MAE or DINO run, or its export> (LiT), or "
                             "contrastive.lock_image=False")
        # Read and checked now, while planning: a source that does not fit is refused before anything compiles.
        tower = lit_init.read(config.init_from, model, info.image_shape) if config.init_from else None
        return cls(model, loss_name=settings.loss, tokenizer=tokenizer, caption_tokens=caption_tokens,
                   prompt_tokens=prompt_tokens, num_templates=len(settings.templates), tower=tower,
                   lock_image=lock_image)

    def pretrained_params(self, path, params, image_shape):
        """The dual encoder's initialised `params` with the image tower read from `path` (`tower`, read when
        the run was planned); the text tower and the temperature (and bias) stay at init."""
        if rundir.is_writer():
            print(self.tower.summary(self.lock_image), flush=True)
        return self.tower.apply(params)

    def frozen(self) -> tuple[str, ...]:
        return (lit_init.TOWER,) if self.lock_image else ()

    def records(self) -> dict:
        records = {RECORD: self.tokenizer.to_json()}
        if self.tower is not None:
            records[lit_init.RECORD] = self.tower.report(self.lock_image)
        return records

    def loss(self, params, extra, batch, rng, info: StepInfo):
        if self.lock_image:
            # The optimiser already leaves the tower alone (frozen); cut its gradient too, so the backward
            # pass skips it and grad_norm (and any clipping) is the trained parameters' alone.
            params = {**params, lit_init.TOWER: jax.lax.stop_gradient(params[lit_init.TOWER])}
        tokens = jnp.asarray(self.caption_tokens)[jnp.argmax(batch["labels"], axis=-1)]
        out = self.model.apply({"params": params}, batch["image"], tokens, train=True, rngs={"dropout": rng})
        logged = {name: out[name] for name in ("logit_scale", "logit_bias") if name in out}
        return self.pair_loss(out), logged

    def pair_loss(self, out):
        """The configured loss of a batch's pairs (`DualEncoder`'s output), image i matching text i."""
        if self.loss_name == "softmax":
            return contrastive.softmax_loss(logits_per_image(out))
        axes = batch_axes_over_devices()
        if not axes:
            return contrastive.sigmoid_loss(logits_per_image(out))
        chunked = jax.shard_map(lambda i, t, s, b: contrastive.sigmoid_loss_chunked(i, t, s, b, axis_name=axes),
                                in_specs=(P(axes), P(axes), P(), P()), out_specs=P())
        return chunked(out["image_embeds"], out["text_embeds"], out["logit_scale"], out["logit_bias"])

    def zero_shot_classifier(self, params):
        """[40, D]: each colour-item pair's template-averaged text embedding."""
        embeds = self.model.apply({"params": params}, jnp.asarray(self.prompt_tokens), method="embed_texts")
        return zero_shot.class_embeddings(embeds, self.num_templates)

    def eval_sums(self, params, batch, rng):
        real = batch["mask"].astype(jnp.float32)
        images = self.model.apply({"params": params}, batch["image"], method="embed_images")
        pair = zero_shot.predict(images, self.zero_shot_classifier(params))
        texts = self.model.apply({"params": params}, jnp.asarray(self.caption_tokens), method="embed_texts")
        caption = jnp.argmax(images @ texts.T, axis=-1)
        pair_of_label = jnp.asarray(captions.colour_item_pair(np.arange(captions.NUM_COMPOSITIONS)))
        return {"zero_shot_accuracy": jnp.sum((pair == pair_of_label[batch["label"]]) * real),
                "caption_accuracy": jnp.sum((caption == batch["label"]) * real)}

    def eval_logits(self, params, images):
        raise NotImplementedError("a dual encoder has no class head: its evaluation is eval_sums' zero-shot "
                                  "classification (vitjax/evaluate/caption_evals.py for more)")


def batch_axes_over_devices() -> tuple[str, ...]:
    """The mesh axes (of the mesh the step is traced under) that split the batch over more than one
    device; () for none, or no mesh."""
    mesh = jax.sharding.get_abstract_mesh()
    if mesh.empty:
        return ()
    return tuple(axis for axis in BATCH_AXES if mesh.shape.get(axis, 1) > 1)


def check_setup(config, model, info) -> None:
    """Raises ValueError, naming the fix, for data, pre-processing or a model this objective cannot train."""
    data = config.data
    if data.name != "captions":
        raise ValueError(f"objective='contrastive' trains on image-caption pairs: set --config.data.name=captions "
                         f"(vitjax/data/captions.py), got data.name={data.name!r}")
    if data.mixup_alpha or data.cutmix_alpha:
        raise ValueError("Mixup/CutMix blend images and labels, which a caption cannot follow: set "
                         "data.mixup_alpha=0 and data.cutmix_alpha=0")
    if "flip" in data.pp_train:
        raise ValueError(f"pp_train {data.pp_train!r} flips images, which swaps 'left' and 'right' in the "
                         f"captions: drop flip_lr (e.g. pp_train='value_range(-1, 1)')")
    if config.contrastive.loss not in LOSSES:
        raise ValueError(f"contrastive.loss={config.contrastive.loss!r}: choose 'sigmoid' (SigLIP) or 'softmax' (CLIP)")
    if config.contrastive.loss == "sigmoid" and model.layout != "siglip":
        raise ValueError(f"contrastive.loss='sigmoid' needs the learned bias of model.layout='siglip' (got "
                         f"{model.layout!r}): set --config.model.layout=siglip, or contrastive.loss=softmax")
    if model.layout == "clip" and model.eos_token_id != EOS_ID:
        raise ValueError(f"model.eos_token_id={model.eos_token_id}: CLIP's layout reads the end-of-text token, "
                         f"which the caption tokenizer numbers {EOS_ID}; set --config.model.eos_token_id={EOS_ID}")
    if tuple(info.image_shape[:2]) != (model.image_size, model.image_size):
        raise ValueError(f"images are {info.image_shape[0]}x{info.image_shape[1]} but model.image_size="
                         f"{model.image_size}: set --config.model.image_size={info.image_shape[0]} (the canvas, "
                         f"data.captions.canvas)")
