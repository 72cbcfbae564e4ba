"""The config layer: every key a config has, config files, their `:arg` and `--config.key=value` overrides.

`vitjax train`, `vitjax bench` and `vitjax sweep` read configs through this module alone, so a key or a
value means the same everywhere and a typo fails the same way: naming the key, the closest known key
and, for a bad value, the type the field expects.

A config file defines `get_config(arg=None)` returning `base()` with its own values. `arg` is what
follows the colon in `configs/x.py:arg`, read with `parse_arg`, which declares the keys it takes:

    def get_config(arg=None):
        arg = parse_arg(arg, data="imagenet21k", epochs=90.0, long=False)
        c = base()
        c.data.name = arg.data
        ...

    config = load_config("configs/imagenet/vit_b16.py:data=imagenet2012,epochs=300")   # locked
    apply_overrides(config, {"batch_size": "64", "model.scan": True})   # text is parsed by the field's type
    override_flags({"data.train_size": 1000})   # ['--config.data.train_size=1000'] for `vitjax train`

Importing this module costs ml_collections only: config files load before TensorFlow or JAX start, so
a typo fails in a fraction of a second.
"""
import argparse
import ast
import difflib
import importlib.util
import os

import ml_collections
from ml_collections import config_dict

OVERRIDE_HELP = ("--config.KEY=VALUE (or --config.KEY VALUE) sets a field of the config, e.g. "
                 "--config.batch_size=64 --config.model.scan=true --config.data.synthetic.image_shape=28,28,1; "
                 "VALUE is read as the field's type; a key the config does not have fails. Repeatable.")

# Model arguments that never come from config.model: the trainer passes them itself (num_classes from
# the data, dtypes from config.dtype), and flax's own bookkeeping fields.
_NOT_MODEL_FIELDS = {"parent", "name", "num_classes", "dtype", "param_dtype"}


class ConfigError(ValueError):
    """A config file, its `:arg` or an override is unusable; the message names the bad key or value."""


class UnknownKeyError(ConfigError, KeyError):
    """A key the config (or the `:arg` spec) does not have; also a KeyError, as a missing key is one."""

    def __str__(self):  # KeyError would print the message quoted, like a dict key
        return str(self.args[0])


# --- The schema ---------------------------------------------------------------------------------

