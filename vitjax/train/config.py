"""Every key a training config has, with its default. Config files start from `base()`.

A config file under configs/ defines `get_config(arg)` returning `base()` with its own values;
`arg` is what follows the colon in `--config=configs/x.py:arg`, either a preset name (`long`) or
`key=value` pairs (`variant=B/16,res=384`), read with `parse_arg`. The returned ConfigDict is locked
by the CLI, so `--config.batchsize=1` (a typo) fails at start-up instead of being ignored.
"""
import ml_collections

from vitjax import data


def base() -> ml_collections.ConfigDict:
    c = ml_collections.ConfigDict()
    c.seed = 0

    # Model: `model_name` picks the family, `model` holds its keyword arguments (see vitjax/models).
    c.model_name = "vit"
    c.model = ml_collections.ConfigDict()
    c.dtype = "float32"  # compute dtype; parameters stay float32 ('bfloat16' on accelerators)
    c.init_from = ""  # an official .npz or a vitjax checkpoint/workdir to fine-tune from

    c.data = data.default_config()

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
    c.schedule = "cosine"  # 'cosine' | 'linear' | 'constant', after a linear warmup
    c.weight_decay = 1e-4  # decoupled, on kernels only
    c.grad_clip_norm = 1.0  # 0 disables
    c.label_smoothing = 0.0
    c.grad_accum_steps = 1  # micro-batches per step; the step still updates once on batch_size examples
    c.nan_policy = "stop"  # 'stop': error naming the step and last good checkpoint; 'skip': drop the update

    # Devices: mesh axis sizes (-1: the rest) and the sharding preset (vitjax/parallel.py).
    c.mesh = ml_collections.ConfigDict(dict(data=-1, fsdp=1, model=1))
    c.sharding = "data"  # 'data' | 'fsdp' | 'fsdp_tp'

    # Bookkeeping.
    c.log_every_steps = 50
    c.eval_every_steps = 0  # 0: evaluate at the end only
    c.checkpoint_every_steps = 500
    c.keep_checkpoints = 3
    return c


def parse_arg(arg: str | None, presets: tuple[str, ...] = ()) -> dict:
    """'long' -> {'preset': 'long'}; 'variant=B/16,res=384' -> {'variant': 'B/16', 'res': 384}."""
    if not arg:
        return {}
    if "=" not in arg:
        if presets and arg not in presets:
            raise ValueError(f"unknown config preset {arg!r}; choose one of {presets}")
        return {"preset": arg}
    out = {}
    for item in arg.split(","):
        key, _, value = item.partition("=")
        out[key.strip()] = _literal(value.strip())
    return out


def _literal(value: str):
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(value.lower(), value)
