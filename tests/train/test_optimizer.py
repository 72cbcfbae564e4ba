"""The optimiser a config describes, each option against an independent computation.

The references here are written from the formulas, not from vitjax's code: a numpy schedule (linear
warmup from 0, then cosine / linear decay to `end_lr` or constant), and a float64 numpy optimiser
(global-norm clipping, Adam with bias correction, SGD with heavy-ball or Nesterov momentum, decoupled
weight decay on kernels only, lr of the step's count). vitjax's optax chain runs in float32 beside it.
"""
import math
import os

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import traverse_util

from vitjax import durations as durations_lib, models
from vitjax.config import base, load_config
from vitjax.train import optimizer

from tests.paths import ROOT


def _config(**values):
    c = base()
    for key, value in values.items():
        if key == "optimizer":
            c.optimizer.update(value)
        else:
            setattr(c, key, value)
    return c


# --- Durations: epochs and examples become steps -------------------------------------------------

def _steps(num_train=1000, batch_size=100, prefix="total", required=True, **durations):
    c = _config(**durations)
    return durations_lib.steps_of(c, prefix, num_train_examples=num_train, batch_size=batch_size, required=required)


@pytest.mark.parametrize("durations, num_train, batch_size, expected", [
    (dict(total_steps=37), 1000, 100, 37),
    (dict(total_epochs=2.0), 1000, 100, 20),
    (dict(total_epochs=2.5), 1000, 128, 20),  # 2500 / 128 = 19.53: a partial last batch is a step
    (dict(total_epochs=0.5), 1000, 100, 5),
    (dict(total_examples=1000), 1000, 128, 8),  # 7.8 -> 8
    (dict(total_examples=1280), 60000, 128, 10),
    # 8.3 * 60000 is 498000.00000000006 in floating point: its ceiling must not add a step.
    (dict(total_epochs=8.3), 60000, 100, 4980),
])
def test_epochs_and_examples_become_whole_steps(durations, num_train, batch_size, expected):
    assert _steps(num_train, batch_size, **durations) == expected


def test_the_default_config_trains_7_epochs_of_fashion_mnist_in_3282_steps():
    # configs/fashion_mnist/vit.py's docstring: "7 epochs (3,282 steps of 128)"; :long "40 epochs (18,750".
    for arg, expected in (("", 3282), (":long", 18750)):
        c = load_config(os.path.join(ROOT, "configs", "fashion_mnist", f"vit.py{arg}"))
        assert c.total_steps == 0 and c.total_epochs > 0, "the default config trains by epochs"
        assert durations_lib.steps_of(c, "total", num_train_examples=60_000, batch_size=c.batch_size,
                                  required=True) == expected
        assert durations_lib.steps_of(c, "warmup", num_train_examples=60_000, batch_size=c.batch_size,
                                  required=False) == 200


def test_warmup_in_epochs_and_no_warmup():
    assert _steps(prefix="warmup", required=False, warmup_epochs=0.25) == 3  # 250 / 100 -> 3
    assert _steps(prefix="warmup", required=False) == 0


@pytest.mark.parametrize("durations, required, message", [
    (dict(total_steps=10, total_epochs=1.0), True, "set only one of total_steps, total_epochs"),
    (dict(total_epochs=1.0, total_examples=5), True, "set only one of total_epochs, total_examples"),
    (dict(), True, "set one of total_steps, total_epochs or total_examples"),
    (dict(total_epochs=-1.0), True, "total_epochs must be >= 0, got -1.0"),
])
def test_ambiguous_missing_or_negative_durations_fail(durations, required, message):
    with pytest.raises(ValueError, match=message):
        _steps(required=required, **durations)


# --- Learning-rate schedules ---------------------------------------------------------------------

def reference_lr(t, *, lr, end_lr, schedule, total, warmup):
    """Linear warmup from 0 to lr over `warmup` steps, then the decay over the remaining steps."""
    if t < warmup:
        return lr * t / warmup
    span = max(total - warmup, 1)
    done = min(t - warmup, span) / span
    if schedule == "cosine":
        return end_lr + (lr - end_lr) * 0.5 * (1 + math.cos(math.pi * done))
    if schedule == "linear":
        return lr + (end_lr - lr) * done
    return lr