def base() -> ml_collections.ConfigDict:
    """Every key a training config has, with its default. Config files start from here."""
    c = ml_collections.ConfigDict()
    c.seed = 0

    # Model: `model_name` picks the family, `model` holds its keyword arguments (see vitjax/models).
    c.model_name = "vit"
    c.model = ml_collections.ConfigDict()
    c.dtype = "float32"  # compute dtype; parameters stay float32 ('bfloat16' on accelerators)
    c.init_from = ""  # an official .npz or a vitjax checkpoint/workdir to fine-tune from

    c.data = data_defaults()

    # Duration: exactly one of total_steps / total_epochs / total_examples is non-zero (switch on the
    # command line with e.g. `--config.total_epochs=0 --config.total_steps=300`); at most one for warmup.
    c.batch_size = 128
    c.eval_batch_size = 500
    c.total_steps = 0
    c.total_epochs = 0.0
    c.total_examples = 0
    c.warmup_steps = 0
    c.warmup_epochs = 0.0
    c.warmup_examples = 0

    # Optimisation.
    c.optimizer = ml_collections.ConfigDict(dict(
        name="adam", b1=0.9, b2=0.999, eps=1e-8, momentum=0.9, nesterov=False))
    c.lr = 1e-3
    c.end_lr = 0.0
    c.schedule = "cosine"  # 'cosine' | 'linear' | 'constant' | 'wsd', after a linear warmup
    c.cooldown_fraction = 0.2  # 'wsd': the final share of the steps that decays linearly to end_lr
    # 'wsd': a longer run of this config whose checkpoint at this run's cooldown start this run starts from
    c.branch_from = ""  # (vitjax/train/branch.py: a ladder of budgets sharing one constant phase)
    c.weight_decay = 1e-4  # decoupled, on kernels only
    c.weight_decay_schedule = "constant"  # or 'cosine': from weight_decay to weight_decay_end over the run
    c.weight_decay_end = 0.0
    c.grad_clip_norm = 1.0  # 0 disables
    c.label_smoothing = 0.0
    c.grad_accum_steps = 1  # micro-batches per step; the step still updates once on batch_size examples

    # What the step optimises (vitjax/objectives): 'supervised' (cross-entropy against the labels),
    # 'distillation' (DeiT: a student with model.distillation_token learns from a frozen teacher too),
    # 'dino' or 'contrastive' (below).
    c.objective = "supervised"
    c.distillation = distillation_defaults()
    c.dino = dino_defaults()  # 'dino' (vitjax/objectives/dino.py), with model_name='dino'
    c.sam = sam_defaults()  # 'sam' (vitjax/objectives/sam.py): promptable segmentation, model_name='sam'
    c.contrastive = contrastive_defaults()  # 'contrastive' (objectives/contrastive_objective.py): dual encoders
    c.nan_policy = "stop"  # 'stop': error naming the step and last good checkpoint; 'skip': drop the update

    # Devices: mesh axis sizes (-1: the rest) and the sharding preset (vitjax/parallel.py). dcn_data > 1:
    # a multi-slice mesh, `data` also split over that many TPU slices (or processes, where devices have
    # no slices) across the data-centre network; the other sizes are then per slice (docs/scaling.md).
    c.mesh = ml_collections.ConfigDict(dict(data=-1, fsdp=1, model=1, dcn_data=1))
    c.sharding = "data"  # 'data' | 'fsdp' | 'fsdp_tp'

    # XLA options for each compiled step (jax.jit's compiler_options), e.g. {'xla_cpu_...': ...}. Empty:
    # `vitjax train` and `vitjax bench` on the CPU fill in the measured ones (vitjax/xla_cpu.py).
    c.compiler_options = ml_collections.ConfigDict()

    # How the run executes, not what it computes: changing these never makes a run another config
    # (config_compare.RUNTIME_KEYS). compilation_cache_dir: JAX's persistent compilation cache (a directory or
    # gs://; '' = $VITJAX_COMPILATION_CACHE, or off), applied by `vitjax train`.
    c.compilation_cache_dir = ""
    # profile_steps: 'START:STOP' traces steps START+1..STOP with jax.profiler into WORKDIR/profile
    # (TensorBoard's Profile tab, XProf); '' = off (vitjax/train/profile.py).
    c.profile_steps = ""
    # Bookkeeping.
    c.log_every_steps = 50
    c.eval_every_steps = 0  # 0: evaluate at the end only
    # Frozen-feature evaluations during training (vitjax/evaluate/in_training.py): every N steps and at
    # the last step, logged beside the loss; 0 = off. They observe the run and change nothing in it.
    c.evals = evals_defaults()
    c.checkpoint_every_steps = 500
    c.keep_checkpoints = 3
    c.keep_checkpoint_steps = ()  # steps also saved and never deleted: where shorter runs branch off
    return c


def distillation_defaults() -> ml_collections.ConfigDict:
    """config.distillation: the DeiT objective's settings (vitjax/objectives/distillation.py)."""
    return ml_collections.ConfigDict(dict(
        teacher="",  # a vitjax run directory (or one of its checkpoints), or an official .npz
        type="hard",  # 'hard': the teacher's argmax as the distillation head's label; 'soft': KL at temperature
        temperature=1.0,  # soft only: T; the KL term is scaled by T^2
        alpha=0.5,  # weight of the distillation term; the labels' term gets 1 - alpha
        model_name="",  # an .npz teacher's model family ('vit' | 'bit'); a run's comes from its config.json
        model=ml_collections.ConfigDict(),  # an .npz teacher's model arguments, e.g. variant='B/16'
    ))


