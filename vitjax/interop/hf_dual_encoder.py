"""Hugging Face transformers' CLIPModel / SiglipModel state dicts <-> vitjax DualEncoder parameters.

    model = hf_dual_encoder.model_from_config(hf_model.config)     # the same architecture in vitjax
    params = hf_dual_encoder.load(hf_model.state_dict(), model)     # transformers -> vitjax (numpy)
    state = hf_dual_encoder.state_dict(params, model)               # vitjax -> transformers (numpy)
    hf_model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})

One table of (transformers key, vitjax path, layout) pairs serves both directions (`_pairs`). Layouts
follow vitjax/interop/torch_layout.py: Linear weights are [out, in] in torch and [in, out] here,
convolutions OIHW against HWIO, attention projections are per-head kernels [D, heads, head_dim] and
[heads, head_dim, D] here; SigLIP's MAP head keeps torch's fused `in_proj_weight` ([3D, D]: query, key,
value), which becomes three kernels. Every converted array's shape is checked against the model's
(computed with `jax.eval_shape`, nothing allocated), and a key or parameter left over on either side is
an error naming it. Nothing here imports torch or transformers: a state dict of torch tensors or numpy
arrays, and a config object with transformers' attribute names, are all it reads.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import flax.linen as nn
import jax
import numpy as np
from flax import traverse_util

from vitjax.interop.torch_layout import hwio_to_oihw, oihw_to_hwio, to_numpy
from vitjax.models import dual_encoder
from vitjax.models.dual_encoder import DualEncoder

# transformers' `hidden_act` -> vitjax's `Activation` (gelu_new is the same tanh formula as gelu_pytorch_tanh).
ACTIVATIONS = {"quick_gelu": "quick_gelu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh",
               "gelu": "gelu"}


@dataclasses.dataclass(frozen=True)
class _Pair:
    hf: str
    path: str
    layout: str = "copy"
    heads: int = 0
    part: int | None = None  # the part'th third of a fused [3D, ...] array (MAP head's in_proj)


# layout -> (transformers -> vitjax, vitjax -> transformers), each f(array, heads).
_LAYOUTS = {
    "copy": (lambda a, h: a, lambda a, h: a),
    "linear": (lambda a, h: a.T, lambda a, h: a.T),
    "conv": (lambda a, h: oihw_to_hwio(a), lambda a, h: hwio_to_oihw(a)),
    "heads_in": (lambda a, h: a.T.reshape(a.shape[1], h, -1), lambda a, h: a.reshape(a.shape[0], -1).T),
    "heads_bias": (lambda a, h: a.reshape(h, -1), lambda a, h: a.reshape(-1)),
    "heads_out": (lambda a, h: a.T.reshape(h, -1, a.shape[0]), lambda a, h: a.reshape(-1, a.shape[-1]).T),
    "token": (lambda a, h: a.reshape(1, 1, -1), lambda a, h: a.reshape(-1)),  # CLIP's class_embedding [D]
    "table": (lambda a, h: a[None], lambda a, h: a[0]),  # [N, D] embedding rows <-> [1, N, D]
    "scalar": (lambda a, h: a.reshape(()), lambda a, h: a.reshape(())),
    "scalar1": (lambda a, h: a.reshape(()), lambda a, h: a.reshape(1)),  # SigLIP keeps its scalars as [1]
}


def kind_of(model: DualEncoder) -> str:
    """'clip' or 'siglip': which transformers layout `model` has; ValueError for one it has none of."""
    image = model.image
    if image.pool == "tok" and image.pre_norm and not image.patch_bias and not image.head_bias \
            and model.logit_bias_init is None:
        return "clip"
    if image.pool == "map" and image.num_classes == 0 and model.logit_bias_init is not None:
        return "siglip"
    raise ValueError("transformers has no dual encoder of this layout: CLIP's image tower has a class token, "
                     "pre_norm, no patch bias and a bias-free head, and no logit_bias; SigLIP's has MAP "
                     "pooling and no head (num_classes=0), and a logit_bias (see dual_encoder.clip/siglip)")


def _norm(hf, path):
    return [_Pair(f"{hf}.weight", f"{path}/scale"), _Pair(f"{hf}.bias", f"{path}/bias")]


def _dense(hf, path, bias=True):
    return [_Pair(f"{hf}.weight", f"{path}/kernel", "linear")] + ([_Pair(f"{hf}.bias", f"{path}/bias")] if bias else [])


def _attention(hf, path, heads, fused: bool):
    """Query, key, value and output projections: q_proj/k_proj/v_proj/out_proj, or in_proj + out_proj."""
    pairs = []
    for i, (torch_name, name) in enumerate((("q_proj", "query"), ("k_proj", "key"), ("v_proj", "value"))):
        weight, bias = ((f"{hf}.in_proj_weight", f"{hf}.in_proj_bias") if fused
                        else (f"{hf}.{torch_name}.weight", f"{hf}.{torch_name}.bias"))
        part = i if fused else None
        pairs += [_Pair(weight, f"{path}/{name}/kernel", "heads_in", heads, part),
                  _Pair(bias, f"{path}/{name}/bias", "heads_bias", heads, part)]
    return pairs + [_Pair(f"{hf}.out_proj.weight", f"{path}/out/kernel", "heads_out", heads),
                    _Pair(f"{hf}.out_proj.bias", f"{path}/out/bias")]


def _encoder(hf, path, depth, heads):
    pairs = []
    for i in range(depth):
        src, dst = f"{hf}.encoder.layers.{i}", f"{path}/Transformer/encoderblock_{i}"
        pairs += (_norm(f"{src}.layer_norm1", f"{dst}/LayerNorm_0")
                  + _attention(f"{src}.self_attn", f"{dst}/MultiHeadDotProductAttention_0", heads, fused=False)
                  + _norm(f"{src}.layer_norm2", f"{dst}/LayerNorm_1")
                  + _dense(f"{src}.mlp.fc1", f"{dst}/MlpBlock_0/Dense_0")
                  + _dense(f"{src}.mlp.fc2", f"{dst}/MlpBlock_0/Dense_1"))
    return pairs


def _pairs(model: DualEncoder) -> list[_Pair]:
    """Every (transformers key, vitjax path, layout) of `model`'s layout (`kind_of`)."""
    kind = kind_of(model)
    size = model.image.dims()[0]
    v, t = "vision_model", "text_model"
    pairs = [_Pair(f"{v}.embeddings.patch_embedding.weight", "image/embedding/kernel", "conv"),
             _Pair(f"{v}.embeddings.position_embedding.weight", "image/Transformer/posembed_input/pos_embedding",
                   "table")]
    pairs += _encoder(v, "image", size.depth, size.num_heads)
    pairs += _norm(f"{v}.post_layernorm", "image/Transformer/encoder_norm")
    pairs += [_Pair(f"{t}.embeddings.token_embedding.weight", "text/token_embedding/embedding"),
              _Pair(f"{t}.embeddings.position_embedding.weight", "text/pos_embedding")]
    pairs += _encoder(t, "text", model.text.depth, model.text.num_heads)
    pairs += _norm(f"{t}.final_layer_norm", "text/Transformer/encoder_norm")
    if kind == "clip":
        return pairs + [
            _Pair(f"{v}.embeddings.class_embedding", "image/cls", "token"),
            *_norm(f"{v}.pre_layrnorm", "image/Transformer/encoder_prenorm"),
            _Pair("visual_projection.weight", "image/head/kernel", "linear"),
            _Pair("text_projection.weight", "text/head/kernel", "linear"),
            _Pair("logit_scale", "logit_scale", "scalar")]
    head = "image/MAPHead_0"
    return pairs + [
        _Pair(f"{v}.embeddings.patch_embedding.bias", "image/embedding/bias"),
        _Pair(f"{v}.head.probe", f"{head}/probe"),
        *_attention(f"{v}.head.attention", f"{head}/MultiHeadDotProductAttention_0", size.num_heads, fused=True),
        *_norm(f"{v}.head.layernorm", f"{head}/LayerNorm_0"),
        *_dense(f"{v}.head.mlp.fc1", f"{head}/MlpBlock_0/Dense_0"),
        *_dense(f"{v}.head.mlp.fc2", f"{head}/MlpBlock_0/Dense_1"),
        *_dense(f"{t}.head", "text/head"),
        _Pair("logit_scale", "logit_scale", "scalar1"), _Pair("logit_bias", "logit_bias", "scalar1")]


