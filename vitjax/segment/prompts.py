"""A SAM prompt checked and put in the model's frame, in numpy, before anything is traced or compiled.

    prompt = prompts.check(point_coords, point_labels, box, mask_input, image_size=(h, w), mask_size=256)
    prompt = prompts.scaled(prompt, original_size=(h, w), input_size=(rh, rw))   # to the resized image's pixels

A prompt is any of: points (x, y) in the image's pixels with labels (1 foreground, 0 background), a box
(x0, y0, x1, y1), and a mask prompt (the [1, m, m] low-resolution logits of an earlier answer). One prompt
is given without a batch axis (points [N, 2], labels [N], box [4], mask [1, m, m]); B prompts answered
together with one ([B, N, 2], [B, N], [B, 4], [B, 1, m, m]). Every problem is a ValueError naming it and
the fix: a wrong shape, a label other than 0 or 1, a point outside the image, an empty or inverted box, a
value that is not finite, parts of one batch that disagree on its size.
"""
import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Prompt:
    """Checked prompt parts, each with a batch axis (None where not given); `batched` False when the caller
    gave one prompt without a batch axis, so that the answer drops it again."""
    points: np.ndarray | None  # [B, N, 2] float32, (x, y)
    labels: np.ndarray | None  # [B, N] int32, 0 or 1
    boxes: np.ndarray | None  # [B, 4] float32, (x0, y0, x1, y1)
    mask_input: np.ndarray | None  # [B, 1, m, m] float32 logits
    batched: bool


def _array(value, name: str, dtype=np.float32) -> np.ndarray:
    try:
        array = np.asarray(value)
    except Exception as error:  # ragged lists and the like
        raise ValueError(f"{name} must be an array of numbers; {error}") from None
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold numbers; got dtype {array.dtype}")
    if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
        raise ValueError(f"{name} holds NaN or infinite values at {np.argwhere(~np.isfinite(array))[:4].tolist()}; "
                         f"give finite numbers")
    return array.astype(dtype)


def _points(point_coords, point_labels, height: int, width: int):
    """(points [B, N, 2], labels [B, N], batched) from the caller's arrays; ValueError for any problem."""
    if point_labels is None:
        raise ValueError("point_coords were given without point_labels; give one label per point (1 foreground, "
                         "0 background)")
    points = _array(point_coords, "point_coords")
    if points.ndim not in (2, 3) or points.shape[-1] != 2 or points.shape[-2] == 0:
        raise ValueError(f"point_coords must be [N, 2] (x, y) pixels for one prompt, or [B, N, 2] for B prompts, "
                         f"with N >= 1; got shape {points.shape}")
    labels = np.asarray(point_labels)
    if labels.shape != points.shape[:-1]:
        raise ValueError(f"point_labels must hold one label per point, shape {points.shape[:-1]} for point_coords "
                         f"of shape {points.shape}; got shape {labels.shape}")
    if labels.dtype.kind not in "biuf" or not np.all((labels == 0) | (labels == 1)):
        wrong = sorted({str(v) for v in np.asarray(labels).reshape(-1).tolist() if v not in (0, 1)})[:6]
        raise ValueError(f"point_labels must be 1 (foreground) or 0 (background); got {', '.join(wrong)}. Drop "
                         f"points you do not want rather than marking them")
    batched = points.ndim == 3
    points, labels = (points, labels) if batched else (points[None], labels[None])
    outside = (points[..., 0] < 0) | (points[..., 0] >= width) | (points[..., 1] < 0) | (points[..., 1] >= height)
    if outside.any():
        prompt, point = np.argwhere(outside)[0]
        x, y = points[prompt, point]
        where = f"point {point} of prompt {prompt}" if batched else f"point {point}"
        raise ValueError(f"{where}, (x={x:g}, y={y:g}), lies outside the {width}x{height} image: x must be in "
                         f"[0, {width}) and y in [0, {height}). Points are (x, y) pixel coordinates of the image "
                         f"given to set_image, x along its width")
    return points, labels.astype(np.int32), batched


