"""Promptable segmentation (SAM, Kirillov et al. 2023): `config.objective = "sam"` with `config.model_name =
"sam"`, on the packed canvases of vitjax/data/canvases.py (`data.name = "canvases"`).

Each step embeds the batch's canvases once and runs SAM's interactive simulation on every item of every
canvas (vitjax/segment/interactive.py): a share `sam.box_fraction` of the items (a permutation drawn from
the step's key) starts from its bounding box (moved by `sam.box_noise` x its side), the others from a
point inside it; then `sam.clicks` rounds each add a point from the error region of the previous answer,
the previous low-resolution logits fed back. Every round's answer is trained: focal + dice loss at 20:1
(vitjax/segment/mask_losses.py) against the item's visible mask, and the IoU head's squared error against
each answer's actual IoU (logits > 0). A first point is ambiguous (it may mean a part, an item, a stack of
items): that round answers with three masks and only the one of lowest loss is trained (its IoU
predictions all are). Every draw comes from the step's key (`fold_in(seed, step)`), so a resumed run
repeats an uninterrupted one exactly.

Logged beside the loss: `mask_loss`, `iou_loss`, and `iou_first` / `iou_last`: the IoU of the mask shown
to the simulated user after the first and the last round (the training batch's, not an evaluation).

Evaluation (`eval_sums`): the mIoU of every item after 1, 3 and 5 clicks (`sam.eval_clicks`) and for its
exact box, on the canvases of the seen classes and on those of the unseen ones, as `miou_seen_3click`,
`miou_unseen_box` and so on (vitjax/segment/interactive.py's `click_ious`, each a mean over the items of
that group's canvases). Clicks come from the evaluator's fixed key per batch, so the same parameters score
the same at every step, after a resume and in `vitjax eval --workdir RUN`. The best-validation
checkpoint (with data.val_size) is the one with the highest `miou_seen_3click`: validation canvases are
training canvases held out, all of seen classes.

With `init_from` (a vitjax MAE or ViT run, or its export) the image encoder starts from that encoder,
as SAM starts from an MAE (vitjax/interop/sam_init.py: what maps, how the patch and position embeddings
are carried over, what is refused); the run's log says what was loaded and what stayed at init, and
init_from.json in its directory lists every key. `sam.init_pixel_range` is the range the source's pixels
were mapped to (its value_range), checked against a run's own config.

The prompt encoder's random Fourier matrix is no parameter (vitjax/models/sam_prompt_encoder.py): it is
drawn from the fixed key FOURIER_SEED whatever the run's seed, so every run (and every reader of a run)
pairs its parameters with the same matrix.
"""
import dataclasses

import jax
import jax.numpy as jnp

from vitjax import rundir
from vitjax.data import canvases
from vitjax.evaluate.evaluator import METRIC_COUNTS
from vitjax.interop import sam_init
from vitjax.models.sam import preprocess
from vitjax.models.sam_prompt_encoder import CONSTANTS
from vitjax.objectives.base import Objective, Selection, StepInfo
from vitjax.segment import interactive
from vitjax.segment.mask_losses import mask_iou, mask_loss

FOURIER_SEED = 0
INIT_RECORD = "init_from.json"  # in the run directory: which parameters init_from loaded, which stayed at init
GROUPS = {canvases.SEEN: "seen", canvases.UNSEEN: "unseen"}