@pytest.mark.parametrize("schedule", ["cosine", "linear", "constant"])
@pytest.mark.parametrize("warmup", [0, 3])
@pytest.mark.parametrize("end_lr", [0.0, 2e-4])
def test_schedule_matches_the_formula_at_every_step(schedule, warmup, end_lr):
    total, lr = 10, 1e-3
    fn = optimizer.learning_rate_schedule(_config(schedule=schedule, lr=lr, end_lr=end_lr), total, warmup)
    for t in range(0, total + 4):  # past the end it stays at end_lr (cosine, linear) or lr (constant)
        expected = reference_lr(t, lr=lr, end_lr=end_lr, schedule=schedule, total=total, warmup=warmup)
        assert float(fn(t)) == pytest.approx(expected, rel=1e-5, abs=1e-10), (t, schedule)


def test_schedule_whose_warmup_is_the_whole_run():
    fn = optimizer.learning_rate_schedule(_config(schedule="cosine", lr=1e-3, end_lr=0.0), 4, 4)
    assert [float(fn(t)) for t in range(4)] == pytest.approx([0, 2.5e-4, 5e-4, 7.5e-4])


def test_unknown_schedule_fails_naming_the_choices():
    with pytest.raises(ValueError, match=r"unknown schedule 'step'; choose 'cosine', 'linear', 'constant' or 'wsd'"):
        optimizer.learning_rate_schedule(_config(schedule="step"), 10, 0)


def reference_wsd(t, *, lr, end_lr, total, warmup, cooldown):
    """Warmup-stable-decay: linear warmup, lr held, then a linear decay to end_lr over the last `cooldown` steps."""
    if t < warmup:
        return lr * t / warmup
    start = total - cooldown
    if t < start:
        return lr
    return lr + (end_lr - lr) * min(t - start, cooldown) / cooldown


@pytest.mark.parametrize("total,fraction,cooldown", [(20, 0.2, 4), (50, 0.25, 12), (7, 0.3, 2)])
@pytest.mark.parametrize("end_lr", [0.0, 1e-4])
def test_wsd_holds_the_rate_then_decays_over_its_cooldown(total, fraction, cooldown, end_lr):
    c = _config(schedule="wsd", lr=1e-3, end_lr=end_lr, cooldown_fraction=fraction)
    assert optimizer.cooldown_steps(c, total) == cooldown  # round(fraction x total)
    fn = optimizer.learning_rate_schedule(c, total, 3)
    for t in range(total + 3):
        expected = reference_wsd(t, lr=1e-3, end_lr=end_lr, total=total, warmup=3, cooldown=cooldown)
        assert float(fn(t)) == pytest.approx(expected, rel=1e-5, abs=1e-10), t


def test_wsd_runs_of_two_lengths_agree_until_the_shorter_ones_cooldown():
    """What lets a ladder's shorter budgets branch off one long run (vitjax/train/branch.py)."""
    c = _config(schedule="wsd", lr=1e-3, cooldown_fraction=0.2)
    short, long = optimizer.learning_rate_schedule(c, 100, 10), optimizer.learning_rate_schedule(c, 400, 10)
    assert [float(short(t)) for t in range(80)] == [float(long(t)) for t in range(80)]
    assert float(short(80)) == float(long(80)) == pytest.approx(1e-3) and float(short(90)) < float(long(90))
    assert optimizer.cooldown_steps(_config(schedule="cosine"), 100) == 0


# --- The weight-decay mask -----------------------------------------------------------------------

def _vit_params(**kwargs):
    model = models.ViT(num_classes=3, patch_size=4, width=16, depth=1, num_heads=2, mlp_dim=32,
                       representation_size=8, **kwargs)
    shapes = jax.eval_shape(lambda x: model.init(jax.random.key(0), x, train=False), jnp.zeros((1, 8, 8, 1)))
    return nn.unbox(shapes)["params"]


def _by_path(tree):
    return traverse_util.flatten_dict(tree, sep="/")


def _nest(flat):
    return traverse_util.unflatten_dict(flat, sep="/")


BLOCK = "Transformer/encoderblock_0/"
DECAYED = {"embedding/kernel", "pre_logits/kernel", "head/kernel",
           *(f"{BLOCK}MultiHeadDotProductAttention_0/{n}/kernel" for n in ("query", "key", "value", "out")),
           f"{BLOCK}MlpBlock_0/Dense_0/kernel", f"{BLOCK}MlpBlock_0/Dense_1/kernel"}


