"""DINO's formulas (Caron et al. 2021, Algorithm 1 and Section 3): the loss, the teacher's and the centre's
moving averages, the two schedules, and the collapse monitors. Pure functions of arrays; the objective
(vitjax/objectives/dino.py) wires them into a train step.

    P_t = softmax((t - c) / tau_t)        teacher: centred, sharpened (tau_t ~ 0.04-0.07)
    log P_s = log_softmax(s / tau_s)      student (tau_s = 0.1)
    loss = mean over pairs (teacher global view a, student view v != a) of mean_batch sum_k -P_t log P_s
    c <- m c + (1 - m) mean_batch(t)      centre, m = 0.9, from this step's teacher outputs (both views)
    theta_t <- l theta_t + (1 - l) theta_s, l = 1 - (1 - l0) (cos(pi k / K) + 1) / 2   (0.996 -> 1)

As the official code (facebookresearch/dino, main_dino.py's DINOLoss and utils.cosine_scheduler): the
loss averages over pairs (the paper's pseudo-code halves its two terms), the momentum schedule is indexed
by the update k of K in the run, and the teacher temperature is indexed by epoch: linspace(warm-up
temperature, temperature, W) over the first W epochs (both ends included), then the temperature.
Tests: `python -m pytest tests/objectives/test_dino_formulas.py`.
"""
import jax
import jax.numpy as jnp
import numpy as np


def dino_loss(student_out, teacher_out, centre, teacher_temp, student_temp):
    """The mean over (teacher view a, student view v != a) of the batch-mean cross-entropy.

    `student_out` [views, batch, K] (the global views first, in the teacher's order), `teacher_out`
    [global views, batch, K], `centre` [1, K] or [K]. The teacher's side carries no gradient."""
    teacher = jax.nn.softmax(jax.lax.stop_gradient(teacher_out - centre).astype(jnp.float32) / teacher_temp, -1)
    log_student = jax.nn.log_softmax(student_out.astype(jnp.float32) / student_temp, -1)
    # cross[a, v] = mean over the batch of -sum_k P_t[a] log P_s[v]
    cross = -jnp.einsum("abk,vbk->av", teacher, log_student) / teacher.shape[1]
    views = np.arange(student_out.shape[0])
    same = views[None, :] == np.arange(teacher_out.shape[0])[:, None]  # a student view the teacher also saw
    return jnp.sum(jnp.where(same, 0.0, cross)) / np.sum(~same)


def updated_centre(centre, teacher_out, momentum):
    """m c + (1 - m) times the mean of the teacher outputs [..., K] over every view and example."""
    batch_centre = jnp.mean(teacher_out.reshape(-1, teacher_out.shape[-1]).astype(jnp.float32), axis=0)
    return centre * momentum + batch_centre * (1.0 - momentum)


def ema(teacher, student, momentum):
    """theta_t <- l theta_t + (1 - l) theta_s, leaf by leaf (the student's values, never its gradient)."""
    return jax.tree.map(lambda t, s: t * momentum + jax.lax.stop_gradient(s) * (1.0 - momentum), teacher, student)


def teacher_momentum(step, total_steps: int, base: float = 0.996, final: float = 1.0):
    """l at update `step` (0-based) of `total_steps`: final + (base - final) (1 + cos(pi step / total)) / 2."""
    progress = jnp.asarray(step, jnp.float32) / max(int(total_steps), 1)
    return final + 0.5 * (base - final) * (1.0 + jnp.cos(jnp.pi * progress))


def teacher_temperature(epoch, temperature: float, warmup_temperature: float, warmup_epochs: int):
    """tau_t in `epoch` (0-based): the official linspace(warm-up, final, W)[epoch] for epoch < W, then final."""
    epoch = jnp.asarray(epoch, jnp.float32)
    if warmup_epochs <= 0:
        return jnp.full_like(epoch, temperature)
    ramp = warmup_temperature + (temperature - warmup_temperature) * epoch / max(warmup_epochs - 1, 1)
    return jnp.where(epoch < warmup_epochs, ramp, temperature)


def entropy(log_probs):
    """Mean over rows of -sum_k p log p (nats)."""
    return jnp.mean(-jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1))


def collapse_monitors(teacher_out, centre, teacher_temp, loss, embeddings) -> dict:
    """What shows collapse, from one step's outputs (no gradient):

    - teacher_entropy: mean entropy of P_t (nats). log K: every output uniform (collapse onto the
      centre); 0: every output one-hot (one prototype dominates).
    - teacher_kl_to_centre: mean KL(softmax(t / tau_t) || softmax(c / tau_t)): how far the teacher's
      uncentred outputs sit from their running mean; 0 when each output is the centre, whatever the input.
    - teacher_student_kl: loss - teacher_entropy, the paper's Fig. 7 quantity: the mean KL(P_t || P_s)
      over the loss's pairs (each teacher row is in the same number of pairs, so their mean entropy is
      teacher_entropy). 0: the student copies the teacher, as in a collapse.
    - embedding_std: the std over the batch of each dimension of the L2-normalised backbone embeddings
      [rows, D], averaged over dimensions; 0 at collapse, about 1/sqrt(D) for embeddings spread over the sphere.
    """
    teacher_out = jax.lax.stop_gradient(teacher_out.astype(jnp.float32))
    flat = teacher_out.reshape(-1, teacher_out.shape[-1])
    centred = jax.nn.log_softmax((flat - centre) / teacher_temp, -1)
    raw = jax.nn.log_softmax(flat / teacher_temp, -1)
    of_centre = jax.nn.log_softmax(jnp.reshape(centre, (1, -1)) / teacher_temp, -1)
    kl_to_centre = jnp.mean(jnp.sum(jnp.exp(raw) * (raw - of_centre), axis=-1))
    teacher_entropy = entropy(centred)
    normalised = embeddings.astype(jnp.float32)
    normalised = normalised / jnp.maximum(jnp.linalg.norm(normalised, axis=-1, keepdims=True), 1e-12)
    return {"teacher_entropy": teacher_entropy, "teacher_kl_to_centre": kl_to_centre,
            "teacher_student_kl": jax.lax.stop_gradient(loss) - teacher_entropy,
            "embedding_std": jnp.mean(jnp.std(jax.lax.stop_gradient(normalised), axis=0))}
