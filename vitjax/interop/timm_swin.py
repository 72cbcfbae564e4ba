"""timm's `SwinTransformer` weights <-> vitjax `Swin` parameters, both ways.

    params = timm_swin.from_timm(timm_model, model)            # or a state dict; model: vitjax Swin
    logits = model.apply({"params": params}, images)
    state_dict = timm_swin.to_timm(params, model)               # numpy arrays, for load_state_dict

For timm 1.0's layout (`swin_tiny_patch4_window7_224` and the others): patch merging lives at the start
of stages 2..n (`layers.{i}.downsample`), as in vitjax, not at the end of the stage before as in the
official release; the attention's `qkv` is one fused Linear, split here into per-head `query/key/value`
kernels [C, heads, head_dim]; torch Linear weights are [out, in] and convolutions OIHW (here [in, out]
and HWIO). The relative-position index and the shift masks are non-persistent buffers in timm and
constants in vitjax, so neither side stores them. The bias table's shape follows the window, which
shrinks at small resolutions; so a model's weights fit only image sizes that give it the same windows.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from flax import traverse_util
from flax.core import meta

from vitjax.interop.torch_layout import (Reader, attention_from_torch, dense_from_torch, hwio_to_oihw,
                                         norm_from_torch, oihw_to_hwio, to_numpy)

# (vitjax path, timm prefix, kind, attention heads) of every parameter group, in network order.
Row = tuple[str, str, str, int]


def layout(model) -> list[Row]:
    """The rows of a vitjax `Swin`, from its depths and head counts."""
    size = model.dims()
    rows = [("embedding", "patch_embed.proj", "conv", 0), ("embedding_norm", "patch_embed.norm", "norm", 0)]
    for i, (depth, heads) in enumerate(zip(size.depths, size.num_heads)):
        if i > 0:
            rows += [(f"stage_{i}/downsample/norm", f"layers.{i}.downsample.norm", "norm", 0),
                     (f"stage_{i}/downsample/reduction", f"layers.{i}.downsample.reduction", "linear", 0)]
        for j in range(depth):
            ours, theirs = f"stage_{i}/block_{j}/", f"layers.{i}.blocks.{j}."
            rows += [(ours + "LayerNorm_0", theirs + "norm1", "norm", 0),
                     (ours + "attention", theirs + "attn", "attention", heads),
                     (ours + "LayerNorm_1", theirs + "norm2", "norm", 0),
                     (ours + "MlpBlock_0/Dense_0", theirs + "mlp.fc1", "dense", 0),
                     (ours + "MlpBlock_0/Dense_1", theirs + "mlp.fc2", "dense", 0)]
    return rows + [("norm", "norm", "norm", 0), ("head", "head.fc", "dense", 0)]


def _attention_from_timm(get, src, out, dst, heads):
    attention_from_torch(get, f"{src}.", out, dst, heads, None, None, "qkv")
    out[f"{dst}/relative_position_bias_table"] = get(f"{src}.relative_position_bias_table")


def _linear_from_timm(get, src, out, dst, heads):
    out[f"{dst}/kernel"] = get(f"{src}.weight").T


FROM_TIMM = {
    "conv": lambda get, src, out, dst, heads: (
        out.update({f"{dst}/kernel": oihw_to_hwio(get(f"{src}.weight")), f"{dst}/bias": get(f"{src}.bias")})),
    "norm": lambda get, src, out, dst, heads: norm_from_torch(get, src, out, dst),
    "dense": lambda get, src, out, dst, heads: dense_from_torch(get, src, out, dst),
    "linear": _linear_from_timm,
    "attention": _attention_from_timm,
}


def _attention_to_timm(group):
    """{query/kernel [C, heads, head_dim], ..., out/kernel [heads, head_dim, C], table} -> timm's attn.*"""
    width = group["query/kernel"].shape[0]
    names = ("query", "key", "value")
    return {"qkv.weight": np.concatenate([group[f"{n}/kernel"].reshape(width, -1).T for n in names]),
            "qkv.bias": np.concatenate([group[f"{n}/bias"].reshape(-1) for n in names]),
            "proj.weight": group["out/kernel"].reshape(-1, width).T,
            "proj.bias": group["out/bias"],
            "relative_position_bias_table": group["relative_position_bias_table"]}


TO_TIMM = {
    "conv": lambda g: {"weight": hwio_to_oihw(g["kernel"]), "bias": g["bias"]},
    "norm": lambda g: {"weight": g["scale"], "bias": g["bias"]},
    "dense": lambda g: {"weight": g["kernel"].T, "bias": g["bias"]},
    "linear": lambda g: {"weight": g["kernel"].T},
    "attention": _attention_to_timm,
}


def from_timm(model_or_state_dict: Any, model) -> dict:
    """A timm SwinTransformer (or its state dict) -> the params tree of the vitjax `Swin` `model`.

    ValueError when a parameter the model needs is missing or one is left over (another depth, a
    head-less timm model); shapes are checked when the params are applied.
    """
    state = model_or_state_dict
    if hasattr(state, "state_dict"):
        state = state.state_dict()
    get, out = Reader({k: to_numpy(v) for k, v in state.items()}), {}
    try:
        for ours, theirs, kind, heads in layout(model):
            FROM_TIMM[kind](get, theirs, out, ours, heads)
    except KeyError as missing:
        raise ValueError(f"the timm state dict has no {missing} that this Swin (depths "
                         f"{model.dims().depths}) needs; is it a SwinTransformer of the same depths, with "
                         f"a classifier head?") from None
    left = sorted(k for k in get.sd if k not in get.used)
    if left:
        raise ValueError(f"these timm parameters have no place in this Swin: {left[:12]}"
                         f"{' ...' if len(left) > 12 else ''}")
    return traverse_util.unflatten_dict(out, sep="/")


def to_timm(params, model) -> dict[str, np.ndarray]:
    """vitjax `Swin` params -> timm's state dict (float32 numpy arrays; `torch.from_numpy` each to load)."""
    flat = {k: np.asarray(v, np.float32) for k, v in
            traverse_util.flatten_dict(meta.unbox(params), sep="/").items()}
    out, used = {}, set()
    for ours, theirs, kind, _ in layout(model):
        group = {k[len(ours) + 1:]: v for k, v in flat.items() if k.startswith(ours + "/")}
        used.update(f"{ours}/{k}" for k in group)
        try:
            out.update({f"{theirs}.{k}": np.ascontiguousarray(v) for k, v in TO_TIMM[kind](group).items()})
        except KeyError as missing:
            raise ValueError(f"the params have no {ours}/{missing.args[0]}; are they this Swin's (depths "
                             f"{model.dims().depths})?") from None
    left = sorted(set(flat) - used)
    if left:
        raise ValueError(f"these parameters are not part of a Swin with depths {model.dims().depths}: {left[:12]}")
    return out
