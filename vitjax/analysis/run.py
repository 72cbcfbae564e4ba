"""`vitjax analyze`: figures that look inside a trained ViT (ViT paper Fig. 7), and the tables behind them.

    vitjax analyze --workdir DIR [--checkpoint PATH] [--out FIGDIR] [--num_images 64] [--no_init_control]
                   [--beside OTHER_DIR ...]

Writes into FIGDIR (default DIR/analysis), each figure beside its data:
    posemb_similarity.png / .csv    cosine similarity of learned position embeddings, patch by patch
    attention_distance.png / .csv   mean attention distance (pixels) of every head against depth
    attention_maps.png / .json      attention rollout and last-layer CLS attention, over test images
    cls_segmentation.png / .json    whether each head's CLS attention finds the object: Jaccard index of
                                    the patches holding 60% of it with the object's patches, against
                                    the same masks placed at random (vitjax/analysis/segmentation.py)
    filter_pca.png / .json          principal components of the first-layer (patch-embedding) filters,
                                    and their variance spectrum against random Gaussian filters
    mae_reconstructions.png / .json an MAE run's reconstructions of test images: original, masked input,
                                    prediction, and prediction with the visible patches pasted back
                                    (vitjax/analysis/reconstruction.py)
    sam_prompts.png / .json         SAM runs only (the figures above are skipped): the mask shown after
                                    each evaluated click count and for the box, prompts drawn, on seen and
                                    unseen test canvases (vitjax/analysis/sam_prompts.py)
    summary.json                    what was written, what was skipped and why, the settings, and
                                    'numbers': each figure's read-out for every model analysed

The initialised control: unless --no_init_control, the same architecture at its initialisation (the
trainer's, from the config's seed; see control.py) is analysed too, beside the trained model in every
figure and as rows with model=init in every table (model=trained for the checkpoint). Without that
control a figure of a briefly trained ViT cannot be told from one of an untrained ViT.

Figures that do not apply to a model (learned-posemb similarity for a sin-cos ViT, anything about
attention for BiT) are skipped with a message; the rest are still produced. CLS handling: the
distance and the CLS maps drop the CLS token from queries and keys and renormalise each row over the
patches (see vitjax/analysis/attention.py).

Heavy modules (jax, flax, matplotlib, the data pipeline) are imported on use, so that adding this
command's arguments to the CLI parser costs nothing.
"""
import csv
import json
import os
import sys
from typing import NamedTuple

import numpy as np

from vitjax.analysis import control, filters as filters_lib, posemb as posemb_lib, reconstruction
from vitjax.analysis.control import INIT, TRAINED
from vitjax.analysis.posemb import NotApplicable

NUM_SHOW = 8  # images drawn in the attention-map figure; all `num_images` enter the distance
BESIDE = "beside"  # the `model` column of a run drawn beside the analysed one (--beside)
FIRST_K = (1, 4, 8)  # the summary's "variance in the first k principal components"
RANDOM_DRAWS, RANDOM_SEED = 20, 0  # random Gaussian kernels behind the filter spectrum's noise band


# --- Tables -------------------------------------------------------------------------------------

def _writes() -> bool:
    """Whether this process writes the outputs: on several processes (`vitjax analyze` with train's
    multi-process flags, on a pod) every one computes the same analyses and process 0 alone writes."""
    from vitjax import rundir
    return rundir.is_writer()


def _write_csv(path: str, rows: list[dict]) -> str:
    if not _writes():
        return path
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _write_json(path: str, payload: dict) -> str:
    if not _writes():
        return path
    with open(path, "w") as f:
        json.dump(payload, f, indent=1)
    return path


def _rounded(array, digits=6):
    return np.round(np.asarray(array, np.float64), digits).tolist()


# --- One section a figure ----------------------------------------------------------------------

