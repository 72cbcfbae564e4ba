"""vitjax's CLIP and SigLIP against transformers' CLIPModel and SiglipModel: tiny random models (built from
configs, nothing downloaded), converted both ways, must give the same embeddings and logits in float32;
the converter names missing, unused and misshapen weights."""
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


def _tiny_config(kind: str, eos_token_id: int = VOCAB - 1):
    vision = dict(TOWER, image_size=IMAGE, patch_size=PATCH)
    text = dict(TOWER, vocab_size=VOCAB, max_position_embeddings=MAX_LENGTH, eos_token_id=eos_token_id,
                bos_token_id=VOCAB - 2, pad_token_id=1)
    if kind == "clip":
        return transformers.CLIPConfig(text_config=text, vision_config=vision, projection_dim=24)
    # SigLIP's image embedding is its MAP head's output: the text head projects to the vision width.
    return transformers.SiglipConfig(text_config=text, vision_config=vision)


def _hf_model(config, seed=0):
    """The transformers model in eval mode, every parameter jittered (LayerNorm scales and biases, zero
    biases and SigLIP's zero logit scale and bias included), so a dropped or swapped weight shows."""
    torch.manual_seed(seed)
    model = transformers.AutoModel.from_config(config, attn_implementation="eager").eval()
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.1 * torch.randn_like(param))
    return model


def _random_params(model, seed=1):
    """Every parameter of `model`'s tree drawn (shapes from jax.eval_shape: no init to compile); norm
    scales around 1, the rest around 0, so that no weight the converter drops or swaps goes unseen."""
    rng = np.random.RandomState(seed)
    flat = {path: (1.0 if path.endswith("/scale") else 0.0) + 0.1 * rng.standard_normal(shape).astype(np.float32)
            for path, shape in hf_dual_encoder.expected_shapes(model).items()}
    return traverse_util.unflatten_dict(flat, sep="/")


def _inputs(kind: str, eos_token_id: int = VOCAB - 1):
    """3 images and 4 texts (a non-square logit matrix). CLIP texts end at an end-of-text token placed at
    different positions, with random tokens after it: only the right pooled row ignores them."""
    rng = np.random.RandomState(0)
    images = rng.standard_normal((3, IMAGE, IMAGE, 3)).astype(np.float32)
    tokens = rng.randint(2, VOCAB - 2, size=(4, 12))
    if kind == "clip":
        for row, end in enumerate((11, 3, 7, 5)):
            tokens[row, end] = eos_token_id
    return images, tokens


def _hf_outputs(model, images, tokens, valid=None):
    mask = None if valid is None else torch.from_numpy(valid.astype(np.int64))
    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(tokens), attention_mask=mask,
                    pixel_values=torch.from_numpy(images.transpose(0, 3, 1, 2).copy()))
    return {k: getattr(out, k).numpy() for k in ("image_embeds", "text_embeds", "logits_per_image")}


def _vitjax_outputs(model, params, images, tokens, valid=None):
    out = jax.jit(model.apply)({"params": params}, jnp.asarray(images), jnp.asarray(tokens),
                               None if valid is None else jnp.asarray(valid))
    return {"image_embeds": np.asarray(out["image_embeds"]), "text_embeds": np.asarray(out["text_embeds"]),
            "logits_per_image": np.asarray(dual_encoder.logits_per_image(out))}


def _max_rel_err(ours, theirs):
    return float(np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)))


def _assert_same(ours, theirs):
    errors = {k: _max_rel_err(ours[k], theirs[k]) for k in theirs}
    print(errors)  # the measured errors, for the record (pytest -s)
    assert all(e <= TOLERANCE for e in errors.values()), errors
    assert np.std(theirs["logits_per_image"]) > 1e-2  # the logits are not flat: the comparison means something


def _converted_from_transformers(config):
    """(transformers model with random weights, the vitjax model of its config, its converted weights)."""
    hf_model = _hf_model(config)
    model = hf_dual_encoder.model_from_config(config)
    return hf_model, model, hf_dual_encoder.load(hf_model.state_dict(), model)


@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_transformers_weights_give_transformers_outputs(kind):
    hf_model, model, params = _converted_from_transformers(_tiny_config(kind))
    images, tokens = _inputs(kind)
    _assert_same(_vitjax_outputs(model, params, images, tokens), _hf_outputs(hf_model, images, tokens))


@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_vitjax_weights_give_the_same_outputs_in_transformers(kind):
    config = _tiny_config(kind)
    model = hf_dual_encoder.model_from_config(config)
    params = _random_params(model)
    hf_model = _hf_model(config, seed=1)
    state = hf_dual_encoder.state_dict(params, model)
    hf_model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=True)
    images, tokens = _inputs(kind)
    _assert_same(_vitjax_outputs(model, params, images, tokens), _hf_outputs(hf_model, images, tokens))
    again = hf_dual_encoder.load(state, model)
    for path, value in traverse_util.flatten_dict(params, sep="/").items():
        np.testing.assert_array_equal(traverse_util.flatten_dict(again, sep="/")[path], value)


def test_clip_with_the_legacy_end_of_text_id_pools_at_the_highest_id():
    # eos_token_id 2 is transformers' marker of the original rule: the highest id ends the text.
    hf_model, model, params = _converted_from_transformers(_tiny_config("clip", eos_token_id=2))
    assert model.text.pool == "argmax"
    images, tokens = _inputs("clip", eos_token_id=VOCAB - 1)
    _assert_same(_vitjax_outputs(model, params, images, tokens), _hf_outputs(hf_model, images, tokens))


@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_padding_masked_as_transformers_attention_mask_does(kind):
    hf_model, model, params = _converted_from_transformers(_tiny_config(kind))
    images, tokens = _inputs(kind)
    valid = np.arange(tokens.shape[1])[None, :] < np.array([[12], [4], [8], [6]])  # CLIP: through its end token
    tokens = np.where(valid, tokens, 1)  # the pad id
    ours = _vitjax_outputs(model, params, images, tokens, valid)
    _assert_same(ours, _hf_outputs(hf_model, images, tokens, valid))
    if kind == "siglip":  # bidirectional: the mask changes what the last (padding) token reads
        assert _max_rel_err(ours["text_embeds"], _vitjax_outputs(model, params, images, tokens)["text_embeds"]) > 1e-3


def test_missing_unused_and_misshapen_weights_are_named():
    config = _tiny_config("siglip")
    model = hf_dual_encoder.model_from_config(config)
    state = {k: v.numpy() for k, v in _hf_model(config).state_dict().items()}
    with pytest.raises(ValueError, match="no place.*text_model.extra"):
        hf_dual_encoder.load({**state, "text_model.extra": np.zeros(3)}, model)
    with pytest.raises(ValueError, match="missing.*logit_bias"):
        hf_dual_encoder.load({k: v for k, v in state.items() if k != "logit_bias"}, model)
    wide = dict(state, **{"text_model.head.bias": np.zeros(33, np.float32)})
    with pytest.raises(ValueError, match=r"text/head/bias: \(33,\) where the model has \(32,\)"):
        hf_dual_encoder.load(wide, model)
    clip = hf_dual_encoder.model_from_config(_tiny_config("clip"))
    with pytest.raises(ValueError, match="missing"):
        hf_dual_encoder.load(state, clip)