def evals_defaults() -> ml_collections.ConfigDict:
    """config.evals: k-NN (DINO's: k, temperature) and few-shot probes of the frozen features during
    training, each on at most `max_train` / `max_test` images so that one costs seconds."""
    return ml_collections.ConfigDict(dict(
        knn=ml_collections.ConfigDict(dict(every_steps=0, k=20, temperature=0.07, max_train=10_000, max_test=2_000)),
        fewshot=ml_collections.ConfigDict(dict(every_steps=0, shots=(5, 10), seeds=3, max_test=2_000)),
        zero_shot=evals_zero_shot_defaults(),
    ))


def contrastive_defaults() -> ml_collections.ConfigDict:
    """config.contrastive: image-text training of a dual encoder on caption data
    (vitjax/objectives/contrastive_objective.py). `templates` name a zero-shot class's fields in braces;
    each class's prompts are averaged (vitjax/evaluate/zero_shot.py)."""
    return ml_collections.ConfigDict(dict(
        loss="sigmoid",  # 'sigmoid' (SigLIP, needs model.layout='siglip') or 'softmax' (CLIP)
        # LiT: with init_from (a vitjax ViT, MAE or DINO run) the image tower is loaded from it
        # (vitjax/interop/lit_init.py); True also locks it (no gradient, no optimiser update).
        lock_image=False,
        templates=("a {colour} {item}", "a small {colour} {item}", "a large {colour} {item}",
                   "a {colour} {item} in the centre", "a {colour} {item} at the top left",
                   "a {colour} {item} at the bottom right"),
    ))


def evals_zero_shot_defaults() -> ml_collections.ConfigDict:
    """config.evals.zero_shot: a contrastive run's zero-shot accuracy on held-out and seen colour-item
    pairs and its retrieval R@1/R@5 (vitjax/evaluate/caption_evals.py) on its first `max_test` test pairs."""
    return ml_collections.ConfigDict(dict(every_steps=0, max_test=1_000))


def sam_defaults() -> ml_collections.ConfigDict:
    """config.sam: SAM's interactive training (vitjax/objectives/sam.py) on data.name='canvases'. The paper's
    share of box-first prompts and box noise; fewer rounds (its 8 clicks and 2 refinements cost 11 decoder
    passes a target, too many for 2 CPU cores)."""
    return ml_collections.ConfigDict(dict(
        clicks=3,  # rounds after the first prompt, each adding a point from the error region
        box_fraction=0.5,  # the share of targets whose first prompt is their box (the others: a point)
        box_noise=0.1,  # training boxes move by N(0, (0.1 x side)^2) per coordinate (at most 20 pixels)
        iou_weight=1.0,  # of the IoU head's squared error, beside the masks' focal (x20) + dice loss
        eval_clicks=(1, 3, 5),  # mIoU after these many clicks (and for a box) in every evaluation
        # The range the init_from encoder's pixels were mapped to from 0..255 (its value_range pp op), for
        # its patch embedding on SAM's normalised input (vitjax/interop/sam_init.py); a run's is checked.
        init_pixel_range=(-1.0, 1.0),
    ))


def dino_defaults() -> ml_collections.ConfigDict:
    """config.dino: the DINO objective's settings (vitjax/objectives/dino.py), self-distillation without
    labels. The official defaults, crop sizes aside: 0 means the image's size for global crops and
    96/224 of the global size, to a multiple of the patch, for local ones."""
    return ml_collections.ConfigDict(dict(
        global_crop_size=0, global_crop_scale=(0.4, 1.0),
        local_crops=8, local_crop_size=0, local_crop_scale=(0.05, 0.4),
        flip=True,  # a horizontal flip of each view with probability 1/2
        # The official brightness/contrast jitter and solarisation, grey images only (objectives/photometric.py),
        # on pixels in pixel_range (what pp_train maps them to).
        photometric=True, pixel_range=(-1.0, 1.0),
        student_temp=0.1,
        teacher_temp=0.04,  # after the warm-up; the paper's longer runs use 0.07
        warmup_teacher_temp=0.04, warmup_teacher_temp_epochs=0,  # linear warm-up, per epoch
        teacher_momentum=0.996,  # the EMA's momentum at step 0, cosine to 1 at the end
        centre_momentum=0.9,
        freeze_last_layer_epochs=1,  # the prototypes get no gradient in the first epochs
    ))


