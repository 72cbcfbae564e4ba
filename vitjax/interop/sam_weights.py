"""segment-anything's `Sam` weights <-> vitjax `SAM` variables, both ways.

    variables = sam_weights.load(sam_model_or_state_dict, model)    # {"params", "constants"}; model: vitjax SAM
    masks, iou = model.apply(variables, images, points, labels)
    state = sam_weights.state_dict(variables, model)                  # numpy arrays, torch layouts
    sam_model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    sam_model = sam_weights.official_model(model)                     # segment-anything's Sam of its sizes

For the official checkpoints (`sam_vit_b_01ec64.pth` and the others, keys like
`image_encoder.blocks.0.attn.qkv.weight`) and any `Sam` built by segment-anything 1.0. torch Linear
weights are [out, in] (vitjax: [in, out]); convolutions OIHW (HWIO), transposed convolutions [in, out, kh,
kw] (vitjax: [kh, kw, in, out]); the image encoder's fused `qkv` is split into per-head `query/key/value`
kernels, the decoder's `q_proj/k_proj/v_proj/out_proj` likewise; `nn.Embedding` rows stay [n, width]. The
prompt encoder's Fourier matrix is a buffer in the state dict and goes to the `constants` collection.
Every array's shape is checked against the model's, and a key missing or left over on either side is an
error naming it: the image size is part of the shapes (position embedding, relative tables), so weights
load only into a model of the image size they were made for.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import traverse_util
from flax.core import meta

from vitjax.interop.torch_layout import (Reader, merge_from_torch, merge_to_torch, oihw_to_hwio, hwio_to_oihw,
                                         projection_from_torch, projection_to_torch, to_numpy)

GAUSSIAN = ("constants/prompt_encoder/gaussian_matrix", "prompt_encoder.pe_layer.positional_encoding_gaussian_matrix")

# (vitjax path under params/, torch prefix, kind, attention heads) of every parameter group.
Row = tuple[str, str, str, int]


def layout(model) -> list[Row]:
    """The rows of a vitjax `SAM`, from its depths and head counts."""
    size = model.dims()
    rows = [("image_encoder/patch_embed", "image_encoder.patch_embed.proj", "conv", 0),
            ("image_encoder/pos_embed", "image_encoder.pos_embed", "array", 0)]
    for i in range(size.depth):
        ours, theirs = f"image_encoder/block_{i}/", f"image_encoder.blocks.{i}."
        rows += [(ours + "LayerNorm_0", theirs + "norm1", "norm", 0),
                 (ours + "attention", theirs + "attn", "fused_attention", size.num_heads),
                 (ours + "LayerNorm_1", theirs + "norm2", "norm", 0),
                 (ours + "MlpBlock_0/Dense_0", theirs + "mlp.lin1", "dense", 0),
                 (ours + "MlpBlock_0/Dense_1", theirs + "mlp.lin2", "dense", 0)]
    # neck: conv 1x1, LayerNorm2d, conv 3x3, LayerNorm2d
    rows += [("image_encoder/neck/conv_0", "image_encoder.neck.0", "conv_no_bias", 0),
             ("image_encoder/neck/norm_0", "image_encoder.neck.1", "norm", 0),
             ("image_encoder/neck/conv_1", "image_encoder.neck.2", "conv_no_bias", 0),
             ("image_encoder/neck/norm_1", "image_encoder.neck.3", "norm", 0)]
    return rows + _prompt_encoder_rows() + _mask_decoder_rows(model)


def _prompt_encoder_rows() -> list[Row]:
    points = ("background", "foreground", "box_top_left", "box_bottom_right")
    rows = [(f"prompt_encoder/{name}", f"prompt_encoder.point_embeddings.{i}.weight", "array", 0)
            for i, name in enumerate(points)]
    rows += [("prompt_encoder/not_a_point", "prompt_encoder.not_a_point_embed.weight", "array", 0),
             ("prompt_encoder/no_mask", "prompt_encoder.no_mask_embed.weight", "array", 0)]
    # mask_downscaling: conv, LayerNorm2d, GELU, conv, LayerNorm2d, GELU, 1x1 conv (GELUs have no weights)
    return rows + [("prompt_encoder/mask_conv_0", "prompt_encoder.mask_downscaling.0", "conv", 0),
                   ("prompt_encoder/mask_norm_0", "prompt_encoder.mask_downscaling.1", "norm", 0),
                   ("prompt_encoder/mask_conv_1", "prompt_encoder.mask_downscaling.3", "conv", 0),
                   ("prompt_encoder/mask_norm_1", "prompt_encoder.mask_downscaling.4", "norm", 0),
                   ("prompt_encoder/mask_projection", "prompt_encoder.mask_downscaling.6", "conv_1x1", 0)]


def _mask_decoder_rows(model) -> list[Row]:
    heads, decoder = model.decoder_heads, "mask_decoder."
    rows = [("mask_decoder/iou_token", decoder + "iou_token.weight", "array", 0),
            ("mask_decoder/mask_tokens", decoder + "mask_tokens.weight", "array", 0)]
    attention_names = (("self_attention", "self_attn"), ("token_to_image", "cross_attn_token_to_image"),
                       ("image_to_token", "cross_attn_image_to_token"))
    for i in range(model.decoder_depth):
        ours, theirs = f"mask_decoder/transformer/layer_{i}/", f"{decoder}transformer.layers.{i}."
        rows += [(ours + name, theirs + torch_name, "attention", heads) for name, torch_name in attention_names]
        rows += [(ours + f"norm_{j}", theirs + f"norm{j + 1}", "norm", 0) for j in range(4)]
        rows += [(ours + "mlp/Dense_0", theirs + "mlp.lin1", "dense", 0),
                 (ours + "mlp/Dense_1", theirs + "mlp.lin2", "dense", 0)]
    rows += [("mask_decoder/transformer/final_token_to_image", decoder + "transformer.final_attn_token_to_image",
              "attention", heads),
             ("mask_decoder/transformer/final_norm", decoder + "transformer.norm_final_attn", "norm", 0),
             # output_upscaling: transposed conv, LayerNorm2d, GELU, transposed conv, GELU
             ("mask_decoder/upscale_conv_0", decoder + "output_upscaling.0", "transposed_conv", 0),
             ("mask_decoder/upscale_norm", decoder + "output_upscaling.1", "norm", 0),
             ("mask_decoder/upscale_conv_1", decoder + "output_upscaling.3", "transposed_conv", 0)]
    for i in range(model.num_multimask_outputs + 1):
        rows += [(f"mask_decoder/hypernetwork_{i}/Dense_{j}", f"{decoder}output_hypernetworks_mlps.{i}.layers.{j}",
                  "dense", 0) for j in range(3)]
    return rows + [(f"mask_decoder/iou_head/Dense_{j}", f"{decoder}iou_prediction_head.layers.{j}", "dense", 0)
                   for j in range(model.iou_head_depth)]


# ----------------------------------------------------------------------------------------------
# torch -> vitjax: FROM_TORCH[kind](get, torch prefix, heads) -> {name under the vitjax path: array}

def _fused_attention_from_torch(get, src, heads):
    weight, bias = get(f"{src}.qkv.weight"), get(f"{src}.qkv.bias")
    width = weight.shape[1]
    group = {}
    for i, name in enumerate(("query", "key", "value")):
        part = slice(i * width, (i + 1) * width)
        group[f"{name}/kernel"], group[f"{name}/bias"] = projection_from_torch(weight[part], bias[part], heads)
    group["out/kernel"], group["out/bias"] = merge_from_torch(get(f"{src}.proj.weight"), heads), get(f"{src}.proj.bias")
    group["rel_pos_h"], group["rel_pos_w"] = get(f"{src}.rel_pos_h"), get(f"{src}.rel_pos_w")
    return group


def _attention_from_torch(get, src, heads):
    group = {}
    for name, torch_name in (("query", "q_proj"), ("key", "k_proj"), ("value", "v_proj")):
        group[f"{name}/kernel"], group[f"{name}/bias"] = projection_from_torch(
            get(f"{src}.{torch_name}.weight"), get(f"{src}.{torch_name}.bias"), heads)
    group["out/kernel"] = merge_from_torch(get(f"{src}.out_proj.weight"), heads)
    group["out/bias"] = get(f"{src}.out_proj.bias")
    return group


FROM_TORCH = {
    "array": lambda get, src, heads: {"": get(src)},
    "conv": lambda get, src, heads: {"kernel": oihw_to_hwio(get(f"{src}.weight")), "bias": get(f"{src}.bias")},
    "conv_no_bias": lambda get, src, heads: {"kernel": oihw_to_hwio(get(f"{src}.weight"))},
    "conv_1x1": lambda get, src, heads: {"kernel": get(f"{src}.weight")[:, :, 0, 0].T, "bias": get(f"{src}.bias")},
    "transposed_conv": lambda get, src, heads: {"kernel": np.transpose(get(f"{src}.weight"), (2, 3, 0, 1)),
                                                "bias": get(f"{src}.bias")},
    "norm": lambda get, src, heads: {"scale": get(f"{src}.weight"), "bias": get(f"{src}.bias")},
    "dense": lambda get, src, heads: {"kernel": get(f"{src}.weight").T, "bias": get(f"{src}.bias")},
    "fused_attention": _fused_attention_from_torch,
    "attention": _attention_from_torch,
}


# vitjax -> torch: TO_TORCH[kind](group) -> {torch suffix: array}; group: {name under the vitjax path: array}

def _fused_attention_to_torch(group):
    parts = [projection_to_torch(group[f"{n}/kernel"], group[f"{n}/bias"]) for n in ("query", "key", "value")]
    return {".qkv.weight": np.concatenate([w for w, _ in parts]), ".qkv.bias": np.concatenate([b for _, b in parts]),
            ".proj.weight": merge_to_torch(group["out/kernel"]), ".proj.bias": group["out/bias"],
            ".rel_pos_h": group["rel_pos_h"], ".rel_pos_w": group["rel_pos_w"]}


def _attention_to_torch(group):
    out = {}
    for name, torch_name in (("query", "q_proj"), ("key", "k_proj"), ("value", "v_proj")):
        out[f".{torch_name}.weight"], out[f".{torch_name}.bias"] = projection_to_torch(
            group[f"{name}/kernel"], group[f"{name}/bias"])
    return {**out, ".out_proj.weight": merge_to_torch(group["out/kernel"]), ".out_proj.bias": group["out/bias"]}


TO_TORCH = {
    "array": lambda g: {"": g[""]},
    "conv": lambda g: {".weight": hwio_to_oihw(g["kernel"]), ".bias": g["bias"]},
    "conv_no_bias": lambda g: {".weight": hwio_to_oihw(g["kernel"])},
    "conv_1x1": lambda g: {".weight": g["kernel"].T[:, :, None, None], ".bias": g["bias"]},
    "transposed_conv": lambda g: {".weight": np.transpose(g["kernel"], (2, 3, 0, 1)), ".bias": g["bias"]},
    "norm": lambda g: {".weight": g["scale"], ".bias": g["bias"]},
    "dense": lambda g: {".weight": g["kernel"].T, ".bias": g["bias"]},
    "fused_attention": _fused_attention_to_torch,
    "attention": _attention_to_torch,
}


def official_model(model):
    """segment-anything's `Sam` with the sizes of the vitjax `SAM` `model` (build_sam.py's recipe with its
    numbers), in eval mode with torch's initialisation; needs torch and segment-anything (the test extra)."""
    import functools

    import torch
    from segment_anything.modeling import ImageEncoderViT, MaskDecoder, PromptEncoder, Sam, TwoWayTransformer

    size, grid = model.dims(), model.grid
    encoder = ImageEncoderViT(
        img_size=model.image_size, patch_size=model.patch_size, embed_dim=size.width, depth=size.depth,
        num_heads=size.num_heads, mlp_ratio=model.mlp_ratio,
        norm_layer=functools.partial(torch.nn.LayerNorm, eps=1e-6), qkv_bias=True, use_rel_pos=True,
        global_attn_indexes=size.global_attn_indexes, window_size=model.window_size, out_chans=model.prompt_width)
    prompts = PromptEncoder(embed_dim=model.prompt_width, image_embedding_size=(grid, grid),
                            input_image_size=(model.image_size, model.image_size), mask_in_chans=model.mask_in_chans)
    decoder = MaskDecoder(num_multimask_outputs=model.num_multimask_outputs, transformer=TwoWayTransformer(
        depth=model.decoder_depth, embedding_dim=model.prompt_width, mlp_dim=model.decoder_mlp_dim,
        num_heads=model.decoder_heads), transformer_dim=model.prompt_width, iou_head_depth=model.iou_head_depth,
        iou_head_hidden_dim=model.iou_head_hidden)
    return Sam(image_encoder=encoder, prompt_encoder=prompts, mask_decoder=decoder).eval()


