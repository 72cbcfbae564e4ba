"""The objectives' losses against hand computations, and the train step they run in: the supervised
objective is the step it was before objectives existed, and a distillation teacher gets no gradient
and stays bit-identical however many steps (and micro-batches) the student takes."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from vitjax import models
from vitjax.objectives.base import StepInfo
from vitjax.objectives.distillation import Distillation
from vitjax.objectives.losses import cross_entropy
from vitjax.objectives.supervised import Supervised
from vitjax.objectives.teacher import Teacher
from vitjax.train import step as steps

IMAGE = (8, 8, 3)
CLASSES = 5


def _student():
    return models.build("vit", CLASSES, patch_size=4, width=16, depth=1, num_heads=2, mlp_dim=32,
                        distillation_token=True)


def _teacher():
    return models.build("vit", CLASSES, patch_size=4, width=24, depth=1, num_heads=2, mlp_dim=32)


def _params(model, seed):
    """Initialised parameters with random heads, so that logits (and argmaxes) are not all equal."""
    params = model.init(jax.random.key(seed), jnp.zeros((1, *IMAGE)), train=False)["params"]
    for head in ("head", "head_dist"):
        if head in params:
            params[head]["kernel"] = jax.random.normal(jax.random.key(seed + 7), params[head]["kernel"].shape)
    return params


def _batch(size=8, seed=0):
    rng = np.random.default_rng(seed)
    return {"image": rng.normal(size=(size, *IMAGE)).astype(np.float32),
            "labels": np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, size)]}


def _distillation(kind="hard", temperature=1.0, alpha=0.5):
    teacher = Teacher("", _teacher(), IMAGE, record={})
    return Distillation(_student(), teacher=teacher, kind=kind, temperature=temperature, alpha=alpha)


def _log_softmax(z):
    z = np.asarray(z, np.float64)
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _ce(logits, targets):
    return float(np.mean(-(np.asarray(targets, np.float64) * _log_softmax(logits)).sum(-1)))


def _by_hand(objective, params, teacher_params, batch):
    """(CLS logits, distillation logits, teacher logits) as float64 numpy, from the models directly."""
    cls, dist = objective.model.apply({"params": params}, batch["image"], train=True)
    teacher = objective.teacher.model.apply({"params": teacher_params}, batch["image"], train=False)
    return np.asarray(cls), np.asarray(dist), np.asarray(teacher)


def test_hard_distillation_loss_is_half_label_ce_plus_half_ce_against_the_teachers_argmax():
    objective = _distillation("hard")
    params, teacher_params, batch = _params(_student(), 0), _params(_teacher(), 1), _batch()
    loss, metrics = jax.jit(objective.loss)(params, {"teacher": teacher_params}, batch, jax.random.key(0),
                                            StepInfo(jnp.int32(0)))
    cls, dist, teacher = _by_hand(objective, params, teacher_params, batch)
    teacher_labels = np.eye(CLASSES)[np.argmax(teacher, -1)]
    assert len(set(np.argmax(teacher, -1))) > 1  # the teacher's labels are not all one class
    expected = 0.5 * _ce(cls, batch["labels"]) + 0.5 * _ce(dist, teacher_labels)
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    assert float(metrics["loss_distillation"]) == pytest.approx(_ce(dist, teacher_labels), rel=1e-5)


def test_soft_distillation_is_t_squared_kl_at_temperature_t_weighted_by_alpha():
    temperature, alpha = 3.0, 0.7
    objective = _distillation("soft", temperature, alpha)
    params, teacher_params, batch = _params(_student(), 2), _params(_teacher(), 3), _batch(seed=1)
    loss, _ = jax.jit(objective.loss)(params, {"teacher": teacher_params}, batch, jax.random.key(0),
                                      StepInfo(jnp.int32(0)))
    cls, dist, teacher = _by_hand(objective, params, teacher_params, batch)
    log_p_teacher, log_p_student = _log_softmax(np.asarray(teacher) / temperature), _log_softmax(
        np.asarray(dist) / temperature)
    kl = float(np.mean((np.exp(log_p_teacher) * (log_p_teacher - log_p_student)).sum(-1)))
    expected = (1 - alpha) * _ce(cls, batch["labels"]) + alpha * temperature ** 2 * kl
    assert kl > 1e-3
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def _leaves(tree):
    return [np.asarray(leaf) for leaf in jax.tree.leaves(tree)]


@pytest.mark.parametrize("accum", [1, 2])
def test_the_teacher_gets_no_gradient_and_stays_bit_identical_over_train_steps(accum):
    objective = _distillation("soft", 2.0)
    params, teacher_params = _params(_student(), 4), _params(_teacher(), 5)
    extra = {"teacher": teacher_params}
    grads, _ = jax.grad(objective.loss, argnums=1, has_aux=True)(params, extra, _batch(), jax.random.key(0),
                                                                 StepInfo(jnp.int32(0)))
    assert all(not leaf.any() for leaf in _leaves(grads))  # stop_gradient: nothing flows into the teacher

    tx = optax.adamw(1e-2)
    train_step = jax.jit(steps.make_step(objective, tx, optax.constant_schedule(1e-2), grad_accum_steps=accum))
    state = steps.create_state(params, tx, extra)
    before = _leaves(teacher_params)
    for index in range(3):
        state, metrics = train_step(state, _batch(seed=index), jax.random.key(1))
        assert int(metrics["finite"]) == 1
    for after, was in zip(_leaves(state.extra["teacher"]), before):
        np.testing.assert_array_equal(after, was)
    assert any((a != b).any() for a, b in zip(_leaves(state.params), _leaves(params)))  # the student moved
    # The optimiser holds moments of the student's parameters only.
    assert jax.tree.structure(state.opt_state[0].mu) == jax.tree.structure(params)
    assert {"loss_labels", "loss_distillation", "agreement_with_teacher"} <= metrics.keys()


def _pre_objective_train_step(model, tx, label_smoothing):
    """The train step as vitjax/train/step.py wrote it before objectives (one micro-batch), kept as the
    reference the supervised objective must reproduce bit for bit."""
    def loss_fn(params, images, labels, rng):
        logits = model.apply({"params": params}, images, train=True, rngs={"dropout": rng})
        return cross_entropy(logits, labels, label_smoothing)

    grad_fn = jax.value_and_grad(loss_fn)

    def train_step(params, opt_state, step, batch, seed_key):
        rng = jax.random.fold_in(seed_key, step)
        loss, grads = grad_fn(params, batch["image"], batch["labels"], rng)
        finite = jnp.isfinite(loss) & jnp.isfinite(optax.tree.norm(grads))

        def apply_update(operands):
            params, opt_state = operands
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state

        params, opt_state = jax.lax.cond(finite, apply_update, lambda operands: operands, (params, opt_state))
        return params, opt_state, loss

    return train_step


def test_supervised_step_is_the_step_before_objectives():
    model = models.build("vit", CLASSES, patch_size=4, width=16, depth=1, num_heads=2, mlp_dim=32,
                         dropout_rate=0.1)
    params = _params(model, 8)
    tx, seed_key = optax.adamw(1e-2), jax.random.key(3)
    reference = jax.jit(_pre_objective_train_step(model, tx, 0.1))
    train_step = jax.jit(steps.make_step(Supervised(model, label_smoothing=0.1), tx, optax.constant_schedule(1e-2),
                                               grad_accum_steps=1))
    state = steps.create_state(params, tx)
    assert state.extra is None and len(jax.tree.leaves(state)) == 2 + 3 * len(jax.tree.leaves(params)) + 1
    ref_params, ref_opt = params, tx.init(params)
    for index in range(3):
        batch = _batch(seed=index)
        state, metrics = train_step(state, batch, seed_key)
        ref_params, ref_opt, ref_loss = reference(ref_params, ref_opt, index, batch, seed_key)
        assert float(metrics["loss"]) == float(ref_loss)
    for got, want in zip(_leaves(state.params) + _leaves(state.opt_state), _leaves(ref_params) + _leaves(ref_opt)):
        np.testing.assert_array_equal(got, want)


def test_distillation_eval_logits_are_the_mean_of_both_heads():
    objective = _distillation()
    params, images = _params(_student(), 6), _batch()["image"]
    cls, dist = objective.model.apply({"params": params}, images, train=True)
    np.testing.assert_allclose(objective.eval_logits(params, images), (cls + dist) / 2, rtol=1e-6, atol=1e-6)
    assert not np.allclose(cls, dist)