def data_defaults() -> ml_collections.ConfigDict:
    """The data config's keys and defaults (`config.data`; vitjax.data.default_config is this function).

    Here rather than in vitjax/data, whose package imports TensorFlow and JAX: loading a config must not.
    """
    c = ml_collections.ConfigDict()
    # A tfds name ('fashion_mnist', 'cifar10', 'imagenet2012', ...), 'folder:/root' (root/<split>/<class>/*.png),
    # 'npz:/file.npz' (keys <split>_images, <split>_labels, optional num_classes), 'synthetic', 'captions' or
    # 'canvases'.
    c.name = "fashion_mnist"
    c.data_dir = config_dict.placeholder(str)  # None: $TFDS_DATA_DIR or ~/tensorflow_datasets.
    c.train_split = "train"
    c.test_split = "test"
    # None: the whole train split. N: the first N of one fixed permutation keyed by subset_seed, so subsets
    # of different sizes are nested (the 1k subset lies inside the 10k subset).
    c.train_size = config_dict.placeholder(int)
    c.subset_seed = 0
    c.class_balanced = False  # Nested subsets with floor(N/K) (+1 for N mod K classes) examples per class.
    # 0: no validation split. N: a fixed, class-balanced set of N train_split examples held out as the
    # 'val' split (for model selection that never sees the test split), drawn from a permutation keyed
    # by val_seed alone; the training subsets above are then taken from the remaining examples.
    c.val_size = 0
    c.val_seed = 0
    # (): every class. (c0, c1, ...): only these classes of every split (train, validation, test), relabelled
    # 0..k-1 in this order (the model gets k outputs). The filter comes first: val_size, train_size and
    # class_balanced then count examples of the kept classes only (vitjax/data/sources.py, select_classes).
    c.classes = ()
    # '': none. A split name (tfds slicing allowed, e.g. 'train[99%:]' with train_split='train[:99%]'): the
    # 'val' split is that split, read whole with pp_eval; for streamed datasets, where val_size cannot hold
    # one out. Keeping it disjoint from train_split is the config's job. Not together with val_size.
    c.val_split = ""
    # Preprocessing op strings "op(args)|op|...". Both must give the same image shape. Ops (all in
    # vitjax/data/pp_ops.py): resize, random_crop, central_crop, inception_crop, flip_lr, value_range, to_rgb,
    # decode; randaugment(n, m, ops=None, p=1.0, mstd=0.0, ...) and random_erasing(p=0.25,
    # area=(0.02, 0.333), aspect=(0.3, 3.3), fill='pixel'|'zero'), both before value_range.
    c.pp_train = "random_crop(28, pad=2)|flip_lr|value_range(-1, 1)"
    c.pp_eval = "value_range(-1, 1)"
    # Batch-level mixing (vitjax/data/mixing.py), one draw per step keyed by (seed, step). Mixup: 0 off,
    # else lambda ~ Beta(alpha, alpha). CutMix: 0 off, else a box of area 1 - lambda pasted from another
    # image, the labels weighted by the pasted area. With both on, a batch uses CutMix with probability
    # mixup_switch_prob (DeiT: 0.8, 1.0, 0.5); mixup_prob: the chance a batch is mixed at all.
    c.mixup_alpha = 0.0
    c.cutmix_alpha = 0.0
    c.mixup_prob = 1.0
    c.mixup_switch_prob = 0.5
    # R > 1: repeated augmentation (Hoffer et al. 2020; DeiT uses 3): each global batch holds batch/R
    # examples R times each, differently augmented; an epoch still counts n examples (so n/R distinct
    # ones). batch_size must be divisible by R; in-memory data only (vitjax/data/pipeline.py).
    c.repeated_augmentation = 1
    # None: hold the split in memory when its decoded images are known to take at most `in_memory_max_gb`;
    # otherwise stream it from tfds (only tfds datasets can stream).
    c.in_memory = config_dict.placeholder(bool)
    c.in_memory_max_gb = 4.0
    c.shuffle_buffer = 50_000  # Streaming only; in-memory training permutes the whole split every epoch.
    c.prefetch = 2  # Streaming only: batches tf.data keeps ready (in memory, use data.prefetch on devices).
    c.synthetic = ml_collections.ConfigDict(
        dict(num_train=1024, num_test=256, image_shape=(16, 16, 3), num_classes=10, seed=0)
    )
    # name='captions': image-caption pairs made from the items of `base` ('fashion_mnist', or 'synthetic'
    # as data.synthetic says), tinted, scaled and placed on a canvas of `canvas` pixels (vitjax/data/captions.py);
    # num_train / num_test: the first N pairs of each split (None: one per base item).
    c.captions = ml_collections.ConfigDict(dict(
        base="fashion_mnist", seed=0, canvas=48,
        num_train=config_dict.placeholder(int), num_test=config_dict.placeholder(int)))
    # name='canvases': `num_items` items of `base` ('fashion_mnist', or 'synthetic' as data.synthetic says) at
    # random sides in `scale` pixels, overlapping, with their visible masks, on canvases of `canvas` pixels
    # (vitjax/data/canvases.py); training canvases hold items of `seen_classes` only, test canvases
    # alternate seen and unseen classes; num_train / num_test canvases (num_test even).
    c.canvases = ml_collections.ConfigDict(dict(
        base="fashion_mnist", seed=0, canvas=64, num_items=3, scale=(20, 40), seen_classes=(0, 1, 4, 5, 8),
        num_train=10_000, num_test=1_000))
    return c