def expected_shapes(model) -> dict[str, tuple[int, ...]]:
    """{"params/..." or "constants/...": shape} of every variable of `model` (jax.eval_shape: nothing is
    allocated or compiled)."""
    images = jax.ShapeDtypeStruct((1, model.image_size, model.image_size, 3), jnp.float32)
    variables = meta.unbox(jax.eval_shape(lambda x: model.init(jax.random.key(0), x), images))
    return {k: tuple(v.shape) for k, v in traverse_util.flatten_dict(variables, sep="/").items()}


def _path(ours: str, name: str) -> str:
    return f"params/{ours}/{name}" if name else f"params/{ours}"


def load(model_or_state_dict: Any, model) -> dict:
    """segment-anything's `Sam` (or its state dict) -> the variables {"params", "constants"} (numpy) of the
    vitjax `SAM` `model`. ValueError naming any key missing, left over or of another shape."""
    state = model_or_state_dict.state_dict() if hasattr(model_or_state_dict, "state_dict") else model_or_state_dict
    get, flat = Reader({k: to_numpy(v) for k, v in state.items()}), {}
    try:
        for ours, theirs, kind, heads in layout(model):
            flat.update({_path(ours, name): array for name, array in FROM_TORCH[kind](get, theirs, heads).items()})
        flat[GAUSSIAN[0]] = get(GAUSSIAN[1])
    except KeyError as missing:
        raise ValueError(f"the state dict has no {missing} that this SAM ({_describe(model)}) needs; is it a "
                         f"segment-anything Sam of the same encoder size and depth?") from None
    left = sorted(k for k in get.sd if k not in get.used)
    if left:
        raise ValueError(f"these segment-anything parameters have no place in this SAM ({_describe(model)}): "
                         f"{left[:12]}{' ...' if len(left) > 12 else ''}")
    _check_shapes(flat, model)
    return traverse_util.unflatten_dict({k: np.ascontiguousarray(v) for k, v in flat.items()}, sep="/")