def _vit_only(model, what: str) -> None:
    from vitjax.models import MAE, BiT, ViT
    if isinstance(model, MAE):
        raise NotApplicable(f"{what} is written for the ViT classifier; an MAE's encoder sees a random subset "
                            f"of the patches and has a fixed sin-cos table: analyse its encoder as a ViT "
                            f"fine-tuned from this run (init_from)")
    if isinstance(model, BiT):
        raise NotApplicable(f"{type(model).__name__} is a ResNet with no attention layers and no position "
                            f"embeddings, so {what} does not apply")
    if not isinstance(model, ViT):
        raise NotApplicable(f"{what} is written for the ViT (global attention over patches, a position "
                            f"embedding); {type(model).__name__} has neither, so it is not made")


def _grid(model, image_shape) -> tuple[tuple[int, int], int]:
    """((rows, cols) of the patch grid, patch size in input pixels; the hybrid's counts pixels too)."""
    _, patch = model.dims()
    return (image_shape[0] // patch, image_shape[1] // patch), patch


class Variant(NamedTuple):
    """One model analysed: `name` fills the tables' `model` column, `label` titles its figure panels;
    `model` is its module when it is not the analysed run's (a run drawn beside it, `--beside`)."""
    name: str
    label: str
    params: dict
    model: object = None


def posemb_section(model, variants, image_shape, out) -> tuple[list[str], dict]:
    _vit_only(model, "the position-embedding similarity")
    if model.posemb != "learned":
        kind = "no position embedding" if model.posemb == "none" else "a fixed sin-cos table, similar by construction"
        raise NotApplicable(f"the model has posemb={model.posemb!r} ({kind}), not a learned position embedding, "
                            f"so there is no learned similarity pattern to show")
    grid, _ = _grid(model, image_shape)
    prefix = 1 if model.pool == "tok" else 0
    similarity = {v.name: posemb_lib.similarity_grid(v.params, grid, num_prefix=prefix) for v in variants}
    from vitjax.analysis import figures
    rows = [dict(model=v.name, **row) for v in variants for row in posemb_lib.similarity_rows(similarity[v.name])]
    files = [figures.posemb_similarity({v.label: similarity[v.name] for v in variants},
                                       os.path.join(out, "posemb_similarity.png")),
             _write_csv(os.path.join(out, "posemb_similarity.csv"), rows)]
    numbers = {v.name: posemb_lib.neighbour_similarity(similarity[v.name]) for v in variants}
    numbers["note"] = ("mean cosine similarity between distinct patches: 4-neighbours, same row or column "
                       "but not adjacent, neither")
    return files, numbers


def filters_section(model, variants, out) -> tuple[list[str], dict]:
    """The PCA of each model's first-layer filters, and the noise baseline: random Gaussian kernels."""
    kernels = {}
    for v in variants:
        kernels[v.name], description = filters_lib.first_layer_kernel(model, v.params)
    pca = {name: filters_lib.principal_components(kernel) for name, kernel in kernels.items()}
    shape = kernels[TRAINED].shape
    random = filters_lib.random_spectra(shape, draws=RANDOM_DRAWS, seed=RANDOM_SEED)
    first = {name: filters_lib.variance_in_first(p["spectrum"], FIRST_K) for name, p in pca.items()}
    random_first = np.array([filters_lib.variance_in_first(spectrum, FIRST_K) for spectrum in random])
    numbers = {"k": list(FIRST_K), **first, "random_mean": _rounded(random_first.mean(axis=0)),
               "random_min": _rounded(random_first.min(axis=0)), "random_max": _rounded(random_first.max(axis=0)),
               "random_draws": RANDOM_DRAWS, "random_seed": RANDOM_SEED}
    from vitjax.analysis import figures
    png = figures.filter_components(
        {v.label: (pca[v.name]["components"], pca[v.name]["explained_variance_ratio"]) for v in variants},
        {v.label: pca[v.name]["spectrum"] for v in variants}, random,
        os.path.join(out, "filter_pca.png"), title=description)
    table = _write_json(os.path.join(out, "filter_pca.json"), {
        "description": description, "kernel_shape": list(shape),
        "variance_in_first_k": numbers,
        "models": [{"model": v.name, "explained_variance_ratio": _rounded(pca[v.name]["explained_variance_ratio"]),
                    "spectrum": _rounded(pca[v.name]["spectrum"]), "components": _rounded(pca[v.name]["components"])}
                   for v in variants],
        "random_gaussian": {"draws": RANDOM_DRAWS, "seed": RANDOM_SEED, "spectrum_mean": _rounded(random.mean(axis=0)),
                            "spectrum_min": _rounded(random.min(axis=0)), "spectrum_max": _rounded(random.max(axis=0))},
    })
    return [png, table], numbers


def _distance_files(model_stats, variants, grid, patch, uniform, out) -> list[str]:
    from vitjax.analysis import figures
    count = model_stats[TRAINED]["num_images"]
    title = f"Mean attention distance ({count} images, {grid[0]}x{grid[1]} patches of {patch}px)"
    layers, heads = model_stats[TRAINED]["distance"].shape
    rows = [dict(model=v.name, layer=layer + 1, head=head + 1,
                 mean_distance_px=round(float(model_stats[v.name]["distance"][layer, head]), 4))
            for v in variants for layer in range(layers) for head in range(heads)]
    return [figures.attention_distance({v.label: model_stats[v.name]["distance"] for v in variants},
                                       os.path.join(out, "attention_distance.png"), uniform_distance=uniform, title=title),
            _write_csv(os.path.join(out, "attention_distance.csv"), rows)]


def _map_files(model_stats, variants, images, grid, patch, out) -> list[str]:
    from vitjax.analysis import attention, figures

    def pixels(maps):
        return None if maps is None else attention.to_pixels(maps, patch)
    shown = images[:len(model_stats[TRAINED]["rollout"])]
    cls = {v.name: None if model_stats[v.name]["cls"] is None else model_stats[v.name]["cls"][:len(shown)]
           for v in variants}
    drawn = {v.label: (pixels(model_stats[v.name]["rollout"]), pixels(cls[v.name])) for v in variants}
    return [
        figures.attention_maps(shown, drawn, os.path.join(out, "attention_maps.png")),
        _write_json(os.path.join(out, "attention_maps.json"), {
            "grid": list(grid), "patch_size": patch, "num_images": len(shown),
            "note": "cls_attention: last layer, CLS query over patch keys (CLS key dropped, renormalised); "
                    "rollout: Abnar & Zuidema 2020, heads averaged, (A + I)/2 per layer, multiplied "
                    "through the layers; CLS row over patch keys (mean over patch rows without CLS)",
            "maps": [{"model": v.name, "rollout": _rounded(model_stats[v.name]["rollout"]),
                      "cls_attention": None if cls[v.name] is None else _rounded(cls[v.name])} for v in variants],
        }),
    ]


def _segmentation_files(model_stats, variants, images, grid, patch, out, num_show) -> tuple[list[str], dict]:
    """The CLS-attention segmentation read-out of every model (vitjax/analysis/segmentation.py): its
    figure, its table, and the summary numbers."""
    from vitjax.analysis import attention, figures, segmentation
    scores = {v.name: segmentation.score(model_stats[v.name]["cls"], images, grid, patch) for v in variants}
    shown = slice(0, min(num_show, 4))
    examples = {"images": images[shown],
                "objects": attention.to_pixels(segmentation.object_patches(images[shown], grid, patch), patch),
                "masks": {v.label: attention.to_pixels(segmentation.mass_masks(
                    model_stats[v.name]["cls"][shown, scores[v.name]["best_head"]]), patch) for v in variants}}
    title = (f"Does the last layer's CLS attention find the object? {len(images)} test images, the patches "
             f"holding {segmentation.MASS:.0%} of each head's attention")
    numbers = {v.name: {k: _rounded(value, 4) if isinstance(value, np.ndarray) else value
                        for k, value in scores[v.name].items()} for v in variants}
    numbers["note"] = (f"Jaccard index of each head's {segmentation.MASS:.0%}-mass CLS attention mask with the "
                       f"object's patches (more than half the pixels {segmentation.PIXEL_THRESHOLD:.0%} of the "
                       f"image's range above its darkest), mean over images; *_permuted: the same masks with "
                       f"their patches placed at random ({segmentation.PERMUTATIONS} draws); head indices from 0")
    files = [figures.cls_segmentation({v.label: scores[v.name] for v in variants}, examples,
                                      os.path.join(out, "cls_segmentation.png"), title=title),
             _write_json(os.path.join(out, "cls_segmentation.json"), numbers)]
    return files, numbers


def reconstruction_section(model, variants, images, out, *, num_show=NUM_SHOW, images_note=None):
    """An MAE's reconstructions of the first `num_show` images, each model's beside the others', under
    the same masks; the summary numbers are each model's masked-patch loss on them."""
    if not reconstruction.applies(model):
        raise NotApplicable(f"reconstructions are drawn for MAE runs; {type(model).__name__} reconstructs nothing")
    if images is None:
        raise NotApplicable(f"no test images: {images_note or 'none were given'}")
    made = {v.name: reconstruction.reconstruct(model, v.params, images[:num_show]) for v in variants}
    trained = made[TRAINED]
    panels = {"Original": trained["original"], "Masked input": trained["masked"]}
    for v in variants:
        panels[f"{v.name}: prediction"] = made[v.name]["prediction"]
        panels[f"{v.name}: + visible"] = made[v.name]["pasted"]
    from vitjax.analysis import figures
    numbers = {v.name: round(made[v.name]["loss"], 6) for v in variants}
    numbers["note"] = (f"masked-patch loss (norm_pix_loss={model.norm_pix_loss}) on the {len(trained['original'])} "
                       f"images drawn, masks from key {reconstruction.MASK_SEED}")
    files = [figures.mae_reconstructions(trained["original"], panels, os.path.join(out, "mae_reconstructions.png")),
             _write_json(os.path.join(out, "mae_reconstructions.json"), {
                 "mask_ratio": model.mask_ratio, "norm_pix_loss": model.norm_pix_loss,
                 "mask_seed": reconstruction.MASK_SEED, "masks": trained["mask"].astype(int).tolist(),
                 "loss": {v.name: made[v.name]["loss"] for v in variants},
                 "note": "norm_pix_loss predictions un-normalised with each original patch's mean and variance"})]
    return files, numbers


def attention_sections(model, variants, images, out, *, num_show=NUM_SHOW) -> tuple[dict, dict, dict]:
    """The attention figures from one pass over the images a model:
    ({name: paths}, settings for the summary, {name: summary numbers})."""
    from vitjax.analysis import attention
    grid, patch = _grid(model, images.shape[1:])
    for v in variants:
        if v.model is not None and _grid(v.model, images.shape[1:]) != (grid, patch):
            raise ValueError(f"{v.label} has patches of {_grid(v.model, images.shape[1:])[1]} px and this run "
                             f"{patch} px: attention maps compare on one patch grid only")
    model_stats = {v.name: attention.summarize(v.model or model, v.params, images, grid, patch, num_show=num_show)
                   for v in variants}
    uniform = float(attention.patch_distances(grid, patch).mean())  # a head attending everywhere equally
    files = {"attention_distance": _distance_files(model_stats, variants, grid, patch, uniform, out),
             "attention_maps": _map_files(model_stats, variants, images, grid, patch, out)}
    meta = {"grid": list(grid), "patch_size": patch, "num_images": model_stats[TRAINED]["num_images"],
            "uniform_attention_distance_px": uniform,
            "attention_distance_note": "per query patch, the attention-weighted mean pixel distance between "
                                       "patch centres, CLS dropped from queries and keys and rows "
                                       "renormalised; averaged over query patches and images"}
    distance = {v.name: _rounded(model_stats[v.name]["distance"].mean(axis=1), 4) for v in variants}
    distance.update(uniform=round(uniform, 4), note="mean attention distance (pixels) per layer, averaged over heads")
    numbers = {"attention_distance": distance}
    if model_stats[TRAINED]["cls"] is not None:
        files["cls_segmentation"], numbers["cls_segmentation"] = _segmentation_files(
            model_stats, variants, images, grid, patch, out, num_show)
    return files, meta, numbers


# --- Whole analyses -----------------------------------------------------------------------------

def analyze(model, params, images, out: str, *, label: str = "Trained", init_params=None,
            init_label: str = "Initialised", image_shape=None, images_note: str | None = None,
            num_show: int = NUM_SHOW, beside=()) -> dict:
    """Every analysis that applies to `model` with `params`, written into `out`.

    `label` titles the analysed model's panels. `init_params` (the same architecture at
    initialisation, see control.py) are analysed beside the trained ones in every figure and table;
    without them the figures show the trained model alone.
    `images` [n, H, W, C] (preprocessed as for evaluation) feed the attention figures; without them
    (None, or empty) those are skipped, with `images_note` as the reason. `image_shape` (H, W, C)
    sets the patch grid when no images are given. `beside`: Variants of other runs (their own `model`,
    the same patch grid) added to the attention figures and tables only.
    Returns {'out', 'written': {name: [paths]}, 'skipped': {name: reason}, 'meta': {...},
    'numbers': {name: the summary numbers, per model}}.
    """
    variants = [Variant(TRAINED, label, _host(params))]
    if init_params is not None:
        variants.append(Variant(INIT, init_label, _host(init_params)))
    if _writes():
        os.makedirs(out, exist_ok=True)
    have_images = images is not None and len(images) > 0
    if have_images:
        images = np.asarray(images, np.float32)
        image_shape = images.shape[1:]
    written, skipped, numbers = {}, {}, {}
    meta = {"model": type(model).__name__, "models": [v.name for v in variants]}

    def attempt(name, section):
        try:
            written[name], numbers[name] = section()
        except NotApplicable as reason:
            skipped[name] = str(reason)

    if image_shape is None:
        skipped["posemb_similarity"] = "no images and no image shape given, so the patch grid is unknown"
    else:
        attempt("posemb_similarity", lambda: posemb_section(model, variants, image_shape, out))
    attempt("filter_pca", lambda: filters_section(model, variants, out))
    if reconstruction.applies(model):  # a figure of one family: not listed as skipped for the others
        attempt("mae_reconstructions", lambda: reconstruction_section(
            model, variants, images if have_images else None, out, num_show=num_show, images_note=images_note))

    attention_names = ("attention_distance", "attention_maps", "cls_segmentation")
    try:
        _vit_only(model, "attention analysis (distance, CLS maps, rollout)")
    except NotApplicable as reason:
        skipped.update({name: str(reason) for name in attention_names})
    else:
        if have_images:
            files, settings, attention_numbers = attention_sections(model, variants + list(beside), images, out,
                                                                    num_show=num_show)
            written.update(files)
            numbers.update(attention_numbers)
            meta.update(settings)
            if "cls_segmentation" not in files:
                skipped["cls_segmentation"] = "the model has no CLS token (pool is not 'tok'), so no CLS attention"
        else:
            reason = f"no test images: {images_note or 'none were given'}"
            skipped.update({name: reason for name in attention_names})

    return {"out": out, "written": written, "skipped": skipped, "meta": meta, "numbers": numbers}


def _host(params) -> dict:
    import flax.linen as nn
    import jax
    return jax.tree.map(np.asarray, nn.meta.unbox(params))


def model_from_config(config, params):
    """The run's model; the class count is read off the head kernel, so no dataset is needed (an MAE,
    which predicts pixels, a DINO network, which scores prototypes, and a SAM have no head and need none).

    Computation is float32 whatever the run's dtype: this is a handful of forward passes, and
    distances and maps should not carry bfloat16 rounding.
    """
    from vitjax import models
    num_classes = int(np.shape(params["head"]["kernel"])[-1]) if "head" in params else None
    model = models.build(config.model_name, num_classes or 1, dtype="float32", **config.model.to_dict())
    if num_classes is None and not isinstance(model, (models.MAE, models.DINO, models.SAM)):
        raise ValueError("the checkpoint has no 'head' parameters; cannot tell the number of classes")
    return model


def load_images(config, num_images: int) -> np.ndarray:
    """The first `num_images` test images of the run's dataset, preprocessed as for evaluation."""
    return load_examples(config, num_images)[0]


def load_examples(config, num_images: int) -> tuple[np.ndarray, np.ndarray]:
    """(the first `num_images` test images, preprocessed as for evaluation; their labels)."""
    from vitjax import data
    batch_size = max(1, min(num_images, 64))
    # 'test' is the data package's alias for config.data.test_split.
    batches = data.eval_batches(config.data, split="test", global_batch_size=batch_size,
                                process_index=0, process_count=1)
    images, labels, count = [], [], 0
    for batch in batches:
        real = np.asarray(batch["mask"], bool)  # padding rows are not data
        images.append(np.asarray(batch["image"])[real])
        labels.append(np.asarray(batch["label"])[real])
        count += int(real.sum())
        if count >= num_images:
            break
    return np.concatenate(images)[:num_images], np.concatenate(labels)[:num_images]


def _try_load_images(config, num_images):
    """(images or None, reason when None): attention figures need images, the others do not."""
    if num_images <= 0:
        return None, "--num_images is 0"
    try:
        return load_images(config, num_images), None
    except (ImportError, OSError, ValueError) as error:  # missing data package, files or split
        return None, f"could not load test images ({type(error).__name__}: {error})"


def analyze_workdir(workdir: str, checkpoint: str | None = None, out: str | None = None,
                    num_images: int = 64, init_control: bool = True, beside=()) -> dict:
    """Loads a run's config and newest (or the given) checkpoint and writes every analysis that applies,
    each beside the same analysis of the run's initial parameters unless `init_control` is False, and
    the attention analyses (a SAM run's answers to prompts) beside those of each run or checkpoint in
    `beside` (a run's newest checkpoint) when given."""
    from vitjax import rundir, storage
    from vitjax.checkpoints import locations, reader

    run_dir = locations.locate(workdir).run_dir  # a gs:// run is read as any other (vitjax/storage.py)
    if storage.is_remote(out or run_dir):
        raise ValueError(f"vitjax analyze writes its figures with local file APIs, and {out or run_dir} is a "
                         f"bucket URL; pass --out with a local directory (a gs:// --workdir is fine)")
    out = out or rundir.file_path(run_dir, rundir.ANALYSIS)
    blocked = storage.unwritable_ancestor(out)
    if blocked is not None:  # e.g. a finished run on a read-only disk: said before anything is computed
        raise ValueError(f"the figures go to {out}, and this user cannot write in {blocked}; pass --out with a "
                         f"directory you can write")
    config = rundir.load_config(run_dir)
    _refuse_dual_encoder(run_dir, config)
    params = reader.read_params(checkpoint or workdir)
    beside = [beside] if isinstance(beside, str) else list(beside or ())
    if config.get("objective") == "sam":
        result = _analyze_sam(run_dir, config, params, checkpoint, out, num_images, init_control, beside)
    else:
        model = model_from_config(config, params)
        images, note = _try_load_images(config, num_images)
        image_shape = images.shape[1:] if images is not None else _configured_image_shape(config)
        init_params, control_meta = (_init_control(config, model, params, image_shape) if init_control
                                     else (None, {"skipped": "--no_init_control"}))
        result = analyze(model, params, images, out, images_note=note, image_shape=image_shape,
                         label=_run_label(run_dir, config), init_params=init_params,
                         init_label=_init_label(config),
                         beside=[_beside_variant(path, image_shape, i) for i, path in enumerate(beside)])
        result["meta"]["init_control"] = control_meta
    result["meta"].update(workdir=run_dir, checkpoint=checkpoint, requested_images=num_images, beside=beside)
    _write_json(os.path.join(result["out"], "summary.json"), result)
    return result


def _refuse_dual_encoder(run_dir: str, config, flag: str = "") -> None:
    """A dual encoder has no classifier head and no figures here: said before its checkpoint is read."""
    if config.get("objective") == "contrastive":
        raise ValueError(f"{flag}{run_dir} is a dual encoder (objective 'contrastive'), and these figures are an "
                         f"image model's; score it with `vitjax eval --workdir {run_dir} --captions` (zero-shot "
                         f"and retrieval on its caption data)")


def _init_label(config) -> str:
    return f"Initialised (seed {control.seed_of(config)}, untrained)"


def _analyze_sam(run_dir, config, params, checkpoint, out, num_images, init_control, beside) -> dict:
    """A SAM run's analysis: its answers to prompts on test canvases (vitjax/analysis/sam_prompts.py),
    beside its initialisation and the `beside` SAM runs'; the ViT's figures do not apply."""
    from vitjax.analysis import sam_prompts
    from vitjax.data.captions import ITEMS

    model = model_from_config(config, params)
    per_group = max(1, min(num_images, NUM_SHOW) // 2)
    # Test canvases alternate seen and unseen (vitjax/data/canvases.py): 2 x per_group hold both groups.
    images, groups = load_examples(config, 2 * per_group)
    variants = [Variant(TRAINED, _checkpoint_label(run_dir, config, checkpoint), _host(params), model)]
    control_meta = {"skipped": "--no_init_control"}
    if init_control:
        seed = control.seed_of(config)
        variants.append(Variant(INIT, _init_label(config), control.initial_params(model, seed, images.shape[1:]),
                                model))
        control_meta = {"seed": seed, "how": "model.init(trainer.run_keys(seed)[0], zeros[1, H, W, C]): the "
                                             "architecture at its random initialisation"
                                             + (", without init_from's encoder" if config.get("init_from") else "")}
    variants += [_sam_beside_variant(path, images.shape[1], i) for i, path in enumerate(beside)]
    if _writes():
        os.makedirs(out, exist_ok=True)
    canvas = config.data.canvases
    files, numbers = sam_prompts.section(
        variants, images, groups, int(canvas.num_items), tuple(config.sam.eval_clicks), out, per_group=per_group,
        class_names=ITEMS if canvas.base == "fashion_mnist" else None)
    reason = "a SAM run: these figures are the ViT classifier's (a SAM's analysis is sam_prompts)"
    skipped = {name: reason for name in ("posemb_similarity", "filter_pca", "attention_distance", "attention_maps",
                                         "cls_segmentation")}
    return {"out": out, "written": {"sam_prompts": files}, "skipped": skipped,
            "meta": {"model": "SAM", "models": [v.name for v in variants], "init_control": control_meta},
            "numbers": {"sam_prompts": numbers}}


def _sam_beside_variant(path: str, canvas: int, index: int) -> Variant:
    """Another SAM run (or checkpoint) drawn beside the analysed one, on the analysed run's canvases."""
    from vitjax import rundir
    from vitjax.checkpoints import locations, reader
    run_dir = locations.locate(path).run_dir
    config = rundir.load_config(run_dir)
    if config.get("objective") != "sam":
        raise ValueError(f"--beside {path}: a {config.get('objective', 'supervised')} run; a SAM run is drawn "
                         f"beside SAM runs only")
    params = _host(reader.read_params(path))
    model = model_from_config(config, params)
    if canvas > model.image_size:
        raise ValueError(f"--beside {path}: its SAM takes images of {model.image_size} pixels, smaller than the "
                         f"analysed run's {canvas}-pixel canvases; draw beside it a SAM of image_size >= {canvas}")
    return Variant(_beside_name(index), _checkpoint_label(run_dir, config, path), params, model)


def _checkpoint_label(run_dir: str, config, path: str | None) -> str:
    """`_run_label`, with the step or 'best' when `path` names one checkpoint: two checkpoints of one run
    drawn side by side keep apart."""
    from vitjax.checkpoints import locations
    label = _run_label(run_dir, config)
    if not path:
        return label
    location = locations.locate(path)
    if location.step is not None:
        label += f", step {location.step}"
    if os.path.basename(os.path.normpath(location.checkpoint_dir)) == locations.BEST_CHECKPOINT:
        label += ", best validation"
    return label


def _beside_name(index: int) -> str:
    """The `model` column of the index-th run drawn beside: 'beside', 'beside_2', ..."""
    return BESIDE if index == 0 else f"{BESIDE}_{index + 1}"


def _beside_variant(workdir: str, image_shape, index: int = 0) -> Variant:
    """Another run drawn beside the analysed one (e.g. the supervised ViT beside a DINO run); refused
    unless its parameters fit the analysed run's images (`image_shape`, when known)."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    from vitjax import rundir
    from vitjax.checkpoints import locations, reader
    run_dir = locations.locate(workdir).run_dir
    config = rundir.load_config(run_dir)
    _refuse_dual_encoder(run_dir, config, flag="--beside ")
    params = _host(reader.read_params(workdir))
    model = model_from_config(config, params)
    if image_shape is not None:
        fits = jax.eval_shape(lambda: nn.meta.unbox(model.init(jax.random.key(0), jnp.zeros((1, *image_shape)),
                                                                train=False)["params"]))
        try:
            control.check_same_shapes(params, fits)
        except ValueError:
            raise ValueError(f"--beside {workdir}: its parameters do not fit the analysed run's images of shape "
                             f"{tuple(image_shape)} (another channel count or image size); draw beside it a run "
                             f"trained on the same images") from None
    return Variant(_beside_name(index), _run_label(run_dir, config), params, model)


def _run_label(run_dir: str, config) -> str:
    """A run's name and objective ('dino_pretrain (dino)'), so two runs in one figure cannot be confused."""
    return f"{os.path.basename(os.path.normpath(run_dir))} ({config.get('objective', 'supervised')})"


def _init_control(config, model, params, image_shape) -> tuple[dict | None, dict]:
    """(the run's initial parameters or None, what the summary says about them)."""
    seed = control.seed_of(config)
    if image_shape is None:
        return None, {"skipped": "no test images and no configured image shape, so the model cannot be initialised"}
    init = control.initial_params(model, seed, image_shape)
    try:
        control.check_same_shapes(_host(params), init)
    except ValueError as error:
        return None, {"skipped": str(error)}
    return init, {"seed": seed, "how": "model.init(trainer.run_keys(seed)[0], zeros[1, H, W, C], train=False): "
                                      "the trainer's initialisation, the run's step-0 parameters"}


def _configured_image_shape(config):
    # Only used when no images could be loaded: the synthetic source states its shape, tfds ones don't.
    data = config.get("data", {})
    synthetic = data.get("synthetic", {}) if data.get("name") == "synthetic" else {}
    shape = synthetic.get("image_shape") if synthetic else None
    return tuple(shape) if shape else None


# --- Command line -------------------------------------------------------------------------------

def main_args(parser) -> None:
    """Adds `vitjax analyze`'s arguments to an argparse (sub)parser."""
    parser.add_argument("--workdir", required=True, help="a vitjax run directory (holds config.json)")
    parser.add_argument("--checkpoint", default=None,
                        help="a checkpoints/<step> directory, or another run's workdir or checkpoints/ "
                             "directory (default: the newest checkpoint in --workdir)")
    parser.add_argument("--out", default=None, help="where figures and tables go (default: WORKDIR/analysis)")
    parser.add_argument("--num_images", type=int, default=64,
                        help="test images for the attention figures (a SAM run draws at most "
                             f"{NUM_SHOW} canvases, half seen, half unseen)")
    parser.add_argument("--beside", nargs="+", default=(), metavar="WORKDIR",
                        help="other runs or checkpoints of the same patch grid (e.g. the supervised ViT beside a "
                             "DINO run): their attention distance, maps and CLS segmentation drawn beside this "
                             "run's; for a SAM run, other SAM runs' answers to the same prompts")
    parser.add_argument("--no_init_control", dest="init_control", action="store_false",
                        help="analyse the trained model alone, without the same architecture at its "
                             "initialisation beside it in every figure and table")


def run(args) -> None:
    try:
        result = analyze_workdir(args.workdir, checkpoint=args.checkpoint, out=args.out,
                                 num_images=args.num_images, init_control=args.init_control, beside=args.beside)
    except (ValueError, FileNotFoundError) as error:
        sys.exit(f"vitjax analyze: error: {error}")
    if not _writes():
        return
    for name, paths in result["written"].items():
        print(f"{name}: " + ", ".join(paths))
    for name, reason in result["skipped"].items():
        print(f"{name}: skipped: {reason}")
    print(f"summary: {os.path.join(result['out'], 'summary.json')}")


if __name__ == "__main__":
    import argparse
    _parser = argparse.ArgumentParser(prog="python -m vitjax.analysis.run", description=__doc__.splitlines()[0])
    main_args(_parser)
    run(_parser.parse_args())