# --- Values -------------------------------------------------------------------------------------

_BOOLS = {"true": True, "false": False}

def read_value(key: str, text: str, kind: type, nullable: bool = False):
    """`text` as a value of type `kind` (the field's type), or ConfigError naming key, text and type.

    bool: true/false (any case); int, float: Python's literals; str: the text as it is; tuple/list:
    a Python literal such as (224, 224, 3) or 224,224,3. 'None' (any case) gives None where `nullable`.
    `kind` NoneType (a field that is None with no declared type) reads true/false/none, then any
    Python literal, else keeps the text.
    """
    if nullable and text.strip().lower() == "none":
        return None
    if kind is type(None):
        return _untyped(text)
    try:
        if kind is bool:
            return _BOOLS[text.strip().lower()]
        if kind in (int, float, str):
            return kind(text)
        if kind in (tuple, list):
            value = ast.literal_eval(text)
            if isinstance(value, (tuple, list)):
                return kind(value)
    except (KeyError, ValueError, SyntaxError):
        pass
    if issubclass(kind, ml_collections.ConfigDict):
        raise ConfigError(f"{key} is a group of fields, not a value: set one of them, e.g. {key}.<field>=...")
    raise ConfigError(f"{key}={text!r}: expected {_describe(kind)}{' or None' if nullable else ''}")


def _untyped(text: str):
    lowered = text.strip().lower()
    if lowered in _BOOLS:
        return _BOOLS[lowered]
    if lowered == "none":
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _describe(kind: type) -> str:
    return {bool: "a bool (true or false)", int: "an int", float: "a float", str: "a string",
            tuple: "a tuple such as (224, 224, 3)", list: "a list such as [1, 2]"}.get(
        kind, f"a {kind.__name__} (it cannot be written as text)")