def fourier_constants(model) -> dict:
    """The `constants` collection of `model` (a SAM): its Fourier matrix drawn from FOURIER_SEED."""
    matrix = jax.random.normal(jax.random.key(FOURIER_SEED), (2, model.prompt_width // 2), jnp.float32)
    return {"prompt_encoder": {"gaussian_matrix": matrix}}


def unpack(images, items: int, image_size: int):
    """Packed canvases float [B, S, S, 3] (vitjax/data/canvases.py) -> (SAM's encoder input [B, image_size,
    image_size, 3]: the grey pixels as RGB, normalised, padded; item masks bool [B * items, S, S])."""
    pixels = images[..., canvases.PIXELS]
    ids = jnp.round(images[..., canvases.ITEM_IDS]).astype(jnp.int32)
    masks = ids[:, None] == jnp.arange(1, items + 1, dtype=jnp.int32)[None, :, None, None]
    rgb = jnp.repeat(pixels[..., None], 3, axis=-1)
    return preprocess(rgb, image_size), masks.reshape(-1, *masks.shape[2:])


def round_losses(prediction: interactive.Prediction, targets):
    """(mask loss [n]: the lowest over the answers, IoU loss [n]: the mean squared error of every answer's
    predicted IoU against its actual IoU) of one round."""
    losses = mask_loss(prediction.logits, targets[:, None])
    actual = jax.lax.stop_gradient(mask_iou(prediction.logits > 0, targets[:, None]))
    return jnp.min(losses, axis=1), jnp.mean((prediction.iou - actual) ** 2, axis=1)


@dataclasses.dataclass(frozen=True)
class PromptableSegmentation(Objective):
    selection = Selection("miou_seen_3click", higher_is_better=True)
    items: int = 3
    clicks: int = 3
    box_fraction: float = 0.5
    box_noise: float = 0.1
    iou_weight: float = 1.0
    eval_clicks: tuple[int, ...] = (1, 3, 5)
    start: sam_init.EncoderStart | None = None  # the image encoder's parameters from init_from

    @classmethod
    def from_config(cls, config, model, info, run_dir=None) -> "PromptableSegmentation":
        """The model is a SAM (vitjax/train/checks.py pairs them); ValueError for data or settings it
        cannot train on, naming the fix."""
        data, settings = config.data, config.sam
        if data.name != "canvases":
            raise ValueError(f"objective='sam' trains on data.name='canvases' (items with their masks, "
                             f"vitjax/data/canvases.py), got data.name={data.name!r}")
        if data.pp_train or data.pp_eval:
            raise ValueError(f"objective='sam' reads item masks from the canvases' channels, which pp ops would "
                             f"change: set data.pp_train='' and data.pp_eval='' (got {data.pp_train!r}, "
                             f"{data.pp_eval!r}); SAM normalises the pixels itself")
        if data.canvases.canvas > model.image_size:
            raise ValueError(f"canvases of {data.canvases.canvas} pixels do not fit model.image_size="
                             f"{model.image_size}: set model.image_size={data.canvases.canvas}")
        problems = [f"sam.{key}={value!r}: {fix}" for key, value, good, fix in (
            ("clicks", settings.clicks, settings.clicks >= 0, "use 0 or more rounds after the first prompt"),
            ("box_fraction", settings.box_fraction, 0 <= settings.box_fraction <= 1, "use a share in [0, 1]"),
            ("box_noise", settings.box_noise, settings.box_noise >= 0, "use 0 (exact boxes) or more"),
            ("iou_weight", settings.iou_weight, settings.iou_weight >= 0, "use 0 or more"),
            ("eval_clicks", tuple(settings.eval_clicks), all(int(k) == k >= 1 for k in settings.eval_clicks)
             and len(settings.eval_clicks) > 0, "list click counts >= 1, e.g. (1, 3, 5)"),
            ("init_pixel_range", tuple(settings.init_pixel_range), len(settings.init_pixel_range) == 2
             and settings.init_pixel_range[0] < settings.init_pixel_range[1], "use (low, high), low < high"),
        ) if not good]
        if problems:
            raise ValueError("; ".join(problems))
        # Read and checked now, while planning: a source that does not fit is refused before anything compiles.
        start = sam_init.read(config.init_from, model, pixel_range=tuple(settings.init_pixel_range)) \
            if config.init_from else None
        return cls(model, items=int(data.canvases.num_items), clicks=int(settings.clicks),
                   box_fraction=float(settings.box_fraction), box_noise=float(settings.box_noise),
                   iou_weight=float(settings.iou_weight), eval_clicks=tuple(int(k) for k in settings.eval_clicks),
                   start=start)

    def pretrained_params(self, path, params, image_shape):
        """SAM's initialised `params` with the image encoder read from `path` in place (`start`, read when
        the run was planned); the relative-position tables, neck, prompt encoder and decoder stay at init."""
        if rundir.is_writer():
            print(self.start.summary(), flush=True)
        return self.start.apply(params)

    def records(self) -> dict:
        return {} if self.start is None else {INIT_RECORD: self.start.report()}

    def variables(self, params) -> dict:
        return {"params": params, CONSTANTS: fourier_constants(self.model)}

    def _embedded(self, variables, images):
        """(image embeddings repeated for each item [B * items, g, g, w], item masks [B * items, S, S])."""
        inputs, targets = unpack(images, self.items, self.model.image_size)
        embeddings = self.model.apply(variables, inputs, method="embed_image")
        return jnp.repeat(embeddings, self.items, axis=0), targets

    def _decoder(self, variables, embeddings):
        def decode(points, labels, boxes, mask_input, multimask):
            return self.model.apply(variables, embeddings, points, labels, boxes, mask_input,
                                    multimask_output=multimask, method="predict_masks")
        return decode

    def loss(self, params, extra, batch, rng, info: StepInfo):
        variables = self.variables(params)
        embeddings, targets = self._embedded(variables, batch["image"])
        order_key, box_key, point_key = jax.random.split(rng, 3)
        count = targets.shape[0]
        boxed = int(round(self.box_fraction * count))
        order = jax.random.permutation(order_key, count)
        mask_terms, iou_terms, first_ious, last_ious = [], [], [], []
        for first, chosen, key in (("box", order[:boxed], box_key), ("point", order[boxed:], point_key)):
            if chosen.shape[0] == 0:
                continue
            rounds = interactive.simulate(self._decoder(variables, embeddings[chosen]), targets[chosen], key,
                                          first=first, clicks=self.clicks, box_noise=self.box_noise)
            for prediction in rounds:
                mask_term, iou_term = round_losses(prediction, targets[chosen])
                mask_terms.append(mask_term)
                iou_terms.append(iou_term)
            shown_iou = lambda p: mask_iou(p.shown()[0] > 0, targets[chosen])  # noqa: E731
            first_ious.append(shown_iou(rounds[0]))
            last_ious.append(shown_iou(rounds[-1]))
        mask_part, iou_part = jnp.mean(jnp.concatenate(mask_terms)), jnp.mean(jnp.concatenate(iou_terms))
        metrics = {"mask_loss": mask_part, "iou_loss": iou_part,
                   "iou_first": jnp.mean(jnp.concatenate(first_ious)),
                   "iou_last": jnp.mean(jnp.concatenate(last_ious))}
        return mask_part + self.iou_weight * iou_part, jax.lax.stop_gradient(metrics)

    def eval_sums(self, params, batch, rng):
        variables = self.variables(params)
        embeddings, targets = self._embedded(variables, batch["image"])
        ious = interactive.click_ious(self._decoder(variables, embeddings), targets, rng, self.eval_clicks)
        groups = jnp.repeat(batch["label"], self.items)
        real = jnp.repeat(batch["mask"], self.items)
        sums, counts = {}, {}
        for group, name in GROUPS.items():
            weight = (real & (groups == group)).astype(jnp.float32)
            for prompt, iou in ious.items():
                sums[f"miou_{name}_{prompt}"] = jnp.sum(weight * iou)
                counts[f"miou_{name}_{prompt}"] = jnp.sum(weight)
        return {**sums, METRIC_COUNTS: counts}

    def eval_logits(self, params, images):
        raise NotImplementedError("SAM predicts masks, not classes: its evaluation is eval_sums' mIoU")
