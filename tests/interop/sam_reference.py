"""Helpers of the segment-anything cross-checks (tests/interop/test_sam_weights.py, tests/segment/): the
reference `Sam` of a vitjax SAM's sizes, and random variables for every leaf of a vitjax SAM."""
import numpy as np
import pytest

from tests.interop.timm_reference import random_params

pytest.importorskip("torch")
pytest.importorskip("segment_anything")
from vitjax.interop import sam_weights  # noqa: E402

# A small SAM for CPU tests: one windowed block (its 8x8 grid padded to 9x9, windows of 3) and one global
# block, width 64, at 128x128; the released prompt encoder and decoder.
TINY = dict(variant=None, width=64, depth=2, num_heads=4, global_attn_indexes=(1,), window_size=3, image_size=128)


def reference_sam(model):
    """segment-anything's Sam of the vitjax `model`'s sizes (vitjax/interop/sam_weights.official_model)."""
    return sam_weights.official_model(model)


def random_variables(model, seed=0):
    """{"params", "constants"} with a random value in every leaf, the zero-initialised ones included."""
    constants = np.random.RandomState(seed + 1).standard_normal((2, model.prompt_width // 2)).astype(np.float32)
    return {"params": random_params(model, model.image_size, seed),
            "constants": {"prompt_encoder": {"gaussian_matrix": constants}}}
