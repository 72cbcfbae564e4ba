"""Batch-level Mixup (Zhang et al. 2018) and CutMix (Yun et al. 2019), switching per batch as in DeiT.

Each step draws, from (seed, step) alone so that a resumed run mixes exactly as an uninterrupted one:
whether the batch is mixed (data.mixup_prob), then CutMix or Mixup (CutMix with data.mixup_switch_prob
when both alphas are on), lambda ~ Beta(alpha, alpha) of the chosen kind, and for CutMix the box. Every
image is mixed with its neighbour in the batch (the batch rolled by one): the batch order is a random
permutation already, so neighbours are random pairs. With several processes each mixes within its own
share, so the global batch depends on the process count (the draws do not).

Targets are mixed with the weight each image actually contributes: for CutMix, 1 - the box's area
fraction after clipping at the border (timm's correct_lam), so the label matches the pixels exactly.
Label smoothing stays in the loss (vitjax/train/step.py), applied to these mixed targets.
"""

import dataclasses

import numpy as np

_MIXUP_TAG = 13  # lambda's stream: Mixup alone draws the same lambdas as before CutMix existed
_SWITCH_TAG = 23  # whether to mix, which kind, and CutMix's box centre


@dataclasses.dataclass(frozen=True)
class Mix:
    """One step's mixing: kind 'none', 'mixup' or 'cutmix'; lam the weight of each image's own target;
    box (top, bottom, left, right) the pixels CutMix pastes from the neighbour (None otherwise)."""

    kind: str
    lam: float = 1.0
    box: tuple | None = None


def draw(cfg, seed, step, height, width):
    """The Mix of `step` for images of height x width, from the data config's mixing keys."""
    decide = np.random.default_rng([_SWITCH_TAG, seed, step])
    mixed, switch, centre = decide.random(), decide.random(), decide.random(2)
    mixup_on, cutmix_on = cfg.mixup_alpha > 0, cfg.cutmix_alpha > 0
    if not (mixup_on or cutmix_on) or mixed >= cfg.mixup_prob:
        return Mix("none")
    use_cutmix = cutmix_on and (not mixup_on or switch < cfg.mixup_switch_prob)
    alpha = cfg.cutmix_alpha if use_cutmix else cfg.mixup_alpha
    lam = float(np.random.default_rng([_MIXUP_TAG, seed, step]).beta(alpha, alpha))
    if not use_cutmix:
        return Mix("mixup", lam)
    box = cutmix_box(lam, centre, height, width)
    top, bottom, left, right = box
    return Mix("cutmix", 1 - (bottom - top) * (right - left) / (height * width), box)


def cutmix_box(lam, centre, height, width):
    """(top, bottom, left, right): a box of sides sqrt(1 - lam) of the image's, rounded to pixels, centred
    at the uniform `centre` (two numbers in [0, 1)) of the image, clipped at its border."""
    side = np.sqrt(1 - lam)
    box_h, box_w = int(round(height * side)), int(round(width * side))
    cy, cx = int(centre[0] * height), int(centre[1] * width)
    top, left = max(cy - box_h // 2, 0), max(cx - box_w // 2, 0)
    return top, min(cy - box_h // 2 + box_h, height), left, min(cx - box_w // 2 + box_w, width)


def apply(images, targets, mix):
    """(images, targets) of one batch mixed as `mix` says; mixed targets still sum to 1 per row."""
    if mix.kind == "none":
        return images, targets
    lam = np.float32(mix.lam)
    partner = lambda x: np.roll(x, 1, axis=0)
    targets = lam * targets + (1 - lam) * partner(targets)
    if mix.kind == "mixup":
        return lam * images + (1 - lam) * partner(images), targets
    top, bottom, left, right = mix.box
    images = images.copy()
    images[:, top:bottom, left:right] = partner(images)[:, top:bottom, left:right]
    return images, targets
