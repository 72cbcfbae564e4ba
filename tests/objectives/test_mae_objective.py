"""The MAE objective (vitjax/objectives/mae.py): its loss is mae_loss of the model's output under the
step's own mask and dropout keys, its evaluation is deterministic and counts each real example once,
and configs pairing it with another model (or the MAE model with another objective) are refused
before JAX starts, naming the fix."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.train import tiny_config
from vitjax import models
from vitjax.objectives.base import Selection, StepInfo
from vitjax.objectives.mae import MAE
from vitjax.models.mae import mae_loss
from vitjax.train import checks, step as steps, trainer

IMAGE = (8, 8, 3)
PATCH = 4


def _model(**fields):
    return models.build("mae", 10, variant=None, patch_size=PATCH, width=16, depth=1, num_heads=2, mlp_dim=32,
                        decoder_width=8, decoder_depth=1, decoder_heads=2, decoder_mlp_dim=16, mask_ratio=0.5,
                        **fields)


def _params(model):
    return model.init(jax.random.key(0), jnp.zeros((1, *IMAGE)), train=False)["params"]


def _images(size=6, seed=0):
    return np.random.default_rng(seed).normal(size=(size, *IMAGE)).astype(np.float32)


@pytest.mark.parametrize("norm_pix_loss", [True, False])
def test_the_loss_is_mae_loss_of_the_models_output_under_the_steps_mask_key(norm_pix_loss):
    model = _model(norm_pix_loss=norm_pix_loss)
    objective = MAE(model)
    params, images, rng = _params(model), _images(), jax.random.key(3)
    loss, metrics = objective.loss(params, None, {"image": images}, rng, StepInfo(jnp.int32(0)))
    dropout_key, mask_key = jax.random.split(rng)
    pred, mask = model.apply({"params": params}, images, train=True, rngs={"dropout": dropout_key, "mask": mask_key})
    assert float(loss) == pytest.approx(float(mae_loss(images, pred, mask, PATCH, norm_pix_loss)), rel=1e-6)
    assert float(metrics["loss_visible"]) == pytest.approx(
        float(mae_loss(images, pred, 1.0 - mask, PATCH, norm_pix_loss)), rel=1e-6)
    # Another step's key draws other masks, so another loss.
    other, _ = objective.loss(params, None, {"image": images}, jax.random.key(4), StepInfo(jnp.int32(1)))
    assert float(other) != float(loss)


def test_the_train_step_draws_masks_from_the_step_so_repeats_are_identical():
    """The step's key is fold_in(seed, step): the same state, batch and seed give the same update."""
    import optax

    model = _model()
    tx = optax.adam(1e-3)
    step = jax.jit(steps.make_step(MAE(model), tx, lambda s: 1e-3, grad_accum_steps=1))
    state = steps.create_state(_params(model), tx)
    batch = {"image": _images(), "labels": np.zeros((6, 10), np.float32)}
    (a, ma), (b, mb) = step(state, batch, jax.random.key(1)), step(state, batch, jax.random.key(1))
    assert float(ma["loss"]) == float(mb["loss"]) and "loss_visible" in ma
    for x, y in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params)):
        np.testing.assert_array_equal(x, y)


def test_evaluation_is_the_masked_loss_per_real_example_with_a_fixed_key():
    model = _model()
    objective = MAE(model)
    assert objective.selection == Selection("loss", higher_is_better=False)
    assert objective.selection.improves(0.5, 0.6) and not objective.selection.improves(0.6, 0.6)
    params, images = _params(model), _images()
    batch = {"image": images, "label": np.zeros(6, np.int64), "mask": np.array([1, 1, 1, 1, 0, 0], bool)}
    sums = jax.jit(objective.eval_sums)(params, batch, jax.random.key(7))
    again = jax.jit(objective.eval_sums)(params, batch, jax.random.key(7))
    assert set(sums) == {"loss"} and float(sums["loss"]) == float(again["loss"])
    pred, mask = model.apply({"params": params}, images, train=False, rngs={"mask": jax.random.key(7)})
    # Every example has the same number of masked patches, so the mean over the four real ones is
    # mae_loss of those four; the padding rows add nothing.
    assert float(sums["loss"]) / 4 == pytest.approx(float(mae_loss(images[:4], pred[:4], mask[:4], PATCH)), rel=1e-5)


def test_the_mae_objective_has_no_class_logits():
    with pytest.raises(NotImplementedError, match="predicts pixels"):
        MAE(_model()).eval_logits(None, None)


@pytest.mark.parametrize("model_name, objective, message", [
    ("vit", "mae", "objective='mae' trains model_name='mae', got model_name='vit': set --config.model_name=mae"),
    ("mae", "supervised", "model_name='mae' is trained by objective='mae' only, got objective='supervised': "
                          "set --config.objective=mae"),
    ("mae", "distillation", "set --config.objective=mae"),
])
def test_mismatched_objective_and_model_are_refused_before_jax_starts(model_name, objective, message):
    config = tiny_config.get_config("model=mae")
    config.model_name, config.objective = model_name, objective
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        checks.config(config)
    with pytest.raises(ValueError, match="set --config"):
        trainer.plan(config)  # plan validates first of all


def test_the_tiny_mae_config_plans():
    p = trainer.plan(tiny_config.get_config("model=mae"))
    assert isinstance(p.objective, MAE) and isinstance(p.model, models.MAE)
