"""timm weights <-> vitjax parameters, for every model family: one entry point each way.

    params = timm_weights.load(timm_model_or_state_dict, vitjax_model)   # timm -> vitjax
    state = timm_weights.state_dict(params, vitjax_model)                # vitjax -> timm (numpy arrays)
    timm_model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})

Covers timm's `VisionTransformer` (class token or not, MAP pooling), DeiT's distilled models
(`VisionTransformerDistilled`: `dist_token`, `head_dist`), the R50 hybrids (`HybridEmbed` with a
ResNetV2 backbone) and BiT `ResNetV2`; Swin goes to vitjax/interop/timm_swin.py. timm -> vitjax goes
through the official `.npz` layout (`to_official`, the inverse of timm's own `.npz` reader) and
`npz.load`, which checks every shape against the model: torch Linear weights are [out, in] (transposed),
convolutions OIHW (here HWIO), and the fused `qkv` projection is split into the official per-head
`query/key/value` kernels (those layout rules, shared with timm_swin, live in
vitjax/interop/torch_layout.py). vitjax -> timm is the way back (`npz.to_official`, then `_vit_to_timm`
or `_bit_to_timm`).
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from vitjax import models
from vitjax.interop import npz, timm_swin
from vitjax.interop.torch_layout import (Reader, Taker, attention_from_torch, attention_to_torch,
                                         dense_from_torch, dense_to_torch, hwio_to_oihw, norm_from_torch,
                                         norm_to_torch, oihw_to_hwio, to_numpy)


def _num_heads_of(model) -> int | None:
    blocks = getattr(model, "blocks", None)
    if blocks is not None and len(blocks):
        return int(blocks[0].attn.num_heads)
    return None


def to_official(model_or_state_dict: Any, num_heads: int | None = None) -> dict[str, np.ndarray]:
    """A timm model (or its state dict) -> {official .npz key: float32 array}.

    ViT state dicts do not record the head count; pass `num_heads` unless you pass the model.
    """
    if hasattr(model_or_state_dict, "state_dict"):
        num_heads = num_heads or _num_heads_of(model_or_state_dict)
        state = model_or_state_dict.state_dict()
    else:
        state = model_or_state_dict
    sd = {k: to_numpy(v) for k, v in state.items()}
    if "patch_embed.proj.weight" in sd:
        if not num_heads:
            raise ValueError("a timm ViT state dict does not say how many attention heads it has; pass "
                             "num_heads= (e.g. 12 for ViT-B) or pass the timm model itself")
        out, used = _vit(sd, num_heads)
    elif "stem.conv.weight" in sd:
        out, used = _bit(sd)
    else:
        raise ValueError(f"not a timm VisionTransformer or ResNetV2 state dict (keys: {sorted(sd)[:6]} ...)")
    left = sorted(k for k in sd if k not in used)
    if left:
        raise ValueError(f"these timm parameters have no place in the official format: {left[:12]}"
                         f"{' ...' if len(left) > 12 else ''}")
    return out


# (kind, timm name, official name) of the norm and dense layers of an encoder block (names relative to
# the block) and of the MAP head: one table for both directions.
_BLOCK_LAYERS = (("norm", "norm1", "LayerNorm_0"), ("norm", "norm2", "LayerNorm_2"),
                 ("dense", "mlp.fc1", "MlpBlock_3/Dense_0"), ("dense", "mlp.fc2", "MlpBlock_3/Dense_1"))
_MAP_LAYERS = (("norm", "attn_pool.norm", "MAPHead_0/LayerNorm_0"),
               ("dense", "attn_pool.mlp.fc1", "MAPHead_0/MlpBlock_0/Dense_0"),
               ("dense", "attn_pool.mlp.fc2", "MAPHead_0/MlpBlock_0/Dense_1"))


def _vit(sd, num_heads):
    get, out = Reader(sd), {}
    out["embedding/kernel"] = oihw_to_hwio(get("patch_embed.proj.weight"))
    out["embedding/bias"] = get("patch_embed.proj.bias")
    posemb = get("pos_embed")
    if "dist_token" in get:  # DeiT distilled: the position embedding covers CLS, dist and the patches
        out["dist"] = get("dist_token")
    if "cls_token" in get:
        out["cls"] = get("cls_token")
        grid = posemb.shape[1]
        if int(round(np.sqrt(grid))) ** 2 == grid:  # no_embed_class: give the CLS a zero embedding
            posemb = np.concatenate([np.zeros_like(posemb[:, :1]), posemb], axis=1)
    out["Transformer/posembed_input/pos_embedding"] = posemb

    if "patch_embed.backbone.stem.conv.weight" in get:
        bb = "patch_embed.backbone."
        out["conv_root/kernel"] = oihw_to_hwio(get(f"{bb}stem.conv.weight"))
        norm_from_torch(get, f"{bb}stem.norm", out, "gn_root")
        units = sorted({tuple(map(int, m.groups())) for k in sd
                        if (m := re.match(rf"^{re.escape(bb)}stages\.(\d+)\.blocks\.(\d+)\.", k))})
        for i, j in units:
            src, dst = f"{bb}stages.{i}.blocks.{j}.", f"block{i + 1}/unit{j + 1}/"
            for r in (1, 2, 3):
                out[f"{dst}conv{r}/kernel"] = oihw_to_hwio(get(f"{src}conv{r}.weight"))
                norm_from_torch(get, f"{src}norm{r}", out, f"{dst}gn{r}")
            if f"{src}downsample.conv.weight" in get:
                out[f"{dst}conv_proj/kernel"] = oihw_to_hwio(get(f"{src}downsample.conv.weight"))
                norm_from_torch(get, f"{src}downsample.norm", out, f"{dst}gn_proj")

    depth = len({int(m.group(1)) for k in sd if (m := re.match(r"^blocks\.(\d+)\.", k))})
    for i in range(depth):
        src, dst = f"blocks.{i}.", f"Transformer/encoderblock_{i}/"
        attention_from_torch(get, f"{src}attn.", out, f"{dst}MultiHeadDotProductAttention_1", num_heads,
                             None, None, "qkv")
        for kind, timm_name, name in _BLOCK_LAYERS:
            from_torch = norm_from_torch if kind == "norm" else dense_from_torch
            from_torch(get, f"{src}{timm_name}", out, f"{dst}{name}")
    if "norm.weight" in get:
        norm_from_torch(get, "norm", out, "Transformer/encoder_norm")
    if "attn_pool.latent" in get:
        out["MAPHead_0/probe"] = get("attn_pool.latent")
        attention_from_torch(get, "attn_pool.", out, "MAPHead_0/MultiHeadDotProductAttention_0", num_heads,
                             "q", "kv", None)
        for kind, timm_name, name in _MAP_LAYERS:
            (norm_from_torch if kind == "norm" else dense_from_torch)(get, timm_name, out, name)
    for head in ("head", "head_dist"):
        if f"{head}.weight" in get:
            dense_from_torch(get, head, out, head)
    return out, get.used


def _bit(sd):
    get, out = Reader(sd), {}
    out["resnet/root_block/standardized_conv2d/kernel"] = oihw_to_hwio(get("stem.conv.weight"))
    units = sorted({tuple(map(int, m.groups())) for k in sd
                    if (m := re.match(r"^stages\.(\d+)\.blocks\.(\d+)\.", k))})
    for i, j in units:
        src, dst = f"stages.{i}.blocks.{j}.", f"resnet/block{i + 1}/unit{j + 1:02d}/"
        for r, letter in zip((1, 2, 3), "abc"):
            out[f"{dst}{letter}/standardized_conv2d/kernel"] = oihw_to_hwio(get(f"{src}conv{r}.weight"))
            norm_from_torch(get, f"{src}norm{r}", out, f"{dst}{letter}/group_norm", ("gamma", "beta"))
        if f"{src}downsample.conv.weight" in get:
            out[f"{dst}a/proj/standardized_conv2d/kernel"] = oihw_to_hwio(get(f"{src}downsample.conv.weight"))
    norm_from_torch(get, "norm", out, "resnet/group_norm", ("gamma", "beta"))
    if "head.fc.weight" in get:
        out["resnet/head/conv2d/kernel"] = oihw_to_hwio(get("head.fc.weight"))
        out["resnet/head/conv2d/bias"] = get("head.fc.bias")
    return out, get.used


# ----------------------------------------------------------------------------------------------
# The entry points, and vitjax -> timm.

def _family(model) -> str:
    """'vit', 'hybrid', 'bit', or the name vitjax.models.FAMILIES gives another family ('swin')."""

    name = next((n for n in models.FAMILIES if isinstance(model, models.family(n))), None)
    if name is None:
        raise ValueError(f"timm_weights supports the model families {sorted(models.FAMILIES)}, got "
                         f"{type(model).__name__}")
    return "hybrid" if name == "vit" and model.resnet is not None else name


def load(timm_model_or_state_dict: Any, model, image_size=None) -> dict:
    """A timm model or state dict -> a plain parameter tree (numpy) for the vitjax `model`.

    Every shape is checked against the model's (`npz.load`); `image_size` (int or (h, w)): the
    resolution the model will run at, by default the weights' own (a position grid is resized)."""

    family = _family(model)
    if family == "swin":  # dispatch point: vitjax/interop/timm_swin.py converts Swin both ways
        return timm_swin.from_timm(timm_model_or_state_dict, model)
    num_heads = model.dims()[0].num_heads if family in ("vit", "hybrid") else None
    official = to_official(timm_model_or_state_dict, num_heads=num_heads)
    return npz.load(official, model, image_size=image_size, verbose=False)


