"""The interactive evaluation (vitjax/segment/interactive.py's click_ious) on hand-made answers: a perfect
mask scores 1, an empty one 0, a known overlap its IoU; the mask shown is the one of highest predicted IoU;
clicks come from the error region and the previous logits are fed back."""
import jax
import jax.numpy as jnp
import numpy as np

from vitjax.segment import interactive

TARGETS = np.zeros((3, 8, 8), bool)
TARGETS[:, 2:6, 2:6] = True  # 16 pixels each
OVERLAP = np.zeros((8, 8), bool)
OVERLAP[2:6, 2:4] = True  # 8 of the 16: IoU 1/2


def _answering(masks, iou=None):
    """A decode that answers every prompt with fixed logits per target (`masks` bool [n, H, W])."""
    logits = jnp.where(jnp.asarray(masks), 4.0, -4.0)[:, None]
    calls = []

    def decode(points, labels, boxes, mask_input, multimask):
        calls.append(dict(points=points, labels=labels, boxes=boxes, mask_input=mask_input, multimask=multimask))
        count = 3 if multimask else 1
        answer = jnp.repeat(logits, count, axis=1)
        scores = jnp.ones((len(masks), count)) if iou is None else jnp.asarray(iou)[:, :count]
        return answer, scores

    return decode, calls


def test_miou_of_perfect_empty_and_half_overlapping_answers():
    answers = np.stack([TARGETS[0], np.zeros((8, 8), bool), OVERLAP])
    decode, _ = _answering(answers)
    ious = interactive.click_ious(decode, jnp.asarray(TARGETS), jax.random.key(0), clicks=(1, 3, 5))
    for prompt in ("1click", "3click", "5click", "box"):
        np.testing.assert_allclose(np.asarray(ious[prompt]), [1.0, 0.0, 0.5])


def test_the_shown_mask_is_the_answer_of_highest_predicted_iou():
    logits = np.stack([np.where(OVERLAP, 4.0, -4.0), np.where(TARGETS[0], 4.0, -4.0), np.full((8, 8), -4.0)])
    prediction = interactive.Prediction(jnp.asarray(logits[None]), jnp.asarray(logits[None]),
                                        jnp.asarray([[0.2, 0.7, 0.1]]))
    shown, _ = prediction.shown()
    np.testing.assert_array_equal(np.asarray(shown[0]), logits[1])


def test_rounds_add_error_clicks_and_feed_back_the_previous_logits():
    decode, calls = _answering(np.stack([OVERLAP] * 3))
    rounds = interactive.simulate(decode, jnp.asarray(TARGETS), jax.random.key(1), first="point", clicks=2)
    assert len(rounds) == 3 and [c["multimask"] for c in calls] == [True, False, False]
    assert calls[0]["mask_input"] is None and calls[2]["points"].shape == (3, 3, 2)
    np.testing.assert_array_equal(np.asarray(calls[1]["mask_input"][:, 0]), np.asarray(rounds[0].shown()[1]))
    added = np.asarray(calls[2]["points"][:, 1:], int)  # the two clicks: in the target, missed by OVERLAP
    missed = TARGETS[0] & ~OVERLAP
    assert all(missed[y, x] for x, y in added.reshape(-1, 2))
    assert (np.asarray(calls[2]["labels"][:, 1:]) == 1).all()


def test_the_box_evaluation_prompts_the_exact_bounding_box():
    decode, calls = _answering(TARGETS)
    interactive.click_ious(decode, jnp.asarray(TARGETS), jax.random.key(0), clicks=(1,))
    assert calls[-1]["points"] is None and not calls[-1]["multimask"]
    np.testing.assert_array_equal(np.asarray(calls[-1]["boxes"]), [[2, 2, 5, 5]] * 3)


def test_the_evaluation_repeats_from_its_key():
    decode, _ = _answering(np.stack([OVERLAP] * 3))
    first = interactive.click_ious(decode, jnp.asarray(TARGETS), jax.random.key(4))
    again = interactive.click_ious(decode, jnp.asarray(TARGETS), jax.random.key(4))
    assert all(np.array_equal(first[k], again[k]) for k in first)