def _value_text(value) -> str:
    """A value as text that read_value reads back to the same value (bools lower-case, tuples as literals)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return repr(tuple(value))
    return str(value)


# What peer codebases (big_vision, timm, the official DeiT/MAE/DINO scripts) call keys this schema names
# otherwise: a check of spelling alone would not lead from them to these.
_NAMES_ELSEWHERE = {
    "learning_rate": "lr", "base_lr": "lr", "blr": "lr", "min_lr": "end_lr", "epochs": "total_epochs",
    "num_epochs": "total_epochs", "steps": "total_steps", "num_train_steps": "total_steps",
    "num_steps": "total_steps", "wd": "weight_decay", "grad_clip": "grad_clip_norm", "clip_grad": "grad_clip_norm",
    "smoothing": "label_smoothing", "lr_schedule": "schedule", "mixup": "data.mixup_alpha",
    "cutmix": "data.cutmix_alpha", "dataset": "data.name",
}


def _meant(key: str, known) -> str:
    """'; did you mean K?' for the known dotted key a wrong one most likely meant, or ''. Scores each by
    the closer spelling of the whole key or of its last name, so a key in the wrong group is found
    (`data.batch_size`: batch_size), and names peer codebases use lead to this schema's
    (`learning_rate`, even misspelt: lr)."""
    def leaf(dotted):
        return dotted.rsplit(".", 1)[-1]

    def ratio(a, b):
        return difflib.SequenceMatcher(None, a, b).ratio()

    scores = {}  # (the closer of the two spellings, the whole key's, shortness): ties go to the key nearer the top
    for candidate in known:
        whole = ratio(key, candidate)
        scores[candidate] = (max(whole, ratio(leaf(key), leaf(candidate))), whole, -len(candidate))
    for elsewhere, here in _NAMES_ELSEWHERE.items():
        if here in scores and ratio(leaf(key), elsewhere) >= 0.8:  # short names are near too much by chance
            scores[here] = max(scores[here], (ratio(leaf(key), elsewhere), 1.0, 0))
    best = max(scores, key=scores.get, default=None)
    return f"; did you mean {best!r}?" if best is not None and scores[best][0] >= 0.6 else ""


# --- `:arg` -------------------------------------------------------------------------------------

def parse_arg(arg: str | None, **spec) -> ml_collections.ConfigDict:
    """A config file's `:arg` as a ConfigDict of the keys `spec` declares, each with its default.

    `parse_arg("data=imagenet2012,epochs=300", data="imagenet21k", epochs=90.0)` gives data='imagenet2012',
    epochs=300.0: each value is read as its default's type. A bool key may be given by its name alone
    (`:long` is `:long=true`). An undeclared key fails naming the known ones and the closest.
    """
    values = dict(spec)
    for item in (arg or "").split(","):
        if not item.strip():
            continue
        key, sep, text = (part.strip() for part in item.partition("="))
        if key not in spec:
            raise UnknownKeyError(f"unknown key {key!r} in ':{arg}'; known keys: {', '.join(spec) or 'none'}"
                                  f"{_meant(key, spec)}")
        if not sep:
            if not isinstance(spec[key], bool):
                raise ConfigError(f"{key!r} in ':{arg}' needs a value: write {key}=<{_describe(type(spec[key]))}>")
            text = "true"
        values[key] = read_value(key, text, type(spec[key]), nullable=spec[key] is None)
    return ml_collections.ConfigDict(values)


def parse_part_arg(arg: str | None, parts: dict, **spec) -> ml_collections.ConfigDict:
    """parse_arg for a sweep file made of parts: `spec` declares every key with its default, `part`
    among them; `parts` maps each part to the keys it reads beside `part`. An unknown part, or a key
    given that the chosen part does not read (it would be ignored), fails naming what the part reads.
    """
    values = parse_arg(arg, **spec)
    if values.part not in parts:
        raise ConfigError(f"part={values.part!r}: the parts are {', '.join(parts)}")
    given = {item.partition("=")[0].strip() for item in (arg or "").split(",") if item.strip()}
    stray = sorted(given - {"part", *parts[values.part]})
    if stray:
        reads = ", ".join(parts[values.part]) or "no other key"
        raise ConfigError(f"{', '.join(stray)}: not read by part={values.part}, which reads {reads}")
    return values


# --- Config files -------------------------------------------------------------------------------

def split_path(path_with_arg: str) -> tuple[str, str | None]:
    """'configs/x.py:variant=B/16' -> ('configs/x.py', 'variant=B/16'); no colon -> (path, None)."""
    # Split after '.py' rather than at the first colon, so the argument may itself hold colons.
    head, sep, arg = path_with_arg.partition(".py:")
    if sep:
        return head + ".py", arg
    return path_with_arg, None


def load_module(path: str, name: str = "vitjax_config_file"):
    """Imports a Python file by path (not by module name: config and sweep files are not in a package)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"config file {path!r} does not exist")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_config(path_with_arg: str) -> ml_collections.ConfigDict:
    """`get_config(arg)` of a config file, locked: no key can be added by mistake."""
    path, arg = split_path(path_with_arg)
    try:
        module = load_module(path)
    except FileNotFoundError:
        raise
    except Exception as error:  # the file's own SyntaxError, NameError, ImportError...: the user's to fix
        raise ConfigError(f"config file {path!r} could not be loaded: {type(error).__name__}: {error}") from None
    if not hasattr(module, "get_config"):
        raise ConfigError(f"config file {path!r} defines no get_config(arg) function")
    try:
        config = module.get_config(arg) if arg is not None else module.get_config()
    except ConfigError as error:  # its parse_arg refused the arg: say which file took it
        raise type(error)(f"{path}: {error}") from None
    except Exception as error:
        raise ConfigError(f"get_config({arg!r}) of {path!r} failed: {type(error).__name__}: {error}") from None
    if not isinstance(config, ml_collections.ConfigDict):
        raise ConfigError(f"get_config of {path!r} returned a {type(config).__name__}, not a ConfigDict: start "
                          f"from vitjax.config.base() and return it")
    _check_schema(config, path)
    config.lock()
    return config


