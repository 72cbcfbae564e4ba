"""vitjax's CLIP and SigLIP against transformers' CLIPModel and SiglipModel: tiny random models (built from
configs, nothing downloaded), converted both ways, must give the same embeddings and logits in float32;
the converter names missing, unused and misshapen weights."""
import numpy as np
import pytest
from flax import traverse_util

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.interop.hf_reference import (VOCAB, assert_same, converted_from_transformers, hf_outputs,  # noqa: E402
                                        inputs, jittered_hf_model, max_rel_err, random_params, tiny_config,
                                        vitjax_outputs)
from vitjax.interop import hf_dual_encoder  # noqa: E402


@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_transformers_weights_give_transformers_outputs(kind):
    hf_model, model, params = converted_from_transformers(tiny_config(kind))
    images, tokens = inputs(kind)
    assert_same(vitjax_outputs(model, params, images, tokens), hf_outputs(hf_model, images, tokens))


@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_vitjax_weights_give_the_same_outputs_in_transformers(kind):
    config = tiny_config(kind)
    model = hf_dual_encoder.model_from_config(config)
    params = random_params(model)
    hf_model = jittered_hf_model(config, seed=1)
    state = hf_dual_encoder.state_dict(params, model)
    hf_model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=True)
    images, tokens = inputs(kind)
    assert_same(vitjax_outputs(model, params, images, tokens), hf_outputs(hf_model, images, tokens))
    again = hf_dual_encoder.load(state, model)
    for path, value in traverse_util.flatten_dict(params, sep="/").items():
        np.testing.assert_array_equal(traverse_util.flatten_dict(again, sep="/")[path], value)


def test_clip_with_the_legacy_end_of_text_id_pools_at_the_highest_id():
    # eos_token_id 2 is transformers' marker of the original rule: the highest id ends the text.
    hf_model, model, params = converted_from_transformers(tiny_config("clip", eos_token_id=2))
    assert model.text.pool == "argmax"
    images, tokens = inputs("clip", eos_token_id=VOCAB - 1)
    assert_same(vitjax_outputs(model, params, images, tokens), hf_outputs(hf_model, images, tokens))


@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_padding_masked_as_transformers_attention_mask_does(kind):
    hf_model, model, params = converted_from_transformers(tiny_config(kind))
    images, tokens = inputs(kind)
    valid = np.arange(tokens.shape[1])[None, :] < np.array([[12], [4], [8], [6]])  # CLIP: through its end token
    tokens = np.where(valid, tokens, 1)  # the pad id
    ours = vitjax_outputs(model, params, images, tokens, valid)
    assert_same(ours, hf_outputs(hf_model, images, tokens, valid))
    if kind == "siglip":  # bidirectional: the mask changes what the last (padding) token reads
        assert max_rel_err(ours["text_embeds"], vitjax_outputs(model, params, images, tokens)["text_embeds"]) > 1e-3


def test_missing_unused_and_misshapen_weights_are_named():
    config = tiny_config("siglip")
    model = hf_dual_encoder.model_from_config(config)
    state = {k: v.numpy() for k, v in jittered_hf_model(config).state_dict().items()}
    with pytest.raises(ValueError, match="no place.*text_model.extra"):
        hf_dual_encoder.load({**state, "text_model.extra": np.zeros(3)}, model)
    with pytest.raises(ValueError, match="missing.*logit_bias"):
        hf_dual_encoder.load({k: v for k, v in state.items() if k != "logit_bias"}, model)
    wide = dict(state, **{"text_model.head.bias": np.zeros(33, np.float32)})
    with pytest.raises(ValueError, match=r"text/head/bias: \(33,\) where the model has \(32,\)"):
        hf_dual_encoder.load(wide, model)
    clip = hf_dual_encoder.model_from_config(tiny_config("clip"))
    with pytest.raises(ValueError, match="missing"):
        hf_dual_encoder.load(state, clip)