def expected_shapes(model: DualEncoder) -> dict[str, tuple[int, ...]]:
    """{vitjax path: shape} of `model`'s parameters, from `jax.eval_shape` (nothing is allocated)."""
    variables = jax.eval_shape(lambda: nn.unbox(model.init(jax.random.PRNGKey(0),
                                                           *dual_encoder.example_inputs(model))))
    return {k: tuple(x.shape) for k, x in traverse_util.flatten_dict(variables["params"], sep="/").items()}


def _left_over(names, what: str) -> None:
    names = sorted(names)
    if names:
        raise ValueError(f"{what}: {names[:12]}{' ...' if len(names) > 12 else ''}")


def load(state_dict: Mapping[str, Any], model: DualEncoder) -> dict:
    """A CLIPModel / SiglipModel state dict (torch tensors or arrays) -> `model`'s parameter tree (numpy
    float32). Raises ValueError for a missing or unused key or a shape that differs from the model's."""
    sd = {k: to_numpy(x) for k, x in state_dict.items()}
    expected = expected_shapes(model)
    pairs = _pairs(model)
    _left_over({p.hf for p in pairs} - set(sd), f"keys the {kind_of(model)} layout needs are missing")
    _left_over(set(sd) - {p.hf for p in pairs}, "these transformers keys have no place in the vitjax model")
    flat = {}
    for pair in pairs:
        array = sd[pair.hf]
        if pair.part is not None:
            array = np.split(array, 3, axis=0)[pair.part]
        flat[pair.path] = np.asarray(_LAYOUTS[pair.layout][0](array, pair.heads), np.float32)
    _check_against_model(flat, expected, "transformers")
    return traverse_util.unflatten_dict(flat, sep="/")