def _check_schema(config: ml_collections.ConfigDict, path: str) -> None:
    """Refuses a key a config file set that the schema (base()) does not have, e.g. `c.learning_rate =
    5.0` for c.lr, which would otherwise train at the default rate. The model-argument groups are free
    (each model class checks its own arguments when the trainer builds it)."""
    known = _flat_keys(base())
    unknown = [key for key in _flat_keys(config) - known
               if not any(key.startswith(group + ".") for group in _MODEL_GROUPS)]
    if unknown:
        raise UnknownKeyError(f"config file {path!r} sets keys the config schema does not have (vitjax/config.py's "
                              f"base() lists every key):" + "".join(f"\n  {key}{_meant(key, known)}"
                                                                    for key in sorted(unknown)))


def _flat_keys(config: ml_collections.ConfigDict, prefix: str = "") -> set:
    keys = set()
    for key, value in config.items():
        if isinstance(value, ml_collections.ConfigDict):
            keys |= _flat_keys(value, f"{prefix}{key}.")
        else:
            keys.add(prefix + key)
    return keys


# --- Overrides ----------------------------------------------------------------------------------

def apply_overrides(config: ml_collections.ConfigDict, overrides: dict) -> dict:
    """Sets dotted keys in place, in order; returns the values set, by key.

    A str value is text (from a command line): it is read by the field's type (read_value). Other
    values are set as they are (lists become tuples where the field is a tuple). `model.<field>` may
    name an argument of the model class that config.model does not list yet (`model.scan` on any ViT
    config); so may `distillation.model.<field>`, of the class distillation.model_name names (an .npz
    teacher's model). A key the config does not have raises UnknownKeyError naming the closest one.
    """
    applied = {}
    for dotted, value in overrides.items():
        parent, leaf = _parent_of(config, dotted)
        if leaf not in parent:
            applied[dotted] = _add_model_field(config, dotted, value)
            continue
        if isinstance(value, str):
            value = read_value(dotted, value, parent.get_type(leaf), nullable=_nullable(parent, leaf))
        elif isinstance(parent[leaf], tuple) and isinstance(value, list):
            value = tuple(value)  # sweep files written by hand often give shapes as lists
        try:
            parent[leaf] = value
        except TypeError:
            raise ConfigError(f"{dotted}={value!r}: expected {_describe(parent.get_type(leaf))}") from None
        applied[dotted] = parent[leaf]
    return applied


def _nullable(parent, leaf: str) -> bool:
    # Placeholders (config_dict.placeholder(int), e.g. data.train_size) take None whatever they hold now.
    field = dict(parent.items(preserve_field_references=True))[leaf]
    return field is None or isinstance(field, config_dict.FieldReference)


def override_flags(overrides: dict) -> list[str]:
    """The `--config.key=value` arguments that make `vitjax train` apply the same overrides."""
    return [f"--config.{key}={_value_text(value)}" for key, value in overrides.items()]