def state_dict(variables, model) -> dict[str, np.ndarray]:
    """vitjax `SAM` variables ({"params", "constants"}) -> segment-anything's state dict (float32 numpy
    arrays; `torch.from_numpy` each for `load_state_dict`)."""
    flat = {k: np.asarray(v, np.float32) for k, v in
            traverse_util.flatten_dict(meta.unbox(dict(variables)), sep="/").items()}
    _check_shapes(flat, model)
    out, used = {}, {GAUSSIAN[0]}
    for ours, theirs, kind, _ in layout(model):
        prefix = f"params/{ours}"
        group = {k[len(prefix) + 1:]: v for k, v in flat.items() if k == prefix or k.startswith(prefix + "/")}
        used.update(_path(ours, name) for name in group)
        out.update({f"{theirs}{suffix}": np.ascontiguousarray(v) for suffix, v in TO_TORCH[kind](group).items()})
    out[GAUSSIAN[1]] = np.ascontiguousarray(flat[GAUSSIAN[0]])
    return out


def _check_shapes(flat: dict, model) -> None:
    """ValueError naming the variables missing from `flat`, extra in it, or of another shape than `model`'s."""
    expected = expected_shapes(model)
    missing, extra = sorted(set(expected) - set(flat)), sorted(set(flat) - set(expected))
    wrong = [f"{k}: {tuple(flat[k].shape)}, the model's {expected[k]}" for k in sorted(set(flat) & set(expected))
             if tuple(flat[k].shape) != expected[k]]
    problems = ([f"missing {missing[:8]}"] if missing else []) + ([f"not in the model {extra[:8]}"] if extra else []) \
        + ([f"shapes differ: {'; '.join(wrong[:8])}"] if wrong else [])
    if problems:
        raise ValueError(f"the weights do not fit this SAM ({_describe(model)}): {'. '.join(problems)}. Build the "
                         f"vitjax SAM with the variant and image_size the weights were made for")


def _describe(model) -> str:
    size = model.dims()
    return (f"width {size.width}, depth {size.depth}, image_size {model.image_size}, "
            f"decoder depth {model.decoder_depth}")