def state_dict(params, model: DualEncoder) -> dict[str, np.ndarray]:
    """`model`'s parameters -> transformers' state dict (float32 numpy, torch layouts) for CLIPModel or
    SiglipModel (`load_state_dict`); the parameters are checked against the model's shapes first."""
    flat = {k: to_numpy(x) for k, x in traverse_util.flatten_dict(nn.unbox(params), sep="/").items()}
    _check_against_model(flat, expected_shapes(model), "the given")
    out, parts = {}, {}
    for pair in _pairs(model):
        array = _LAYOUTS[pair.layout][1](flat[pair.path], pair.heads)
        if pair.part is None:
            out[pair.hf] = array
        else:
            parts.setdefault(pair.hf, {})[pair.part] = array
    for key, pieces in parts.items():
        out[key] = np.concatenate([pieces[i] for i in range(3)], axis=0)
    return {k: np.ascontiguousarray(v, np.float32) for k, v in out.items()}


def _check_against_model(flat, expected, source: str) -> None:
    _left_over(set(expected) - set(flat), f"parameters of the vitjax model missing from {source} weights")
    _left_over(set(flat) - set(expected), f"{source} parameters the vitjax model does not have")
    wrong = [f"{k}: {flat[k].shape} where the model has {expected[k]}" for k in sorted(flat)
             if tuple(flat[k].shape) != expected[k]]
    if wrong:
        raise ValueError(f"shapes of {source} weights differ from the model's: " + "; ".join(wrong[:8]))


def model_from_config(config, **dtypes) -> DualEncoder:
    """The vitjax DualEncoder of a transformers `CLIPConfig` or `SiglipConfig` (read by attribute only)."""
    kind = getattr(config, "model_type", None)
    if kind not in ("clip", "siglip"):
        raise ValueError(f"model_from_config takes a CLIPConfig or SiglipConfig; got model_type {kind!r}")
    vision, text = config.vision_config, config.text_config
    for tower in (vision, text):
        if tower.hidden_act not in ACTIVATIONS:
            raise ValueError(f"hidden_act {tower.hidden_act!r} has no vitjax activation; known: {sorted(ACTIVATIONS)}")
    if vision.hidden_act != text.hidden_act or vision.layer_norm_eps != text.layer_norm_eps:
        raise ValueError("the two towers' hidden_act and layer_norm_eps differ; vitjax's presets share them")
    common = dict(image_size=vision.image_size, patch_size=vision.patch_size, vision_width=vision.hidden_size,
                  vision_depth=vision.num_hidden_layers, vision_mlp_dim=vision.intermediate_size,
                  vision_heads=vision.num_attention_heads, text_width=text.hidden_size,
                  text_depth=text.num_hidden_layers, text_mlp_dim=text.intermediate_size,
                  text_heads=text.num_attention_heads, vocab_size=text.vocab_size,
                  max_length=text.max_position_embeddings, norm_epsilon=vision.layer_norm_eps,
                  activation=ACTIVATIONS[vision.hidden_act], **dtypes)
    if kind == "clip":
        return dual_encoder.clip(embed_dim=config.projection_dim, eos_token_id=text.eos_token_id, **common)
    if not getattr(vision, "vision_use_head", True):
        raise ValueError("a SigLIP vision tower without its MAP head (vision_use_head=False) has no embedding")
    return dual_encoder.siglip(embed_dim=text.projection_size, **common)
