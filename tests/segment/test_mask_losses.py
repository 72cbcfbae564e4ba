"""SAM's losses (vitjax/segment/mask_losses.py, vitjax/objectives/sam.py's round_losses) against their
formulas in numpy on hand-made masks: focal and dice, 20:1; the lowest of several answers' losses trained;
the IoU head's target the answer's actual IoU."""
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax.objectives.sam import round_losses
from vitjax.segment import mask_losses
from vitjax.segment.interactive import Prediction

TARGET = np.zeros((6, 6), bool)
TARGET[1:4, 2:5] = True


def _logits(seed=0):
    return np.random.default_rng(seed).normal(0, 3, (6, 6)).astype(np.float32)


def _numpy_focal(logits, target, alpha=0.25, gamma=2.0):
    p = 1 / (1 + np.exp(-logits.astype(np.float64)))
    t = target.astype(np.float64)
    p_right = np.where(t == 1, p, 1 - p)
    alpha_t = np.where(t == 1, alpha, 1 - alpha)
    return np.mean(-alpha_t * (1 - p_right) ** gamma * np.log(p_right))


def _numpy_dice(logits, target):
    p = 1 / (1 + np.exp(-logits.astype(np.float64)))
    return 1 - (2 * np.sum(p * target) + 1) / (np.sum(p) + np.sum(target) + 1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_focal_and_dice_losses_follow_their_formulas(seed):
    logits = _logits(seed)
    focal = float(mask_losses.focal_loss(jnp.asarray(logits), jnp.asarray(TARGET)))
    dice = float(mask_losses.dice_loss(jnp.asarray(logits), jnp.asarray(TARGET)))
    np.testing.assert_allclose(focal, _numpy_focal(logits, TARGET), rtol=1e-5)
    np.testing.assert_allclose(dice, _numpy_dice(logits, TARGET), rtol=1e-5)
    both = float(mask_losses.mask_loss(jnp.asarray(logits), jnp.asarray(TARGET)))
    np.testing.assert_allclose(both, 20 * _numpy_focal(logits, TARGET) + _numpy_dice(logits, TARGET), rtol=1e-5)


def test_a_confident_right_answer_costs_almost_nothing_and_a_wrong_one_much():
    right = jnp.where(jnp.asarray(TARGET), 20.0, -20.0)
    assert float(mask_losses.mask_loss(right, jnp.asarray(TARGET))) < 1e-6
    assert float(mask_losses.mask_loss(-right, jnp.asarray(TARGET))) > 10


def test_mask_iou_of_hand_made_masks():
    half = np.zeros((6, 6), bool)
    half[1:4, 2:4] = True  # 6 of the target's 9 pixels, nothing outside
    spill = TARGET.copy()
    spill[5, :] = True  # the target and 6 pixels more
    ious = mask_losses.mask_iou(jnp.asarray([TARGET, half, spill, np.zeros_like(TARGET)]), jnp.asarray(TARGET))
    np.testing.assert_allclose(np.asarray(ious), [1.0, 6 / 9, 9 / 15, 0.0])


def test_the_lowest_loss_answer_is_trained_and_every_iou_prediction_against_its_actual_iou():
    half = np.zeros((6, 6), bool)
    half[1:4, 2:4] = True
    answers = np.stack([np.where(half, 5.0, -5.0), np.where(TARGET, 5.0, -5.0), _logits(3)]).astype(np.float32)
    predicted_iou = np.array([0.1, 0.9, 0.3], np.float32)
    prediction = Prediction(jnp.asarray(answers[None]), jnp.asarray(answers[None]), jnp.asarray(predicted_iou[None]))
    mask_term, iou_term = round_losses(prediction, jnp.asarray(TARGET[None]))
    each = [20 * _numpy_focal(a, TARGET) + _numpy_dice(a, TARGET) for a in answers]
    np.testing.assert_allclose(float(mask_term[0]), min(each), rtol=1e-5)
    assert int(np.argmin(each)) == 1
    actual = np.array([(a > 0)[TARGET].sum() / ((a > 0) | TARGET).sum() for a in answers])
    assert actual[:2].tolist() == [6 / 9, 1.0]
    np.testing.assert_allclose(float(iou_term[0]), np.mean((predicted_iou - actual) ** 2), rtol=1e-5)
