"""SAM's interactive simulation (Kirillov et al. 2023, appendix A), for training and for evaluation: a
first prompt (a point inside the target, or its box), then rounds that each add a point drawn from the
error region of the previous prediction (vitjax/segment/clicks.py), the previous low-resolution logits fed
back as the mask prompt. When a round answers with several masks (a single point is ambiguous), the one
with the highest predicted IoU is fed back and clicked against, as SAM does.

    rounds = simulate(decode, targets, key, first="point", clicks=4)      # 5 predictions
    ious = click_ious(decode, targets, key, clicks=(1, 3, 5))            # {'1click': [n], ..., 'box': [n]}

`decode(points, labels, boxes, mask_input, multimask)` is the model's prompt side on the targets' images
(vitjax/objectives/sam.py builds it): (low-resolution logits [n, masks, m, m], IoU predictions [n, masks]).
`targets` bool [n, H, W]; logits are compared with them after a bilinear resize to H x W (none when m = H).
Every draw comes from `key`, so a simulation repeats exactly.

The evaluation (`click_ious`): the IoU with the target, after k clicks, of the mask the model would show a
user (the highest predicted IoU among its answers; logits > 0), the first click a point drawn as in
training and each next one from the error region; and of the answer to the target's exact bounding box
alone. Its means over targets are the mIoU after 1, 3 and 5 clicks and for a box.
"""
import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp

from vitjax.segment import clicks as click_lib
from vitjax.segment.mask_losses import mask_iou


@dataclasses.dataclass(frozen=True)
class Prediction:
    """One round's answer: logits at the targets' size [n, masks, H, W], low-resolution logits
    [n, masks, m, m] and IoU predictions [n, masks]; and the prompt it answered: every point so far
    [n, k, 2] with its labels [n, k], or the box [n, 4] (None where the round had none)."""
    logits: jax.Array
    low_res: jax.Array
    iou: jax.Array
    points: jax.Array | None = None
    labels: jax.Array | None = None
    boxes: jax.Array | None = None

    def best(self) -> jax.Array:
        """[n]: the index of the answer with the highest predicted IoU."""
        return jnp.argmax(self.iou, axis=1)

    def shown(self):
        """(logits [n, H, W], low-res logits [n, m, m]) of the answer with the highest predicted IoU."""
        index = self.best()[:, None, None, None]
        pick = lambda x: jnp.take_along_axis(x, index, axis=1)[:, 0]  # noqa: E731
        return pick(self.logits), pick(self.low_res)


def _at_size(low_res, size: tuple[int, int]):
    if low_res.shape[-2:] == tuple(size):
        return low_res
    return jax.image.resize(low_res, (*low_res.shape[:2], *size), "bilinear", antialias=False)


def first_prompt(key, targets, first: str, box_noise: float = 0.0):
    """(points, labels, boxes) of the first round: a point inside each target, or its bounding box
    (moved by `box_noise` x its side, clicks.noisy_box); the parts not given are None."""
    if first == "point":
        points, labels = click_lib.first_point(key, targets)
        return points, labels, None
    if first != "box":
        raise ValueError(f"first={first!r}: the first prompt is a 'point' or a 'box'")
    boxes = click_lib.bounding_box(targets)
    if box_noise:
        boxes = click_lib.noisy_box(key, boxes, targets.shape[1:], box_noise)
    return None, None, boxes


def simulate(decode: Callable, targets, key, *, first: str = "point", clicks: int = 0, box_noise: float = 0.0,
             multimask_first: bool = True) -> list[Prediction]:
    """The 1 + `clicks` predictions of one interactive session per target (module docstring). The first
    round answers with several masks when `first` is a point and `multimask_first`, every other with one;
    the logits fed back carry no gradient (each round learns from its own prompt)."""
    first_key, *click_keys = jax.random.split(key, clicks + 1)
    points, labels, boxes = first_prompt(first_key, targets, first, box_noise)
    mask_input, rounds = None, []
    for round_index in range(clicks + 1):
        multimask = multimask_first and first == "point" and round_index == 0
        low_res, iou = decode(points, labels, boxes, mask_input, multimask)
        rounds.append(Prediction(_at_size(low_res, targets.shape[1:]), low_res, iou, points, labels, boxes))
        if round_index == clicks:
            break
        logits, low = rounds[-1].shown()
        mask_input = jax.lax.stop_gradient(low)[:, None]
        point, label = click_lib.error_click(click_keys[round_index], jax.lax.stop_gradient(logits) > 0, targets)
        points = point if points is None else jnp.concatenate([points, point], axis=1)
        labels = label if labels is None else jnp.concatenate([labels, label], axis=1)
    return rounds


def click_ious(decode: Callable, targets, key, clicks=(1, 3, 5)) -> dict:
    """{'<k>click': IoU [n] after k clicks for each k of `clicks`, 'box': IoU [n] of the box's answer}."""
    rounds = simulate(decode, targets, key, first="point", clicks=max(clicks) - 1)
    found = {f"{k}click": mask_iou(rounds[k - 1].shown()[0] > 0, targets) for k in clicks}
    box_round, = simulate(decode, targets, key, first="box")
    found["box"] = mask_iou(box_round.shown()[0] > 0, targets)
    return found
