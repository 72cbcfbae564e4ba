"""Every value of a training config, and the workdir, checked before the trainer writes anything.

`config(c)` raises one ValueError naming each bad value and what to use instead, e.g.
"keep_checkpoints=0: keep at least 1 checkpoint (the newest is needed to resume)". `vitjax train`
calls it before any device starts, and trainer.plan first of all, so a run refused here leaves no
config.json behind and the corrected command needs no --force. What depends on the data or the
devices (durations in epochs, warmup against training, batches against the mesh, the model's shapes)
plan checks next; data.* values are vitjax/data's (`data.get_info`, which plan calls).
"""
import os

from vitjax import storage
from vitjax.objectives import OBJECTIVES  # the registry alone: no objective module, no JAX

# The names optimizer.py and the trainer act on (tests/train/test_checks.py checks that each builds).
# Here rather than imported from optimizer.py: `vitjax train` validates before JAX is imported.
SCHEDULES = ("cosine", "linear", "constant", "wsd")  # the decay after the warmup
WEIGHT_DECAY_SCHEDULES = ("constant", "cosine")
OPTIMIZERS = ("adam", "adamw", "sgd")
NAN_POLICIES = ("stop", "skip")
# Objectives that train one model family only, and the family each needs (and that needs it).
OBJECTIVE_MODELS = {name: registered.model for name, registered in OBJECTIVES.items() if registered.model}
DTYPES = ("float32", "bfloat16", "float16")  # compute dtypes; parameters stay float32
REMOTE_SCHEMES = ("gs", "s3", "az")  # the object stores etils.epath reaches (vitjax/storage.py)


def _choice(names) -> str:
    return "choose " + ", ".join(repr(name) for name in names[:-1]) + f" or {names[-1]!r}"


def _at_least(low):
    return lambda value: value >= low


def _fraction(value) -> bool:
    return 0 <= value < 1


def _profile_window(text) -> bool:
    from vitjax.train import profile  # here: it imports jax, which checking a config needs nowhere else

    try:
        profile.parse(text)
    except ValueError:
        return False
    return True


