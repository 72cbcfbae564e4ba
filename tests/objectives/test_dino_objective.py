"""The DINO objective (vitjax/objectives/dino.py) inside the real train step: the teacher and the centre
move by their formulas after an update, the optimiser never holds the teacher, no gradient reaches the
teacher or the centre, the prototypes are frozen in the first epoch; its schedules follow the step;
bad settings are refused before anything is compiled, naming the fix."""
import re

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from tests.train import tiny_config
from vitjax import rundir
from vitjax.objectives import dino_formulas as formulas, multicrop
from vitjax.objectives.base import EXTRA_INPUTS, StepInfo
from vitjax.train import step as steps, trainer


def _config(**dino):
    """The tiny DINO config on 8x8 grey images: 8 px global crops, 2 local crops of 4 px (one patch), the
    photometric augmentations on."""
    c = tiny_config.get_config("model=dino,steps=20")
    c.data.synthetic.image_shape = (8, 8, 1)
    c.dino.local_crop_size = 4
    c.dino.photometric = True
    c.dino.update(dino)
    return c


@pytest.fixture(scope="module")
def setup():
    config = _config()
    p = trainer.plan(config)
    params = nn.unbox(p.model.init(jax.random.key(0), jnp.zeros((1, 8, 8, 1)))["params"])
    images = np.random.default_rng(0).normal(size=(config.batch_size, 8, 8, 1)).astype(np.float32)
    return p.objective, params, {"image": jnp.asarray(images)}


def test_a_step_moves_teacher_and_centre_by_their_formulas_and_the_optimiser_never_holds_the_teacher(setup):
    objective, params, batch = setup
    tx = optax.adam(1e-2)
    state = steps.create_state(params, tx, objective.init_extra(params, jax.random.key(1)))
    assert jax.tree.structure(state.opt_state) == jax.tree.structure(tx.init(params))  # no teacher in it
    key = jax.random.key(5)
    new, metrics = jax.jit(steps.make_step(objective, tx, lambda s: 1e-2, grad_accum_steps=1))(state, batch, key)
    assert EXTRA_INPUTS not in metrics and {"teacher_entropy", "teacher_kl_to_centre", "teacher_student_kl",
                                            "embedding_std", "teacher_temperature", "teacher_momentum"} <= set(metrics)
    assert int(new.step) == 1 and bool(metrics["finite"])
    assert jax.tree.structure(new.opt_state) == jax.tree.structure(tx.init(params))

    # The teacher's outputs on the step's own global views (its key: fold_in(key, step), split as the loss does).
    crop_key = jax.random.split(jax.random.fold_in(key, 0), 3)[0]
    views = jax.jit(multicrop.views, static_argnums=2)(crop_key, batch["image"], objective.crops)
    teacher_out, _ = jax.jit(lambda t, v: objective._apply(t, v, train=False))(params, views.global_crops)
    want_centre = 0.9 * np.zeros((1, 64)) + 0.1 * np.asarray(teacher_out).reshape(-1, 64).mean(axis=0)
    np.testing.assert_allclose(new.extra["centre"], want_centre, rtol=1e-5, atol=1e-6)
    momentum = 0.996  # step 0 of the cosine
    for got, before, student in zip(jax.tree.leaves(new.extra["teacher"]), jax.tree.leaves(params),
                                    jax.tree.leaves(new.params)):
        np.testing.assert_allclose(got, momentum * before + (1 - momentum) * np.asarray(student), rtol=1e-6, atol=1e-7)
    assert float(metrics["teacher_momentum"]) == pytest.approx(momentum)