def state_dict(params, model) -> dict[str, np.ndarray]:
    """vitjax parameters of `model` -> timm's state dict (float32 numpy arrays, torch layouts), for
    `timm_model.load_state_dict` on the timm model of the same architecture."""

    family = _family(model)
    if family == "swin":  # dispatch point: vitjax/interop/timm_swin.py converts Swin both ways
        return timm_swin.to_timm(params, model)
    official = npz.to_official(params)
    if family == "bit":
        return _bit_to_timm(official)
    return _vit_to_timm(official, model.dims()[0].num_heads)


def _vit_to_timm(official, num_heads: int) -> dict[str, np.ndarray]:
    a, out = Taker(official), {}
    out["patch_embed.proj.weight"] = hwio_to_oihw(a.take("embedding/kernel"))
    out["patch_embed.proj.bias"] = a.take("embedding/bias")
    for token, name in (("cls", "cls_token"), ("dist", "dist_token")):
        if token in a:
            out[name] = a.take(token)
    out["pos_embed"] = a.take("Transformer/posembed_input/pos_embedding")
    if "conv_root/kernel" in a:
        _hybrid_backbone_to_timm(a, out)
    depth = len({m.group(1) for k in official if (m := re.match(r"^Transformer/encoderblock_(\d+)/", k))})
    for i in range(depth):
        src, dst = f"Transformer/encoderblock_{i}/", f"blocks.{i}."
        attention_to_torch(out, f"{dst}attn", a, f"{src}MultiHeadDotProductAttention_1", fused=True)
        for kind, timm_name, name in _BLOCK_LAYERS:
            to_torch = norm_to_torch if kind == "norm" else dense_to_torch
            to_torch(out, f"{dst}{timm_name}", a, f"{src}{name}")
    norm_to_torch(out, "norm", a, "Transformer/encoder_norm")
    if "MAPHead_0/probe" in a:
        out["attn_pool.latent"] = a.take("MAPHead_0/probe")
        attention_to_torch(out, "attn_pool", a, "MAPHead_0/MultiHeadDotProductAttention_0", fused=False)
        for kind, timm_name, name in _MAP_LAYERS:
            (norm_to_torch if kind == "norm" else dense_to_torch)(out, timm_name, a, name)
    for head in ("head", "head_dist"):
        if f"{head}/kernel" in a:
            dense_to_torch(out, head, a, head)
    a.check_all_taken("ViT")
    return out


