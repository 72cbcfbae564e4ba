"""The optax optimiser and learning-rate schedule a config describes.

    config.optimizer = dict(name='adamw' | 'adam' | 'sgd', b1, b2, eps, momentum, nesterov)
    config.lr, config.schedule ('cosine' | 'linear' | 'constant'), config.end_lr
    config.warmup_{steps|epochs|examples}, config.total_{steps|epochs|examples}
    config.weight_decay (decoupled, kernels only: 'adam' with it is AdamW), config.grad_clip_norm
"""
import jax
import optax

from vitjax.durations import DURATION_UNITS, steps_of  # noqa: F401  (optimizer.steps_of, as before)


def learning_rate_schedule(config, total_steps: int, warmup_steps: int) -> optax.Schedule:
    """Linear warmup to config.lr, then the decay; trainer.plan has checked warmup <= total."""
    decay_steps = max(total_steps - warmup_steps, 1)
    end_lr = config.get("end_lr", 0.0)
    if config.schedule == "cosine":
        decay = optax.cosine_decay_schedule(config.lr, decay_steps, alpha=end_lr / config.lr if config.lr else 0)
    elif config.schedule == "linear":
        decay = optax.linear_schedule(config.lr, end_lr, decay_steps)
    elif config.schedule == "constant":
        decay = optax.constant_schedule(config.lr)
    else:
        raise ValueError(f"unknown schedule {config.schedule!r}; choose 'cosine', 'linear' or 'constant'")
    if warmup_steps == 0:
        return decay
    warmup = optax.linear_schedule(0.0, config.lr, warmup_steps)
    return optax.join_schedules([warmup, decay], [warmup_steps])


def decay_mask(params):
    """Weight decay applies to kernels only: not to biases, norm scales, position embeddings or CLS."""
    def is_kernel(path, leaf):
        return getattr(path[-1], "key", None) == "kernel" and leaf.ndim > 1
    return jax.tree_util.tree_map_with_path(is_kernel, params)


def make_optimizer(config, schedule: optax.Schedule) -> optax.GradientTransformation:
    opt = config.optimizer
    parts = []
    if config.grad_clip_norm:
        parts.append(optax.clip_by_global_norm(config.grad_clip_norm))
    if opt.name in ("adam", "adamw"):
        parts.append(optax.scale_by_adam(b1=opt.b1, b2=opt.b2, eps=opt.eps))
    elif opt.name == "sgd":
        if opt.momentum:
            parts.append(optax.trace(decay=opt.momentum, nesterov=opt.nesterov))
    else:
        raise ValueError(f"unknown optimizer {opt.name!r}; choose 'adam', 'adamw' or 'sgd'")
    if config.weight_decay:
        # Decoupled (AdamW-style): lr * wd * w, added after the adaptive scaling.
        parts.append(optax.add_decayed_weights(config.weight_decay, mask=decay_mask))
    parts.append(optax.scale_by_learning_rate(schedule))
    return optax.chain(*parts)
