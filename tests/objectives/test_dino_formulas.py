"""DINO's formulas against numpy transcriptions written from the paper (Algorithm 1) and the official
code's description (main_dino.py: the multi-crop loss loop, the cosine momentum and per-epoch
temperature schedules), to 1e-6."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax.objectives import dino_formulas as f


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _algorithm_1(s1, s2, t1, t2, C, tps, tpt):
    """The paper's pseudo-code, line by line, in numpy (float64)."""
    def H(t, s):
        s = _softmax(s / tps, axis=1)
        t = _softmax((t - C) / tpt, axis=1)  # center + sharpen
        return -(t * np.log(s)).sum(axis=1).mean()

    loss = H(t1, s2) / 2 + H(t2, s1) / 2
    return loss


def _multicrop_loss(student, teacher, C, tps, tpt):
    """The official DINOLoss's loop: every teacher view against every student view but its own, averaged."""
    total, terms = 0.0, 0
    for iq, q in enumerate(teacher):
        q = _softmax((q - C) / tpt)
        for v, s in enumerate(student):
            if v == iq:
                continue
            total += np.mean(np.sum(-q * np.log(_softmax(s / tps)), axis=-1))
            terms += 1
    return total / terms


def _random(seed, *shape, scale=3.0):
    return np.random.default_rng(seed).normal(size=shape) * scale


def test_two_view_loss_is_algorithm_1():
    s1, s2, t1, t2 = (_random(i, 6, 32) for i in range(4))
    C = _random(9, 1, 32, scale=0.5)
    got = f.dino_loss(jnp.asarray(np.stack([s1, s2]), jnp.float32), jnp.asarray(np.stack([t1, t2]), jnp.float32),
                      jnp.asarray(C, jnp.float32), 0.04, 0.1)
    np.testing.assert_allclose(got, _algorithm_1(s1, s2, t1, t2, C, 0.1, 0.04), rtol=1e-6)


@pytest.mark.parametrize("local_views, tpt", [(0, 0.07), (3, 0.04), (8, 0.05)])
def test_multicrop_loss_is_the_official_loop(local_views, tpt):
    student = _random(1, 2 + local_views, 5, 48)
    teacher = _random(2, 2, 5, 48)
    C = _random(3, 1, 48, scale=0.5)
    got = f.dino_loss(jnp.asarray(student, jnp.float32), jnp.asarray(teacher, jnp.float32), jnp.asarray(C, jnp.float32),
                      tpt, 0.1)
    np.testing.assert_allclose(got, _multicrop_loss(student, teacher, C, 0.1, tpt), rtol=1e-6)


def test_the_teacher_side_of_the_loss_has_no_gradient():
    student, teacher = jnp.asarray(_random(1, 4, 3, 8)), jnp.asarray(_random(2, 2, 3, 8))
    centre = jnp.zeros((1, 8))
    grads = jax.grad(lambda s, t, c: f.dino_loss(s, t, c, 0.04, 0.1), argnums=(0, 1, 2))(student, teacher, centre)
    assert float(jnp.abs(grads[0]).max()) > 0
    assert float(jnp.abs(grads[1]).max()) == 0 and float(jnp.abs(grads[2]).max()) == 0


def test_centre_and_teacher_updates_are_their_formulas():
    centre, teacher_out = _random(4, 1, 16), _random(5, 2, 6, 16)
    want = 0.9 * centre + 0.1 * np.concatenate([teacher_out[0], teacher_out[1]]).mean(axis=0)  # Algorithm 1
    got = f.updated_centre(jnp.asarray(centre, jnp.float32), jnp.asarray(teacher_out, jnp.float32), 0.9)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    gt = {"a": _random(6, 3, 4), "b": {"c": _random(7, 5)}}
    gs = {"a": _random(8, 3, 4), "b": {"c": _random(9, 5)}}
    got = f.ema(jax.tree.map(jnp.asarray, gt), jax.tree.map(jnp.asarray, gs), 0.996)
    for g, t, s in zip(jax.tree.leaves(got), jax.tree.leaves(gt), jax.tree.leaves(gs)):
        np.testing.assert_allclose(g, 0.996 * t + (1 - 0.996) * s, rtol=1e-6, atol=1e-6)


def test_momentum_schedule_is_the_official_cosine_from_0996_to_1():
    total = 1000
    steps = np.arange(total + 1)
    want = 1 + 0.5 * (0.996 - 1) * (1 + np.cos(np.pi * steps / total))  # utils.cosine_scheduler, base -> final
    got = np.asarray(f.teacher_momentum(jnp.asarray(steps), total, 0.996))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got[0] == pytest.approx(0.996, abs=1e-7) and got[-1] == pytest.approx(1.0, abs=1e-7)
    assert got[total // 2] == pytest.approx(0.998, abs=1e-7)


@pytest.mark.parametrize("warmup_epochs", [0, 1, 30])
def test_teacher_temperature_is_the_official_per_epoch_linspace(warmup_epochs):
    epochs = 100
    want = np.concatenate([np.linspace(0.04, 0.07, warmup_epochs), np.ones(epochs - warmup_epochs) * 0.07])
    got = np.asarray(f.teacher_temperature(jnp.arange(epochs), 0.07, 0.04, warmup_epochs))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got[-1] == pytest.approx(0.07)
    if warmup_epochs:
        assert got[0] == pytest.approx(0.04)


def test_collapse_monitors():
    K = 32
    teacher_out, centre = _random(1, 2, 8, K), _random(2, 1, K, scale=0.5)
    student_out = _random(3, 5, 8, K)
    args = [jnp.asarray(a, jnp.float32) for a in (student_out, teacher_out, centre)]
    loss = f.dino_loss(*args, 0.04, 0.1)
    embeddings = _random(4, 16, 12)
    m = f.collapse_monitors(args[1], args[2], 0.04, loss, jnp.asarray(embeddings, jnp.float32))
    p_t = _softmax((teacher_out - centre) / 0.04)
    np.testing.assert_allclose(m["teacher_entropy"], np.mean(-np.sum(p_t * np.log(p_t), -1)), rtol=1e-5)
    kl = [np.mean(np.sum(p_t[a] * (np.log(p_t[a]) - np.log(_softmax(student_out[v] / 0.1))), -1))
          for a in range(2) for v in range(5) if v != a]
    np.testing.assert_allclose(m["teacher_student_kl"], np.mean(kl), rtol=1e-4, atol=1e-5)
    raw, of_centre = _softmax(teacher_out / 0.04), _softmax(centre / 0.04)
    np.testing.assert_allclose(m["teacher_kl_to_centre"], np.mean(np.sum(raw * np.log(raw / of_centre), -1)),
                               rtol=1e-4, atol=1e-5)
    unit = embeddings / np.linalg.norm(embeddings, axis=-1, keepdims=True)
    np.testing.assert_allclose(m["embedding_std"], np.mean(np.std(unit, axis=0)), rtol=1e-5)
    # Collapse onto the centre: every teacher output is the centre: uniform P_t (entropy log K), KL 0.
    collapsed = f.collapse_monitors(jnp.broadcast_to(args[2], (2, 8, K)), args[2], 0.04, loss,
                                    jnp.ones((16, 12)))
    assert float(collapsed["teacher_entropy"]) == pytest.approx(np.log(K), rel=1e-5)
    assert float(collapsed["teacher_kl_to_centre"]) == pytest.approx(0.0, abs=1e-5)
    assert float(collapsed["embedding_std"]) == pytest.approx(0.0, abs=1e-6)
