"""The dual encoders' presets have transformers' parameter counts exactly; the text tower reads the token
each reference model reads; the model's outputs are unit embeddings, its scalars start at the papers'
values, and its logits are their scaled cosines."""
import math

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax.models import dual_encoder
from vitjax.models.text import TextTransformer, pooled_positions

# transformers' SiglipModel(SiglipConfig()) and CLIPModel(CLIPConfig()) (5.x).
SIGLIP_PARAMETERS = 203_155_970
CLIP_PARAMETERS = 151_277_313


def _count(model) -> int:
    shapes = jax.eval_shape(lambda: nn.unbox(model.init(jax.random.key(0), *dual_encoder.example_inputs(model))))
    return sum(math.prod(x.shape) for x in jax.tree.leaves(shapes["params"]))


@pytest.mark.parametrize("preset,expected", [(dual_encoder.clip, CLIP_PARAMETERS),
                                             (dual_encoder.siglip, SIGLIP_PARAMETERS)])
def test_presets_have_the_parameter_counts_of_transformers_defaults(preset, expected):
    assert _count(preset()) == expected


def test_the_counts_are_those_of_the_installed_transformers():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    with torch.device("meta"):  # shapes only: nothing allocated
        counts = [sum(p.numel() for p in cls(config()).parameters()) for cls, config in
                  ((transformers.CLIPModel, transformers.CLIPConfig),
                   (transformers.SiglipModel, transformers.SiglipConfig))]
    assert counts == [CLIP_PARAMETERS, SIGLIP_PARAMETERS]


def test_pooled_positions_follow_each_rule():
    tokens = jnp.array([[5, 9, 7, 9, 0], [3, 4, 8, 1, 1]])
    assert pooled_positions(tokens, "argmax").tolist() == [1, 2]  # the first highest id
    assert pooled_positions(tokens, "eos", eos_token_id=9).tolist() == [1, 0]  # first end-of-text; none: 0
    assert pooled_positions(tokens, "last").tolist() == [4, 4]
    with pytest.raises(ValueError, match="eos_token_id"):
        pooled_positions(tokens, "eos")


def test_causal_text_tower_ignores_what_follows_the_pooled_token():
    tower = TextTransformer(vocab_size=20, width=16, depth=1, mlp_dim=32, num_heads=2, max_length=8, out_dim=8,
                            causal=True, pool="eos", eos_token_id=19)
    tokens = jnp.array([[3, 4, 19, 5, 6, 7], [3, 4, 19, 11, 12, 13]])
    variables = jax.jit(tower.init)(jax.random.key(0), tokens)
    out = jax.jit(tower.apply)(variables, tokens)
    np.testing.assert_array_equal(out[0], out[1])
    bidirectional = jax.jit(tower.clone(causal=False).apply)(variables, tokens)
    assert np.max(np.abs(bidirectional[0] - bidirectional[1])) > 1e-4  # the check above can fail


def test_outputs_are_unit_embeddings_and_scalars_start_at_the_papers_values():
    model = dual_encoder.siglip(image_size=16, patch_size=8, vision_width=16, vision_depth=1, vision_mlp_dim=32,
                                vision_heads=2, text_width=16, text_depth=1, text_mlp_dim=32, text_heads=2,
                                vocab_size=20, max_length=6)
    images, tokens = dual_encoder.example_inputs(model, batch=3)
    tokens = tokens.at[:, 1].set(jnp.arange(3) + 4)
    variables = jax.jit(model.init)(jax.random.key(0), images, tokens)
    out = jax.jit(model.apply)(variables, images + jnp.arange(3.0)[:, None, None, None], tokens)
    np.testing.assert_allclose(np.linalg.norm(out["image_embeds"], axis=-1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out["text_embeds"], axis=-1), 1.0, rtol=1e-6)
    assert float(out["logit_scale"]) == pytest.approx(math.log(10)) and float(out["logit_bias"]) == -10.0
    expected = 10.0 * np.asarray(out["image_embeds"]) @ np.asarray(out["text_embeds"]).T - 10.0
    np.testing.assert_allclose(dual_encoder.logits_per_image(out), expected, rtol=1e-5, atol=1e-5)
    clip_scale = dual_encoder.clip().logit_scale_init
    assert math.exp(clip_scale) == pytest.approx(1 / 0.07)