def test_weight_decay_mask_selects_exactly_the_kernels_by_path():
    mask = _by_path(optimizer.decay_mask(_vit_params()))
    assert {path for path, decayed in mask.items() if decayed} == DECAYED
    # Among those left alone: the attention biases [heads, head_dim] and the position embedding
    # [1, tokens, width], which a rule by number of dimensions would have decayed.
    for path in ("cls", "Transformer/posembed_input/pos_embedding", f"{BLOCK}MultiHeadDotProductAttention_0/query/bias",
                 f"{BLOCK}LayerNorm_0/scale", "Transformer/encoder_norm/bias", "head/bias"):
        assert mask[path] is False, path


def test_weight_decay_mask_of_a_scanned_stack_is_the_same():
    # nn.scan stacks the blocks: LayerNorm scales become [depth, width] but are still not decayed.
    mask = _by_path(optimizer.decay_mask(_vit_params(scan=True)))
    decayed = {path.replace("encoderblock/", "encoderblock_0/") for path, d in mask.items() if d}
    assert decayed == DECAYED


def test_zero_gradients_decay_only_the_kernels():
    # With no gradient the whole update is the decoupled decay: w <- w - lr * wd * w on kernels only.
    params = jax.tree.map(lambda s: jnp.full(s.shape, 0.5, s.dtype), _vit_params())
    c = _config(lr=0.1, schedule="constant", weight_decay=0.01, grad_clip_norm=0.0)
    tx = optimizer.make_optimizer(c, optimizer.learning_rate_schedule(c, 10, 0))
    updates, _ = tx.update(jax.tree.map(jnp.zeros_like, params), tx.init(params), params)
    for path, update in _by_path(updates).items():
        expected = -0.1 * 0.01 * 0.5 if path in DECAYED else 0.0
        np.testing.assert_allclose(np.asarray(update), expected, rtol=1e-6, err_msg=path)


def test_cosine_weight_decay_follows_the_official_dino_schedule_step_by_step():
    # With no gradient and lr 1 each update is -wd(t) * w on kernels: wd(t) is read off the updates.
    params = jax.tree.map(lambda s: jnp.full(s.shape, 0.5, s.dtype), _vit_params())
    c = _config(lr=1.0, schedule="constant", weight_decay=0.04, weight_decay_schedule="cosine",
                weight_decay_end=0.4, grad_clip_norm=0.0, optimizer=dict(name="sgd", momentum=0.0))
    tx = optimizer.make_optimizer(c, optimizer.learning_rate_schedule(c, 10, 0), total_steps=10)
    state, zeros = tx.init(params), jax.tree.map(jnp.zeros_like, params)
    update = jax.jit(tx.update)
    # The official utils.cosine_scheduler(0.04, 0.4, epochs, niter_per_ep), 10 iterations, no warm-up:
    official = 0.4 + 0.5 * (0.04 - 0.4) * (1 + np.cos(np.pi * np.arange(10) / 10))
    for t in range(10):
        updates, state = update(zeros, state, params)
        flat = _by_path(updates)
        np.testing.assert_allclose(np.asarray(flat["head/kernel"]), -official[t] * 0.5, rtol=1e-6, err_msg=str(t))
        assert not np.asarray(flat["head/bias"]).any()
    assert official[0] == pytest.approx(0.04) and official[-1] == pytest.approx(0.4, abs=0.01)


# --- The optimiser against a float64 reference ---------------------------------------------------

SHAPES = {"embedding/kernel": (2, 2, 1, 4), "embedding/bias": (4,), "cls": (1, 1, 4),
          "Transformer/posembed_input/pos_embedding": (1, 5, 4), "Transformer/LayerNorm_0/scale": (4,),
          "Transformer/Dense_0/kernel": (4, 3), "Transformer/Dense_0/bias": (3,)}