# (key, test the value passes, what to use instead). A value of the wrong type fails its test.
_RULES = (
    ("batch_size", _at_least(1), "use at least 1 example per step, e.g. 128"),
    ("eval_batch_size", _at_least(1), "use at least 1 example per evaluation batch, e.g. 500"),
    ("grad_accum_steps", _at_least(1), "use 1 for no accumulation, or the number of micro-batches per step"),
    ("log_every_steps", _at_least(1), "log every N >= 1 steps, e.g. 50 (the last step is always logged)"),
    ("checkpoint_every_steps", _at_least(1), "save every N >= 1 steps, e.g. 500 (the last step is always saved)"),
    ("eval_every_steps", _at_least(0), "use 0 to evaluate at the end only, or N >= 1 to evaluate every N steps"),
    ("keep_checkpoints", _at_least(1), "keep at least 1 checkpoint (the newest is needed to resume)"),
    ("lr", lambda lr: lr > 0, "use a learning rate > 0, e.g. 1e-3 (0 trains nothing, < 0 climbs the loss)"),
    ("end_lr", _at_least(0), "use an end learning rate >= 0 (0: decay to zero)"),
    ("weight_decay", _at_least(0), "use 0 for no weight decay, or a rate > 0 such as 1e-4"),
    ("weight_decay_schedule", lambda name: name in WEIGHT_DECAY_SCHEDULES, _choice(WEIGHT_DECAY_SCHEDULES)),
    ("weight_decay_end", _at_least(0), "use a rate >= 0 for weight_decay_schedule='cosine' to end at, e.g. 0.4"),
    ("grad_clip_norm", _at_least(0), "use 0 for no clipping, or a norm > 0 such as 1.0"),
    ("label_smoothing", _fraction, "use a value in [0, 1), e.g. 0.1 (0: no smoothing)"),
    ("seed", _at_least(0), "use a seed >= 0"),
    ("schedule", lambda name: name in SCHEDULES, _choice(SCHEDULES)),
    ("cooldown_fraction", _fraction, "use a share of the steps in [0, 1) for 'wsd' to decay over, e.g. 0.2"),
    ("keep_checkpoint_steps", lambda steps: all(int(s) == s and s >= 1 for s in steps),
     "list steps >= 1 to keep, e.g. (960, 1920), or () for none"),
    ("optimizer.name", lambda name: name in OPTIMIZERS, _choice(OPTIMIZERS)),
    ("optimizer.b1", _fraction, "use a decay rate in [0, 1), e.g. 0.9"),
    ("optimizer.b2", _fraction, "use a decay rate in [0, 1), e.g. 0.999"),
    ("optimizer.eps", lambda eps: eps > 0, "use an epsilon > 0, e.g. 1e-8"),
    ("optimizer.momentum", _fraction, "use a momentum in [0, 1), e.g. 0.9 (0: none)"),
    ("dtype", lambda name: name in DTYPES, _choice(DTYPES) + " (bfloat16 on accelerators)"),
    ("profile_steps", lambda text: _profile_window(text),
     "use 'START:STOP' with 0 <= START < STOP (steps START+1 to STOP are traced), e.g. '100:105', or '' for none"),
    ("objective", lambda name: name in OBJECTIVES, _choice(tuple(OBJECTIVES))),
    ("evals.knn.every_steps", _at_least(0), "use 0 for no k-NN during training, or N >= 1 to run it every N steps"),
    ("evals.knn.k", _at_least(1), "use k >= 1 neighbours, e.g. 20 (the DINO paper's)"),
    ("evals.knn.temperature", lambda t: t > 0, "use a temperature > 0, e.g. 0.07 (the DINO paper's)"),
    ("evals.knn.max_train", _at_least(1), "use a memory bank of N >= 1 train images, e.g. 10000"),
    ("evals.knn.max_test", _at_least(1), "score N >= 1 test images, e.g. 2000"),
    ("evals.fewshot.every_steps", _at_least(0), "use 0 for no few-shot probe during training, or N >= 1"),
    ("evals.fewshot.shots", lambda shots: len(shots) > 0 and all(int(k) == k and k >= 1 for k in shots),
     "list examples per class >= 1, e.g. (5, 10)"),
    ("evals.fewshot.seeds", _at_least(1), "draw each k-shot set at least once, e.g. 3"),
    ("evals.fewshot.max_test", _at_least(1), "score N >= 1 test images, e.g. 2000"),
    ("evals.zero_shot.every_steps", _at_least(0), "use 0 for no zero-shot and retrieval evaluation during "
     "training, or N >= 1 to run it every N steps"),
    ("evals.zero_shot.max_test", _at_least(5), "score N >= 5 test pairs (R@5 needs 5), e.g. 1000"),
    ("contrastive.loss", lambda name: name in ("sigmoid", "softmax"), "choose 'sigmoid' (SigLIP) or 'softmax' (CLIP)"),
    ("nan_policy", lambda name: name in NAN_POLICIES,
     "nan_policy must be 'stop' or 'skip' ('stop' raises at the first non-finite loss, 'skip' drops such updates)"),
)


_ABSENT = object()


def _get(c, dotted: str):
    for part in dotted.split("."):
        if part not in c:
            return _ABSENT  # a partial config (tests, tools): what it lacks the trainer does not use
        c = c[part]
    return c