def model_fields(model_name: str) -> dict:
    """{argument: default} of the model class `model_name` ('vit', 'bit'), or {} for an unknown name."""
    import dataclasses

    from vitjax import models  # here, not at the top: it starts JAX, which loading a config must not

    if model_name not in models.FAMILIES:
        return {}
    return {f.name: (f.default if f.default is not dataclasses.MISSING else None)
            for f in dataclasses.fields(models.family(model_name)) if f.name not in _NOT_MODEL_FIELDS}


# Groups of model-class arguments, each named by the config key of its model's name: a group holds only
# the arguments a config file sets (the rest are the class's defaults), so an override may add one.
_MODEL_GROUPS = {"model": "model_name", "distillation.model": "distillation.model_name"}


def teacher_overrides(model_name: str, model) -> dict:
    """The overrides that describe an .npz distillation teacher's model (`model`: its config.model)."""
    return {"distillation.model_name": model_name, **{f"distillation.model.{k}": v for k, v in model.items()}}


def _at(config, dotted: str):
    for part in dotted.split("."):
        config = config[part]
    return config


def _group_fields(config, group: str) -> dict:
    """{argument: default} of the model class whose name `group`'s name key holds."""
    return model_fields(_at(config, _MODEL_GROUPS[group]))


def _add_model_field(config, dotted: str, value):
    group, field = dotted.rsplit(".", 1)
    default = _group_fields(config, group)[field]  # _parent_of let through only fields that exist
    if isinstance(value, str):
        value = read_value(dotted, value, type(default), nullable=default is None)
    node = _at(config, group)
    with node.unlocked():
        node[field] = value
    return node[field]


def _parent_of(config, dotted: str):
    node, parts = config, dotted.split(".")
    for depth, part in enumerate(parts):
        if isinstance(node, ml_collections.ConfigDict) and part in node:
            if depth < len(parts) - 1:
                node = node[part]
            continue
        where = ".".join(parts[:depth]) or "the config"
        is_model_group = where in _MODEL_GROUPS and depth == len(parts) - 1
        if is_model_group and part in _group_fields(config, where):
            break
        known = sorted(node.keys()) if isinstance(node, ml_collections.ConfigDict) else []
        if is_model_group:
            known = sorted(set(known) | set(_group_fields(config, where)))
        if is_model_group and not known:
            raise UnknownKeyError(f"override key {dotted!r}: {where} takes the arguments of the model "
                                  f"{_MODEL_GROUPS[where]} names, which is not set: set it first (e.g. "
                                  f"--config.{_MODEL_GROUPS[where]}=bit)")
        # A model group's own arguments are known once its class is imported; other keys' hints import nothing.
        candidates = _flat_keys(config) | ({f"{where}.{field}" for field in known} if is_model_group else set())
        raise UnknownKeyError(f"override key {dotted!r}: {where} has no field {part!r}{_meant(dotted, candidates)} "
                              f"(fields there: {', '.join(known) or 'none, it is not a group'})")
    return node, parts[-1]


# --- Command lines ------------------------------------------------------------------------------

def overrides_from_argv(argv: list[str]) -> tuple[dict, list[str]]:
    """Takes `--config.KEY=VALUE` and `--config.KEY VALUE` out of argv: ({KEY: VALUE text}, the rest)."""
    overrides, rest, args = {}, [], iter(argv)
    for arg in args:
        if not arg.startswith("--config."):
            rest.append(arg)
            continue
        key, sep, text = arg[len("--config."):].partition("=")
        if not sep:
            text = next(args, None)
            if text is None:
                raise ConfigError(f"{arg} needs a value: write {arg}=VALUE")
        if not key:
            raise ConfigError(f"{arg!r} names no key: write --config.KEY=VALUE, e.g. --config.batch_size=64")
        overrides[key] = text
    return overrides, rest


def parse_command_line(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """`parser.parse_args(argv)` with the `--config.KEY=VALUE` arguments taken out first, as args.overrides."""
    try:
        overrides, rest = overrides_from_argv(argv)
    except ConfigError as error:
        parser.error(str(error))
    args = parser.parse_args(rest)
    args.overrides = overrides
    return args