class ReferenceOptimizer:
    """The update rules in float64 numpy, written from their papers' formulas."""

    def __init__(self, c, lr_of_step):
        self.c, self.lr_of_step, self.t = c, lr_of_step, 0
        self.m, self.v, self.buf = {}, {}, {}

    def step(self, params, grads):
        c, opt = self.c, self.c.optimizer
        norm = math.sqrt(sum(float(np.sum(g ** 2)) for g in grads.values()))
        if c.grad_clip_norm and norm > c.grad_clip_norm:
            grads = {k: g * (c.grad_clip_norm / norm) for k, g in grads.items()}
        lr = self.lr_of_step(self.t)  # the first update uses the schedule's value at step 0
        self.t += 1
        new = {}
        for k, g in grads.items():
            if opt.name in ("adam", "adamw"):
                self.m[k] = opt.b1 * self.m.get(k, 0.0) + (1 - opt.b1) * g
                self.v[k] = opt.b2 * self.v.get(k, 0.0) + (1 - opt.b2) * g ** 2
                m_hat, v_hat = self.m[k] / (1 - opt.b1 ** self.t), self.v[k] / (1 - opt.b2 ** self.t)
                u = m_hat / (np.sqrt(v_hat) + opt.eps)
            elif opt.momentum:
                self.buf[k] = opt.momentum * self.buf.get(k, 0.0) + g
                u = g + opt.momentum * self.buf[k] if opt.nesterov else self.buf[k]
            else:
                u = g
            if c.weight_decay and k.endswith("kernel"):
                u = u + c.weight_decay * params[k]
            new[k] = params[k] - lr * u
        return new


OPTIMIZERS = {
    "adam_betas_eps": dict(optimizer=dict(name="adam", b1=0.8, b2=0.95, eps=1e-3), weight_decay=0.0,
                           grad_clip_norm=0.0),
    "adamw_clipped": dict(optimizer=dict(name="adamw"), weight_decay=0.1, grad_clip_norm=1.0),
    "adam_with_decay_is_adamw": dict(optimizer=dict(name="adam", eps=1e-6), weight_decay=0.05, grad_clip_norm=0.0),
    "sgd_plain": dict(optimizer=dict(name="sgd", momentum=0.0), weight_decay=0.0, grad_clip_norm=0.0),
    "sgd_momentum_clipped": dict(optimizer=dict(name="sgd", momentum=0.9, nesterov=False), weight_decay=0.0,
                                 grad_clip_norm=1.0),
    "sgd_nesterov_decay": dict(optimizer=dict(name="sgd", momentum=0.8, nesterov=True), weight_decay=0.01,
                               grad_clip_norm=0.0),
}


@pytest.mark.parametrize("which", sorted(OPTIMIZERS))
@pytest.mark.parametrize("schedule", ["cosine", "linear", "constant"])
def test_optimizer_steps_match_the_float64_reference(which, schedule):
    total, warmup = 6, 2
    c = _config(lr=0.05, end_lr=0.01, schedule=schedule, **OPTIMIZERS[which])
    lr_fn = optimizer.learning_rate_schedule(c, total, warmup)
    tx = optimizer.make_optimizer(c, lr_fn)
    rng = np.random.default_rng(0)
    params = initial = {k: rng.normal(size=s) for k, s in SHAPES.items()}
    ours = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), _nest(params))
    state = tx.init(ours)
    reference = ReferenceOptimizer(
        c, lambda t: reference_lr(t, lr=0.05, end_lr=0.01, schedule=schedule, total=total, warmup=warmup))
    for step in range(5):
        # Gradients of norm ~3-6: clipping at 1 is active; Adam's moments see varying signs.
        grads = {k: rng.normal(size=s) for k, s in SHAPES.items()}
        updates, state = tx.update(jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), _nest(grads)), state, ours)
        ours = jax.tree.map(lambda p, u: p + u, ours, updates)
        params = reference.step(params, grads)
        for path, value in _by_path(ours).items():
            np.testing.assert_allclose(np.asarray(value), params[path], rtol=2e-5, atol=1e-6,
                                       err_msg=f"{path} after step {step + 1}")
    # The comparison means something only if the steps moved the parameters well beyond the tolerance.
    assert max(float(np.max(np.abs(params[k] - initial[k]))) for k in SHAPES) > 1e-2


def test_unknown_optimizer_fails_naming_the_choices():
    with pytest.raises(ValueError, match=r"unknown optimizer 'lamb'; choose 'adam', 'adamw' or 'sgd'"):
        optimizer.make_optimizer(_config(optimizer=dict(name="lamb")), lambda t: 1e-3)
