"""Helpers of the segment-anything cross-checks (tests/interop/test_sam_weights.py, tests/segment/): the
reference `Sam` of a vitjax SAM's sizes, and random variables for every leaf of a vitjax SAM."""
import functools

import numpy as np
import pytest

from tests.interop.timm_reference import random_params

torch = pytest.importorskip("torch")
pytest.importorskip("segment_anything")
from segment_anything.modeling import ImageEncoderViT, MaskDecoder, PromptEncoder, Sam, TwoWayTransformer  # noqa: E402

# A small SAM for CPU tests: one windowed block (its 8x8 grid padded to 9x9, windows of 3) and one global
# block, width 64, at 128x128; the released prompt encoder and decoder.
TINY = dict(variant=None, width=64, depth=2, num_heads=4, global_attn_indexes=(1,), window_size=3, image_size=128)


def reference_sam(model) -> Sam:
    """segment-anything's Sam of the vitjax `model`'s sizes (build_sam.py's recipe with these numbers)."""
    size, grid = model.dims(), model.grid
    encoder = ImageEncoderViT(
        img_size=model.image_size, patch_size=model.patch_size, embed_dim=size.width, depth=size.depth,
        num_heads=size.num_heads, mlp_ratio=4, norm_layer=functools.partial(torch.nn.LayerNorm, eps=1e-6),
        qkv_bias=True, use_rel_pos=True, global_attn_indexes=size.global_attn_indexes,
        window_size=model.window_size, out_chans=model.prompt_width)
    prompts = PromptEncoder(embed_dim=model.prompt_width, image_embedding_size=(grid, grid),
                            input_image_size=(model.image_size, model.image_size), mask_in_chans=model.mask_in_chans)
    decoder = MaskDecoder(num_multimask_outputs=model.num_multimask_outputs, transformer=TwoWayTransformer(
        depth=model.decoder_depth, embedding_dim=model.prompt_width, mlp_dim=model.decoder_mlp_dim,
        num_heads=model.decoder_heads), transformer_dim=model.prompt_width, iou_head_depth=model.iou_head_depth,
        iou_head_hidden_dim=model.iou_head_hidden)
    return Sam(image_encoder=encoder, prompt_encoder=prompts, mask_decoder=decoder).eval()


def random_variables(model, seed=0):
    """{"params", "constants"} with a random value in every leaf, the zero-initialised ones included."""
    constants = np.random.RandomState(seed + 1).standard_normal((2, model.prompt_width // 2)).astype(np.float32)
    return {"params": random_params(model, model.image_size, seed),
            "constants": {"prompt_encoder": {"gaussian_matrix": constants}}}
