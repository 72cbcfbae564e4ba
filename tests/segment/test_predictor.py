"""The SAM predictor (vitjax/segment/predictor.py, prompts.py): segment-anything's SamPredictor's answers from
the same weights, in the original image's coordinates; bad prompts refused before anything compiles; one
compilation per prompt shape. A small SAM at 128x128 (tests/interop/sam_reference.py)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("segment_anything")
from segment_anything import SamPredictor  # noqa: E402
from segment_anything.utils.transforms import ResizeLongestSide  # noqa: E402

from tests.interop.sam_reference import TINY, reference_sam  # noqa: E402
from tests.interop.timm_reference import jitter_timm, rel_err  # noqa: E402
from tests.models.compile_guard import no_compilation  # noqa: E402
from vitjax import models  # noqa: E402
from vitjax.interop import sam_weights  # noqa: E402
from vitjax.models.sam import resized_shape  # noqa: E402
from vitjax.segment.predictor import Predictor  # noqa: E402

TOL = 1e-4
ORIGINAL = (200, 150)  # (height, width) of the image the prompts refer to; resized to 128x96 for the encoder


@pytest.fixture(scope="module")
def predictors():
    """(vitjax Predictor, segment-anything SamPredictor) on the same weights and the same resized image."""
    model = models.SAM(**TINY)
    reference = jitter_timm(reference_sam(model), seed=11)
    resized = np.random.RandomState(0).uniform(0, 255, (128, 96, 3)).astype(np.float32)
    ours = Predictor(model, sam_weights.load(reference, model))
    ours.set_resized_image(resized, ORIGINAL)
    theirs = SamPredictor(reference)
    theirs.set_torch_image(torch.from_numpy(resized.transpose(2, 0, 1))[None], ORIGINAL)
    return ours, theirs


def _check_same(ours, theirs):
    for name, a, b in zip(("masks", "iou", "low_res_logits"), ours, theirs):
        b = b.numpy() if hasattr(b, "numpy") else b
        assert a.shape == b.shape, f"{name}: {a.shape} != {b.shape}"
        assert rel_err(a, b) <= TOL, f"{name}: relative error {rel_err(a, b):.3g}"


def test_one_prompt_at_a_time_equals_sam_predictor(predictors):
    ours, theirs = predictors
    points, labels = np.array([[60.0, 80.0], [120.0, 150.0], [10.0, 190.0]]), np.array([1, 0, 1])
    first = ours.predict(points, labels, return_logits=True)
    _check_same(first, theirs.predict(points, labels, return_logits=True))
    box, previous = np.array([20.0, 30.0, 120.0, 170.0]), np.array(first[2][:1])  # one mask's logits back in
    answer = ours.predict(box=box, mask_input=previous, multimask_output=False, return_logits=True)
    _check_same(answer, theirs.predict(box=box, mask_input=previous, multimask_output=False, return_logits=True))


def test_a_batch_of_prompts_equals_sam_predictor_and_each_prompt_alone(predictors):
    ours, theirs = predictors
    points = np.array([[[30.0, 40.0], [100.0, 120.0]], [[140.0, 10.0], [75.0, 199.0]]])
    labels, boxes = np.array([[1, 0], [1, 1]]), np.array([[5.0, 5.0, 90.0, 110.0], [60.0, 20.0, 149.0, 180.0]])
    batch = ours.predict(points, labels, boxes, return_logits=True)
    transform = theirs.transform
    as_tensor = lambda a: torch.from_numpy(np.asarray(a, np.float32))  # noqa: E731
    expected = theirs.predict_torch(as_tensor(transform.apply_coords(points, ORIGINAL)), torch.from_numpy(labels),
                                    as_tensor(transform.apply_boxes(boxes, ORIGINAL)), return_logits=True)
    _check_same(batch, expected)
    alone = ours.predict(points[1], labels[1], boxes[1], return_logits=True)
    for a, b in zip(alone, batch):
        np.testing.assert_allclose(a, b[1], rtol=1e-4, atol=1e-4)


def test_prompts_of_one_shape_compile_once_and_masks_are_the_logits_above_0(predictors):
    ours, theirs = predictors
    masks, _, _ = ours.predict(np.array([[10.0, 20.0]]), np.array([1]))
    assert masks.dtype == bool and masks.shape == (3, *ORIGINAL)
    logits = theirs.predict(np.array([[10.0, 20.0]]), np.array([1]), return_logits=True)[0]
    assert np.all((np.asarray(masks) == (logits > 0)) | (np.abs(logits) < 1e-3))  # rounding may flip a logit ~0
    with no_compilation():
        ours.predict(np.array([[140.0, 190.0]]), np.array([0]))


BAD_PROMPTS = [
    ("point_right_of_image", dict(point_coords=[[150.0, 20.0]], point_labels=[1]),
     r"point 0, \(x=150, y=20\), lies outside the 150x200 image"),
    ("point_above_image", dict(point_coords=[[10.0, -1.0]], point_labels=[1]), r"y in \[0, 200\)"),
    ("point_outside_in_batch", dict(point_coords=[[[1.0, 2.0]], [[3.0, 250.0]]], point_labels=[[1], [1]]),
     "point 0 of prompt 1"),
    ("nan_point", dict(point_coords=[[np.nan, 2.0]], point_labels=[1]), "NaN or infinite"),
    ("point_of_three_coords", dict(point_coords=[[1.0, 2.0, 3.0]], point_labels=[1]),
     r"\[N, 2\] \(x, y\) pixels .* got shape \(1, 3\)"),
    ("labels_fewer_than_points", dict(point_coords=[[1.0, 2.0], [3.0, 4.0]], point_labels=[1]),
     r"one label per point, shape \(2,\)"),
    ("label_2", dict(point_coords=[[1.0, 2.0]], point_labels=[2]), r"1 \(foreground\) or 0 \(background\); got 2"),
    ("label_minus_1", dict(point_coords=[[1.0, 2.0]], point_labels=[-1]), "got -1"),
    ("points_without_labels", dict(point_coords=[[1.0, 2.0]]), "without point_labels"),
    ("empty_box", dict(box=[50.0, 10.0, 50.0, 90.0]), "is empty"),
    ("inverted_box", dict(box=[60.0, 10.0, 50.0, 90.0]), r"is inverted: boxes are \(x0, y0, x1, y1\)"),
    ("box_outside", dict(box=[10.0, 10.0, 151.0, 90.0]), "reaches outside the 150x200 image"),
    ("box_of_three", dict(box=[10.0, 10.0, 50.0]), r"box must be \[4\]"),
    ("mask_without_axis", dict(mask_input=np.zeros((32, 32))), r"\[1, 32, 32\] .* Add the axis"),
    ("mask_of_other_size", dict(mask_input=np.zeros((1, 64, 64))), r"mask_input must be \[1, 32, 32\]"),
    ("batch_axis_mixed", dict(point_coords=[[1.0, 2.0]], point_labels=[1], box=[[1.0, 1.0, 9.0, 9.0]]),
     "disagree on the batch axis"),
    ("batch_sizes_differ",
     dict(point_coords=[[[1.0, 2.0]]] * 2, point_labels=[[1]] * 2, box=[[1.0, 1.0, 9.0, 9.0]] * 3),
     "disagree on the number of prompts"),
    ("no_prompt", dict(), "no prompt"),
]


@pytest.mark.parametrize("prompt,message", [case[1:] for case in BAD_PROMPTS],
                         ids=[case[0] for case in BAD_PROMPTS])
def test_bad_prompts_are_refused_before_compiling(predictors, prompt, message):
    ours, _ = predictors
    with no_compilation(), pytest.raises(ValueError, match=message):
        ours.predict(**prompt)


@pytest.mark.parametrize("size", [(200, 150), (480, 640), (1, 1000), (128, 96), (333, 129)])
def test_resized_shape_is_the_references(size):
    assert resized_shape(*size, 128) == ResizeLongestSide.get_preprocess_shape(*size, 128)