def config(c) -> None:
    """Raises ValueError naming every value of `c` that no run can use, each with its fix."""
    problems = []
    for key, accepts, fix in _RULES:
        value = _get(c, key)
        if value is _ABSENT:
            continue
        try:
            good = bool(accepts(value))
        except TypeError:  # None, or text where a number belongs
            good = False
        if not good:
            problems.append(f"{key}={value!r}: {fix}")
    problems += _objective_and_model(c)
    if _get(c, "evals.zero_shot.every_steps") not in (_ABSENT, 0) and _get(c, "objective") != "contrastive":
        problems.append(f"evals.zero_shot.every_steps={_get(c, 'evals.zero_shot.every_steps')} scores a dual encoder "
                        f"on caption data: it needs objective='contrastive'; set it to 0")
    if _get(c, "branch_from") not in (_ABSENT, "") and _get(c, "schedule") != "wsd":
        problems.append(f"branch_from={_get(c, 'branch_from')!r} needs schedule='wsd' (only its constant phase is "
                        f"shared by runs of other lengths): set --config.schedule=wsd, or clear branch_from")
    if len(problems) == 1:
        raise ValueError(problems[0])
    if problems:
        raise ValueError("config values no run can use:\n  " + "\n  ".join(problems))


def _objective_and_model(c) -> list[str]:
    """The pairings of objective and model_name that no run can train, each with its fix."""
    objective, model_name = _get(c, "objective"), _get(c, "model_name")
    if objective is _ABSENT or model_name is _ABSENT:
        return []
    needed = OBJECTIVE_MODELS.get(objective)
    if needed is not None and model_name != needed:
        example = OBJECTIVES[objective].config or f"configs/fashion_mnist/{needed}.py"
        return [f"objective={objective!r} trains model_name={needed!r}, got model_name={model_name!r}: set "
                f"--config.model_name={needed} (with its model settings, e.g. {example}), "
                f"or choose another objective"]
    wanting = [name for name, family in OBJECTIVE_MODELS.items() if family == model_name]
    if wanting and objective not in wanting:
        hint = (f" (to fine-tune its encoder as a classifier, train a ViT with --config.init_from=<the "
                f"{model_name} run>)" if OBJECTIVES[wanting[0]].encoder_for_vit else "")
        return [f"model_name={model_name!r} is trained by objective={wanting[0]!r} only, got "
                f"objective={objective!r}: set --config.objective={wanting[0]}{hint}"]
    return []


def workdir(path: str) -> None:
    """Refuses a workdir no run can live in: a URL of a store vitjax cannot write, a path the checkpoint
    library would read as a pattern, an existing file or a path below a file (`writable_workdir` checks
    the permission). A gs:// (or s3://, az://) workdir passes: every
    file of a run goes through vitjax/storage.py (etils.epath) and orbax, and whether the bucket can be
    written shows at the first write (the config.json the trainer writes before anything else)."""
    if any(char in path for char in "[]*?"):
        # Orbax finds each save's per-process data with a glob under the step's directory: these
        # characters in any parent make it a pattern, the merge is skipped and the step cannot be read back.
        raise ValueError(f"workdir {path!r} holds one of [ ] * ?, which the checkpoint library reads as a "
                         f"file pattern (its saves could not be read back); choose a path without them, e.g. "
                         f"{path.translate(str.maketrans('[]*?', '()__'))!r}")
    if "://" in path:
        scheme = path.split("://", 1)[0]
        if scheme not in REMOTE_SCHEMES:
            raise ValueError(f"workdir {path!r}: {scheme}:// is not a store vitjax can write; use a local path "
                             f"or a bucket URL ({', '.join(s + '://' for s in REMOTE_SCHEMES)})")
        return
    existing = storage.nearest_existing(path)
    if not os.path.isdir(existing):
        where = "is a file" if existing == os.path.abspath(path) else f"lies below {existing!r}, a file"
        raise ValueError(f"workdir {path!r} {where}; pass a directory (a new one, or a run's workdir)")


def writable_workdir(path: str) -> None:
    """Refuses a local workdir (or the nearest existing directory above it) this user cannot write:
    checked once a finished run, which is only reported, has been told apart."""
    existing = storage.unwritable_ancestor(path)
    if existing is not None:
        raise ValueError(f"workdir {path!r}: this user cannot write in {existing!r}; pass a directory you can "
                         f"write, or change its permissions")