def _hybrid_backbone_to_timm(a, out):
    bb = "patch_embed.backbone."
    out[f"{bb}stem.conv.weight"] = hwio_to_oihw(a.take("conv_root/kernel"))
    norm_to_torch(out, f"{bb}stem.norm", a, "gn_root")
    units = sorted({tuple(map(int, m.groups())) for k in a.arrays if (m := re.match(r"^block(\d+)/unit(\d+)/", k))})
    for i, j in units:
        src, dst = f"block{i}/unit{j}/", f"{bb}stages.{i - 1}.blocks.{j - 1}."
        for r in (1, 2, 3):
            out[f"{dst}conv{r}.weight"] = hwio_to_oihw(a.take(f"{src}conv{r}/kernel"))
            norm_to_torch(out, f"{dst}norm{r}", a, f"{src}gn{r}")
        if f"{src}conv_proj/kernel" in a:
            out[f"{dst}downsample.conv.weight"] = hwio_to_oihw(a.take(f"{src}conv_proj/kernel"))
            norm_to_torch(out, f"{dst}downsample.norm", a, f"{src}gn_proj")


def _bit_to_timm(official) -> dict[str, np.ndarray]:
    a, out = Taker(official), {}
    out["stem.conv.weight"] = hwio_to_oihw(a.take("resnet/root_block/standardized_conv2d/kernel"))
    units = sorted({tuple(map(int, m.groups())) for k in official
                    if (m := re.match(r"^resnet/block(\d+)/unit(\d+)/", k))})
    for i, j in units:
        src, dst = f"resnet/block{i}/unit{j:02d}/", f"stages.{i - 1}.blocks.{j - 1}."
        for r, letter in zip((1, 2, 3), "abc"):
            out[f"{dst}conv{r}.weight"] = hwio_to_oihw(a.take(f"{src}{letter}/standardized_conv2d/kernel"))
            norm_to_torch(out, f"{dst}norm{r}", a, f"{src}{letter}/group_norm", ("gamma", "beta"))
        if f"{src}a/proj/standardized_conv2d/kernel" in a:
            out[f"{dst}downsample.conv.weight"] = hwio_to_oihw(a.take(f"{src}a/proj/standardized_conv2d/kernel"))
    norm_to_torch(out, "norm", a, "resnet/group_norm", ("gamma", "beta"))
    if "resnet/head/conv2d/kernel" in a:
        out["head.fc.weight"] = hwio_to_oihw(a.take("resnet/head/conv2d/kernel"))
        out["head.fc.bias"] = a.take("resnet/head/conv2d/bias")
    a.check_all_taken("BiT")
    return out