def test_no_gradient_reaches_the_teacher_or_the_centre_and_the_prototypes_wait_an_epoch(setup):
    objective, params, batch = setup
    extra = objective.init_extra(params, None)
    extra["centre"] = extra["centre"] + 0.3

    @jax.jit
    def grads(params, extra, step):
        loss = lambda p, e: objective.loss(p, e, batch, jax.random.key(2), StepInfo(step))[0]  # noqa: E731
        return jax.grad(loss, argnums=(0, 1))(params, extra)

    frozen_params, frozen_extra = grads(params, extra, jnp.int32(0))
    assert all(float(jnp.abs(g).max()) == 0 for g in jax.tree.leaves(frozen_extra))
    assert float(jnp.abs(frozen_params["dino_head"]["last_layer"]["kernel"]).max()) == 0
    assert float(jnp.abs(frozen_params["dino_head"]["Dense_0"]["kernel"]).max()) > 0
    assert objective.freeze_last_layer_steps == objective.steps_per_epoch == 16  # 512 examples, batch 32
    free_params, free_extra = grads(params, extra, jnp.int32(16))
    assert float(jnp.abs(free_params["dino_head"]["last_layer"]["kernel"]).max()) > 0
    assert all(float(jnp.abs(g).max()) == 0 for g in jax.tree.leaves(free_extra))


def test_schedules_follow_the_step_over_the_whole_run():
    objective = trainer.plan(_config(teacher_temp=0.07, warmup_teacher_temp=0.04,
                                     warmup_teacher_temp_epochs=3)).objective
    assert objective.total_steps == 20 and objective.steps_per_epoch == 16
    step = jnp.arange(60)
    want = formulas.teacher_temperature(step // 16, 0.07, 0.04, 3)
    np.testing.assert_array_equal(objective.temperature(step), want)
    assert float(objective.temperature(0)) == pytest.approx(0.04) and float(objective.temperature(48)) == pytest.approx(0.07)
    assert float(formulas.teacher_momentum(20, objective.total_steps)) == pytest.approx(1.0)


def test_the_flop_count_of_an_accumulating_step_lowers_its_loop_free_twin_on_every_crop_size():
    config = _config()
    config.grad_accum_steps = 2  # FLOPs then come from a twin with another model, which must take the crops too
    p = trainer.plan(config)
    flops = trainer.train_step_flops(config, p, None, jax.random.key(0))
    assert flops > 0


@pytest.mark.parametrize("change, message", [
    (dict(local_crop_size=6), "dino.local_crop_size=6 is not divisible by the patch size 4"),
    (dict(global_crop_size=10), "dino.global_crop_size=10 is not divisible by the patch size 4"),
    (dict(local_crop_scale=(0.5, 0.1)), "dino.local_crop_scale=(0.5, 0.1): use (low, high)"),
    (dict(teacher_temp=0.0), "dino.teacher_temp=0.0: use a temperature > 0"),
    (dict(centre_momentum=1.0), "dino.centre_momentum=1.0: use a momentum in [0, 1)"),
    (dict(local_crops=-1), "dino.local_crops=-1: use 0 or more local crops"),
    (dict(pixel_range=(1.0, -1.0)), "dino.pixel_range=(1.0, -1.0): use (low, high) with low < high"),
])
def test_bad_dino_settings_fail_before_compiling(tmp_path, change, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        trainer.train(_config(**change), str(tmp_path / "w"))
    assert not rundir.exists(str(tmp_path / "w"), rundir.CONFIG)


def test_photometric_augmentation_refuses_colour_images_naming_the_switch(tmp_path):
    config = _config()
    config.data.synthetic.image_shape = (8, 8, 3)
    with pytest.raises(ValueError, match=re.escape("these images have 3 channels: set dino.photometric=False")):
        trainer.train(config, str(tmp_path / "w"))
    assert not rundir.exists(str(tmp_path / "w"), rundir.CONFIG)


@pytest.mark.parametrize("model_name, objective, message", [
    ("vit", "dino", "objective='dino' trains model_name='dino'"),
    ("dino", "supervised", "model_name='dino' is trained by objective='dino' only"),
])
def test_dino_objective_and_model_come_together(tmp_path, model_name, objective, message):
    config = _config()
    config.model_name, config.objective = model_name, objective
    with pytest.raises(ValueError, match=re.escape(message)):
        trainer.train(config, str(tmp_path / "w"))
    assert not rundir.exists(str(tmp_path / "w"), rundir.CONFIG)