def _boxes(box, height: int, width: int):
    """(boxes [B, 4], batched); ValueError for a wrong shape, an empty or inverted box, or one outside."""
    boxes = _array(box, "box")
    if boxes.ndim not in (1, 2) or boxes.shape[-1] != 4:
        raise ValueError(f"box must be [4] (x0, y0, x1, y1) pixels for one prompt, or [B, 4] for B prompts; got "
                         f"shape {boxes.shape}")
    batched = boxes.ndim == 2
    boxes = boxes if batched else boxes[None]
    for i, (x0, y0, x1, y1) in enumerate(boxes):
        name = f"box {i}" if batched else "the box"
        if x0 > x1 or y0 > y1:
            raise ValueError(f"{name} ({x0:g}, {y0:g}, {x1:g}, {y1:g}) is inverted: boxes are (x0, y0, x1, y1) "
                             f"with the top-left corner first, x0 <= x1 and y0 <= y1")
        if x0 == x1 or y0 == y1:
            raise ValueError(f"{name} ({x0:g}, {y0:g}, {x1:g}, {y1:g}) is empty (zero width or height); give a box "
                             f"that encloses the object, or a point prompt instead")
        if x0 < 0 or y0 < 0 or x1 > width or y1 > height:
            raise ValueError(f"{name} ({x0:g}, {y0:g}, {x1:g}, {y1:g}) reaches outside the {width}x{height} image: "
                             f"0 <= x0 < x1 <= {width} and 0 <= y0 < y1 <= {height}; clip it to the image")
    return boxes, batched


def _masks(mask_input, mask_size: int):
    """(masks [B, 1, m, m], batched); ValueError for another shape."""
    masks = _array(mask_input, "mask_input")
    one, many = (1, mask_size, mask_size), (mask_size, mask_size)
    if masks.shape[-3:] != one or masks.ndim not in (3, 4):
        raise ValueError(f"mask_input must be [1, {mask_size}, {mask_size}] low-resolution logits for one prompt "
                         f"(an earlier answer's low_res_logits, one of its masks: logits[i:i+1]), or "
                         f"[B, 1, {mask_size}, {mask_size}] for B prompts; got shape {masks.shape}"
                         + (". Add the axis: mask[None]" if masks.shape == many else ""))
    batched = masks.ndim == 4
    return (masks if batched else masks[None]), batched


def check(point_coords=None, point_labels=None, box=None, mask_input=None, *, image_size: tuple[int, int],
          mask_size: int) -> Prompt:
    """The caller's prompt checked against the image's (height, width) and the model's mask prompt size."""
    height, width = image_size
    if point_coords is None and point_labels is not None:
        raise ValueError("point_labels were given without point_coords; give the points' (x, y) pixels too")
    parts, batch_flags = {}, {}
    if point_coords is not None:
        points, labels, batch_flags["point_coords"] = _points(point_coords, point_labels, height, width)
        parts.update(points=points, labels=labels)
    if box is not None:
        parts["boxes"], batch_flags["box"] = _boxes(box, height, width)
    if mask_input is not None:
        parts["mask_input"], batch_flags["mask_input"] = _masks(mask_input, mask_size)
    if not parts:
        raise ValueError("no prompt: give point_coords with point_labels, a box, a mask_input, or several of them")
    if len(set(batch_flags.values())) > 1:
        raise ValueError(f"prompt parts disagree on the batch axis: {sorted(k for k, b in batch_flags.items() if b)} "
                         f"have one, {sorted(k for k, b in batch_flags.items() if not b)} do not; give all of one "
                         f"prompt without it, or all of B prompts with it")
    sizes = {name: len(value) for name, value in parts.items() if name != "labels"}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"prompt parts disagree on the number of prompts: {sizes}; give each part for every prompt "
                         f"of the batch")
    return Prompt(parts.get("points"), parts.get("labels"), parts.get("boxes"), parts.get("mask_input"),
                  batched=next(iter(batch_flags.values())))


def scaled(prompt: Prompt, original_size: tuple[int, int], input_size: tuple[int, int]) -> Prompt:
    """The prompt's coordinates moved from the original image's pixels to the resized image's (`input_size`,
    what the encoder saw before padding): x by input width / original width, y likewise, as the reference's
    ResizeLongestSide.apply_coords."""
    factor = np.asarray([input_size[1] / original_size[1], input_size[0] / original_size[0]], np.float64)
    points = None if prompt.points is None else (prompt.points * factor).astype(np.float32)
    boxes = None if prompt.boxes is None else (prompt.boxes.reshape(-1, 2, 2) * factor).reshape(-1, 4)
    boxes = None if boxes is None else boxes.astype(np.float32)
    return dataclasses.replace(prompt, points=points, boxes=boxes)
