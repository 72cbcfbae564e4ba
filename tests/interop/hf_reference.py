"""Helpers of the transformers cross-checks (tests/interop/test_hf_dual_encoder.py, test_hf_tokens.py): tiny
CLIP and SigLIP configs (nothing downloaded), models with every weight jittered, inputs, and both sides'
outputs compared in float32."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import traverse_util

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from vitjax.interop import hf_dual_encoder  # noqa: E402
from vitjax.models import dual_encoder  # noqa: E402

IMAGE, PATCH, VOCAB, MAX_LENGTH = 32, 8, 100, 16
TOWER = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4)
TOLERANCE = 1e-5


def tiny_config(kind: str, eos_token_id: int = VOCAB - 1):
    vision = dict(TOWER, image_size=IMAGE, patch_size=PATCH)
    text = dict(TOWER, vocab_size=VOCAB, max_position_embeddings=MAX_LENGTH, eos_token_id=eos_token_id,
                bos_token_id=VOCAB - 2, pad_token_id=1)
    if kind == "clip":
        return transformers.CLIPConfig(text_config=text, vision_config=vision, projection_dim=24)
    # SigLIP's image embedding is its MAP head's output: the text head projects to the vision width.
    return transformers.SiglipConfig(text_config=text, vision_config=vision)


def jittered_hf_model(config, seed=0):
    """The transformers model in eval mode, every parameter jittered (LayerNorm scales and biases, zero
    biases and SigLIP's zero logit scale and bias included), so a dropped or swapped weight shows."""
    torch.manual_seed(seed)
    model = transformers.AutoModel.from_config(config, attn_implementation="eager").eval()
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.1 * torch.randn_like(param))
    return model


def random_params(model, seed=1):
    """Every parameter of `model`'s tree drawn (shapes from jax.eval_shape: no init to compile); norm
    scales around 1, the rest around 0, so that no weight the converter drops or swaps goes unseen."""
    rng = np.random.RandomState(seed)
    flat = {path: (1.0 if path.endswith("/scale") else 0.0) + 0.1 * rng.standard_normal(shape).astype(np.float32)
            for path, shape in hf_dual_encoder.expected_shapes(model).items()}
    return traverse_util.unflatten_dict(flat, sep="/")


def inputs(kind: str, eos_token_id: int = VOCAB - 1):
    """3 images and 4 texts (a non-square logit matrix). CLIP texts end at an end-of-text token placed at
    different positions, with random tokens after it: only the right pooled row ignores them."""
    rng = np.random.RandomState(0)
    images = rng.standard_normal((3, IMAGE, IMAGE, 3)).astype(np.float32)
    tokens = rng.randint(2, VOCAB - 2, size=(4, 12))
    if kind == "clip":
        for row, end in enumerate((11, 3, 7, 5)):
            tokens[row, end] = eos_token_id
    return images, tokens


def hf_outputs(model, images, tokens, valid=None):
    mask = None if valid is None else torch.from_numpy(valid.astype(np.int64))
    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(tokens), attention_mask=mask,
                    pixel_values=torch.from_numpy(images.transpose(0, 3, 1, 2).copy()))
    return {k: getattr(out, k).numpy() for k in ("image_embeds", "text_embeds", "logits_per_image")}


def vitjax_outputs(model, params, images, tokens, valid=None):
    out = jax.jit(model.apply)({"params": params}, jnp.asarray(images), jnp.asarray(tokens),
                               None if valid is None else jnp.asarray(valid))
    return {"image_embeds": np.asarray(out["image_embeds"]), "text_embeds": np.asarray(out["text_embeds"]),
            "logits_per_image": np.asarray(dual_encoder.logits_per_image(out))}


def max_rel_err(ours, theirs):
    return float(np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)))


def assert_same(ours, theirs):
    errors = {k: max_rel_err(ours[k], theirs[k]) for k in theirs}
    print(errors)  # the measured errors, for the record (pytest -s)
    assert all(e <= TOLERANCE for e in errors.values()), errors
    assert np.std(theirs["logits_per_image"]) > 1e-2  # the logits are not flat: the comparison means something


def converted_from_transformers(config):
    """(transformers model with random weights, the vitjax model of its config, its converted weights)."""
    hf_model = jittered_hf_model(config)
    model = hf_dual_encoder.model_from_config(config)
    return hf_model, model, hf_dual_encoder.load(hf_model.state_dict(), model)
