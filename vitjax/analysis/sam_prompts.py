"""What a SAM run answers to prompts: on test canvases of the seen and of the unseen classes, one item each,
the simulated user's first point and later clicks, or the item's box, and the mask SAM would show after
each evaluated click count and for the box, drawn over the canvas with the item's visible mask outlined.

    vitjax analyze --workdir runs/sam_init/sam_mae_s0 --checkpoint runs/sam_init/sam_mae_s0/checkpoint_best \\
        --beside runs/sam_init/sam_vit_s0/checkpoint_best runs/sam_init/sam_random_s0/checkpoint_best

writes sam_prompts.png and sam_prompts.json (each panel's prompt and IoU) into the run's analysis/.

The prompts are the evaluation's (vitjax/segment/interactive.py, the run's `sam.eval_clicks`), drawn from
PROMPT_SEED: every model drawn gets the same first point and the same box, and each later click follows that
model's own errors, as a user's would. Canvas i shows its item i mod items, so rows hold first-drawn (most
covered) and last-drawn items alike rather than the easiest. A handful of items illustrate; the run's test
mIoU (500 canvases a group in the study) is the measurement.
"""
import numpy as np

from vitjax.data import canvases

PROMPT_SEED = 0
BOX = "box"


def prompt_names(clicks) -> list[str]:
    """The panels of one model: '<k>click' for each evaluated click count, then the box."""
    return [f"{k}click" for k in clicks] + [BOX]


def pick_rows(groups: np.ndarray, per_group: int) -> np.ndarray:
    """Indices of the first `per_group` canvases of the seen group, then of the unseen group."""
    groups = np.asarray(groups)
    return np.concatenate([np.flatnonzero(groups == group)[:per_group] for group in (canvases.SEEN, canvases.UNSEEN)])


def answers(model, params, images: np.ndarray, num_items: int, clicks, seed: int = PROMPT_SEED) -> dict:
    """One item per packed canvas (`images` [n, S, S, 3], canvas i's item i mod `num_items`): {'targets'
    bool [n, S, S], 'classes' [n], and per prompt name {'mask' bool [n, S, S], 'iou' [n], 'points'
    [n, k, 2] and 'labels' [n, k] (None for the box), 'box' [n, 4] (None for clicks)}}."""
    import jax
    import jax.numpy as jnp

    from vitjax.models.sam_prompt_encoder import CONSTANTS
    from vitjax.objectives import sam as sam_objective
    from vitjax.segment import interactive
    from vitjax.segment.mask_losses import mask_iou

    clicks = tuple(int(k) for k in clicks)
    chosen = np.arange(len(images)) % num_items

    def run(params, images):
        variables = {"params": params, CONSTANTS: sam_objective.fourier_constants(model)}
        inputs, masks = sam_objective.unpack(images, num_items, model.image_size)
        targets = masks.reshape(len(images), num_items, *masks.shape[1:])[jnp.arange(len(images)), chosen]
        embeddings = model.apply(variables, inputs, method="embed_image")

        def decode(points, labels, boxes, mask_input, multimask):
            return model.apply(variables, embeddings, points, labels, boxes, mask_input,
                               multimask_output=multimask, method="predict_masks")

        key = jax.random.key(seed)  # as click_ious: one key for the clicked session and for the box
        rounds = interactive.simulate(decode, targets, key, first="point", clicks=max(clicks) - 1)
        box_round, = interactive.simulate(decode, targets, key, first="box")
        found = {}
        for name, prediction in [*((f"{k}click", rounds[k - 1]) for k in clicks), (BOX, box_round)]:
            shown = prediction.shown()[0] > 0
            found[name] = {"mask": shown, "iou": mask_iou(shown, targets), "points": prediction.points,
                           "labels": prediction.labels, "box": prediction.boxes}
        return targets, found

    targets, found = jax.jit(run)(params, jnp.asarray(images, jnp.float32))
    classes = np.asarray(images)[..., canvases.ITEM_CLASSES]
    item_ids = np.asarray(images)[..., canvases.ITEM_IDS]
    # An item's class + 1 sits on its pixels; -1 for an item no pixel of which is left visible.
    target_class = [int(round(np.max(classes[i][np.round(item_ids[i]) == chosen[i] + 1], initial=0))) - 1
                    for i in range(len(images))]
    host = lambda x: None if x is None else np.asarray(x)  # noqa: E731
    return {"targets": np.asarray(targets), "classes": np.array(target_class),
            "prompts": {name: {key: host(value) for key, value in part.items()} for name, part in found.items()}}


def panel_record(answer: dict, prompt: str, row: int) -> dict:
    """One panel's prompt and IoU, for the JSON: clicks as [x, y, label] (padding clicks, label -1, left out)."""
    part = answer["prompts"][prompt]
    record = {"iou": round(float(part["iou"][row]), 6)}
    if part["points"] is not None:
        record["clicks"] = [[float(x), float(y), int(label)] for (x, y), label in
                            zip(part["points"][row], part["labels"][row]) if label >= 0]
    if part["box"] is not None:
        record["box"] = [float(v) for v in part["box"][row]]
    return record


def section(variants, images: np.ndarray, groups: np.ndarray, num_items: int, clicks, out: str, *,
            per_group: int = 4, class_names=None) -> tuple[list[str], dict]:
    """sam_prompts.png / .json for every model of `variants` (analysis.run.Variant, each a SAM's params;
    `model` set on each) on the first `per_group` seen and unseen test canvases; returns (paths, numbers:
    each model's mean IoU per prompt over the drawn items)."""
    import json
    import os

    from vitjax import rundir
    from vitjax.analysis import figures

    if len({v.label for v in variants}) < len(variants):
        raise ValueError(f"two models drawn under one label: {[v.label for v in variants]}")
    rows = pick_rows(groups, per_group)
    shown = np.asarray(images)[rows]
    made = {v.name: answers(v.model, v.params, shown, num_items, clicks) for v in variants}
    first = made[variants[0].name]
    names = prompt_names(clicks)
    labels = [_row_label(groups[r], first["classes"][i], class_names) for i, r in enumerate(rows)]
    path = os.path.join(out, "sam_prompts.png")
    figures.sam_prompts(shown[..., canvases.PIXELS], first["targets"],
                        {v.label: made[v.name]["prompts"] for v in variants}, names, labels, path,
                        title=f"SAM's shown mask per prompt (filled) against the item's visible mask (outline); "
                              f"{per_group} seen and {per_group} unseen test canvases, prompts from seed {PROMPT_SEED}")
    numbers = {v.name: {name: round(float(np.mean(made[v.name]["prompts"][name]["iou"])), 4) for name in names}
               for v in variants}
    numbers["note"] = (f"mean IoU over the {len(rows)} items drawn (illustration only; the run's test mIoU is "
                       f"the measurement)")
    record = {"canvases": rows.tolist(), "rows": labels, "prompt_seed": PROMPT_SEED,
              "panels": {v.name: {name: [panel_record(made[v.name], name, i) for i in range(len(rows))]
                                  for name in names} for v in variants},
              "labels": {v.name: v.label for v in variants}}
    json_path = os.path.join(out, "sam_prompts.json")
    if rundir.is_writer():
        with open(json_path, "w") as f:
            json.dump(record, f, indent=1)
    return [path, json_path], numbers


def _row_label(group: int, item_class: int, class_names) -> str:
    if item_class < 0:
        name = "item hidden"
    else:
        name = class_names[item_class] if class_names and item_class < len(class_names) else f"class {item_class}"
    return f"{'seen' if group == canvases.SEEN else 'unseen'}: {name}"
