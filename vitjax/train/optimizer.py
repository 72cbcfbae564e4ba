"""The optax optimiser and learning-rate schedule a config describes.

    config.optimizer = dict(name='adamw' | 'adam' | 'sgd', b1, b2, eps, momentum, nesterov)
    config.lr, config.schedule ('cosine' | 'linear' | 'constant' | 'wsd'), config.end_lr
    config.cooldown_fraction ('wsd' only: the last round(fraction x total) steps decay linearly to end_lr)
    config.warmup_{steps|epochs|examples}, config.total_{steps|epochs|examples}
    config.weight_decay (decoupled, kernels only: 'adam' with it is AdamW), config.grad_clip_norm
    config.weight_decay_schedule ('constant' | 'cosine': from weight_decay to weight_decay_end over the run,
        DINO's official 0.04 -> 0.4)
`freeze` keeps an objective's frozen subtrees (LiT's locked image tower) out of all of it.
"""
import jax
import jax.numpy as jnp
import optax

from vitjax.durations import cooldown_of


def cooldown_steps(config, total_steps: int) -> int:
    """The steps of a 'wsd' schedule's final decay (0 for the other schedules)."""
    return cooldown_of(config.cooldown_fraction, total_steps) if config.schedule == "wsd" else 0


def learning_rate_schedule(config, total_steps: int, warmup_steps: int) -> optax.Schedule:
    """Linear warmup to config.lr, then the decay; trainer.plan has checked warmup <= total.

    'wsd' (warmup-stable-decay, Hagele et al. 2024) holds config.lr until the last `cooldown_steps`, then
    decays linearly to end_lr: two runs that differ only in length agree step for step until the shorter
    one's cooldown, which is what lets one long run's checkpoints start every shorter budget's cooldown
    (config.branch_from).
    """
    decay_steps = max(total_steps - warmup_steps, 1)
    end_lr = config.get("end_lr", 0.0)
    if config.schedule == "wsd":
        cooldown = cooldown_steps(config, total_steps)
        stable = optax.constant_schedule(config.lr)
        decay = optax.join_schedules(
            [stable, optax.linear_schedule(config.lr, end_lr, max(cooldown, 1))],
            [total_steps - warmup_steps - cooldown]) if cooldown else stable
    elif config.schedule == "cosine":
        decay = optax.cosine_decay_schedule(config.lr, decay_steps, alpha=end_lr / config.lr if config.lr else 0)
    elif config.schedule == "linear":
        decay = optax.linear_schedule(config.lr, end_lr, decay_steps)
    elif config.schedule == "constant":
        decay = optax.constant_schedule(config.lr)
    else:
        raise ValueError(f"unknown schedule {config.schedule!r}; choose 'cosine', 'linear', 'constant' or 'wsd'")
    if warmup_steps == 0:
        return decay
    warmup = optax.linear_schedule(0.0, config.lr, warmup_steps)
    return optax.join_schedules([warmup, decay], [warmup_steps])


def decay_mask(params):
    """Weight decay applies to kernels only: not to biases, norm scales, position embeddings or CLS."""
    def is_kernel(path, leaf):
        return getattr(path[-1], "key", None) == "kernel" and leaf.ndim > 1
    return jax.tree_util.tree_map_with_path(is_kernel, params)


def weight_decay_rate(config, total_steps: int):
    """config.weight_decay, or with weight_decay_schedule='cosine' a schedule of the optimiser's update
    count: end + (start - end) (1 + cos(pi t / total)) / 2, as the official DINO's cosine_scheduler (no
    warm-up), so the last step's rate is just short of weight_decay_end."""
    kind = config.get("weight_decay_schedule", "constant")
    if kind == "constant":
        return config.weight_decay
    if kind != "cosine":
        raise ValueError(f"unknown weight_decay_schedule {kind!r}; choose 'constant' or 'cosine'")
    if total_steps < 1:
        raise ValueError("weight_decay_schedule='cosine' runs over the whole run: pass its total_steps")
    start, end, total = config.weight_decay, config.weight_decay_end, int(total_steps)

    def rate(count):
        progress = jnp.minimum(count, total) / total
        return end + 0.5 * (start - end) * (1.0 + jnp.cos(jnp.pi * progress))

    return rate


def make_optimizer(config, schedule: optax.Schedule, total_steps: int = 0) -> optax.GradientTransformation:
    """The config's optimiser; `total_steps` sizes a weight-decay schedule (weight_decay_schedule='cosine')."""
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
    if config.weight_decay or config.get("weight_decay_schedule", "constant") != "constant":
        # Decoupled (AdamW-style): lr * wd * w, added after the adaptive scaling.
        parts.append(optax.add_decayed_weights(weight_decay_rate(config, total_steps), mask=decay_mask))
    parts.append(optax.scale_by_learning_rate(schedule))
    return optax.chain(*parts)


def freeze(tx: optax.GradientTransformation, frozen: tuple[str, ...]) -> optax.GradientTransformation:
    """`tx` for every parameter except the top-level subtrees named in `frozen`, whose update is zero.

    A zero gradient alone would not do: the decoupled weight decay (added inside `tx`) would still shrink
    them, and a clip by global norm would still count them. So `tx` never sees them (nor keeps state for
    them). They are taken out of the tree rather than masked (optax.multi_transform): its placeholders
    would sit inside the parameters' logical-axis boxes, where the shardings of the state are read."""
    if not frozen:
        return tx

    def trained(tree):
        missing = [name for name in frozen if name not in tree]
        if missing:
            raise KeyError(f"frozen subtrees {missing} are not among the parameters' {sorted(tree)}")
        return {name: subtree for name, subtree in tree.items() if name not in frozen}

    def update(updates, state, params=None):
        new, state = tx.update(trained(updates), state, None if params is None else trained(params))
        return {**new, **{name: jax.tree.map(jnp.zeros_like, updates[name]) for name in frozen}}, state

    return optax.GradientTransformation(lambda params: tx.init(trained(params)), update)
