"""timm weights -> the official `.npz` layout, so they load into vitjax with `npz.load`.

Covers timm's `VisionTransformer` (class token or not, MAP pooling), its R50 hybrids (`HybridEmbed`
with a ResNetV2 backbone) and BiT `ResNetV2`. The mapping is the inverse of timm's own `.npz`
reader: torch Linear weights are [out, in] (transposed here), convolutions OIHW (here HWIO), and
the fused `qkv` projection is split into the official per-head `query/key/value` kernels.

    arrays = timm_weights.to_official(timm_model)        # or (state_dict, num_heads=...)
    params = npz.load(arrays, vitjax_model)
"""
from __future__ import annotations

import re
from typing import Any, Mapping

import numpy as np


def _numpy(x) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().float().numpy()
    return np.asarray(x, np.float32) if np.asarray(x).dtype.kind == "f" else np.asarray(x)


def _conv(w):
    """OIHW -> HWIO."""
    return np.transpose(w, (2, 3, 1, 0))


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
    sd = {k: _numpy(v) for k, v in state.items()}
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


class _Reader:
    def __init__(self, sd: Mapping[str, np.ndarray]):
        self.sd, self.used = sd, set()

    def __contains__(self, key):
        return key in self.sd

    def __call__(self, key):
        self.used.add(key)
        return self.sd[key]


def _attention(get, prefix, out, dst, num_heads, q_key, kv_key, qkv_key):
    """Fused or split torch projections -> official [D, heads, head_dim] kernels."""
    if qkv_key is not None:
        weight, bias = get(f"{prefix}{qkv_key}.weight"), get(f"{prefix}{qkv_key}.bias")
        width = weight.shape[1]
        parts = {n: (weight[i * width:(i + 1) * width], bias[i * width:(i + 1) * width])
                 for i, n in enumerate(("query", "key", "value"))}
    else:
        weight, bias = get(f"{prefix}{kv_key}.weight"), get(f"{prefix}{kv_key}.bias")
        width = weight.shape[1]
        parts = {"query": (get(f"{prefix}{q_key}.weight"), get(f"{prefix}{q_key}.bias")),
                 "key": (weight[:width], bias[:width]), "value": (weight[width:], bias[width:])}
    head_dim = width // num_heads
    for name, (w, b) in parts.items():
        out[f"{dst}/{name}/kernel"] = w.T.reshape(width, num_heads, head_dim)
        out[f"{dst}/{name}/bias"] = b.reshape(num_heads, head_dim)
    proj = get(f"{prefix}proj.weight")
    out[f"{dst}/out/kernel"] = proj.T.reshape(num_heads, head_dim, proj.shape[0])
    out[f"{dst}/out/bias"] = get(f"{prefix}proj.bias")


def _norm(get, src, out, dst, names=("scale", "bias")):
    out[f"{dst}/{names[0]}"] = get(f"{src}.weight")
    out[f"{dst}/{names[1]}"] = get(f"{src}.bias")


def _dense(get, src, out, dst):
    out[f"{dst}/kernel"] = get(f"{src}.weight").T
    out[f"{dst}/bias"] = get(f"{src}.bias")


def _vit(sd, num_heads):
    get, out = _Reader(sd), {}
    out["embedding/kernel"] = _conv(get("patch_embed.proj.weight"))
    out["embedding/bias"] = get("patch_embed.proj.bias")
    posemb = get("pos_embed")
    if "cls_token" in get:
        out["cls"] = get("cls_token")
        grid = posemb.shape[1]
        if int(round(np.sqrt(grid))) ** 2 == grid:  # no_embed_class: give the CLS a zero embedding
            posemb = np.concatenate([np.zeros_like(posemb[:, :1]), posemb], axis=1)
    out["Transformer/posembed_input/pos_embedding"] = posemb

    if "patch_embed.backbone.stem.conv.weight" in get:
        bb = "patch_embed.backbone."
        out["conv_root/kernel"] = _conv(get(f"{bb}stem.conv.weight"))
        _norm(get, f"{bb}stem.norm", out, "gn_root")
        units = sorted({tuple(map(int, m.groups())) for k in sd
                        if (m := re.match(rf"^{re.escape(bb)}stages\.(\d+)\.blocks\.(\d+)\.", k))})
        for i, j in units:
            src, dst = f"{bb}stages.{i}.blocks.{j}.", f"block{i + 1}/unit{j + 1}/"
            for r in (1, 2, 3):
                out[f"{dst}conv{r}/kernel"] = _conv(get(f"{src}conv{r}.weight"))
                _norm(get, f"{src}norm{r}", out, f"{dst}gn{r}")
            if f"{src}downsample.conv.weight" in get:
                out[f"{dst}conv_proj/kernel"] = _conv(get(f"{src}downsample.conv.weight"))
                _norm(get, f"{src}downsample.norm", out, f"{dst}gn_proj")

    depth = len({int(m.group(1)) for k in sd if (m := re.match(r"^blocks\.(\d+)\.", k))})
    for i in range(depth):
        src, dst = f"blocks.{i}.", f"Transformer/encoderblock_{i}/"
        _norm(get, f"{src}norm1", out, f"{dst}LayerNorm_0")
        _attention(get, f"{src}attn.", out, f"{dst}MultiHeadDotProductAttention_1", num_heads,
                   None, None, "qkv")
        _norm(get, f"{src}norm2", out, f"{dst}LayerNorm_2")
        _dense(get, f"{src}mlp.fc1", out, f"{dst}MlpBlock_3/Dense_0")
        _dense(get, f"{src}mlp.fc2", out, f"{dst}MlpBlock_3/Dense_1")
    if "norm.weight" in get:
        _norm(get, "norm", out, "Transformer/encoder_norm")
    if "attn_pool.latent" in get:
        out["MAPHead_0/probe"] = get("attn_pool.latent")
        _attention(get, "attn_pool.", out, "MAPHead_0/MultiHeadDotProductAttention_0", num_heads,
                   "q", "kv", None)
        _norm(get, "attn_pool.norm", out, "MAPHead_0/LayerNorm_0")
        _dense(get, "attn_pool.mlp.fc1", out, "MAPHead_0/MlpBlock_0/Dense_0")
        _dense(get, "attn_pool.mlp.fc2", out, "MAPHead_0/MlpBlock_0/Dense_1")
    if "head.weight" in get:
        _dense(get, "head", out, "head")
    return out, get.used


def _bit(sd):
    get, out = _Reader(sd), {}
    out["resnet/root_block/standardized_conv2d/kernel"] = _conv(get("stem.conv.weight"))
    units = sorted({tuple(map(int, m.groups())) for k in sd
                    if (m := re.match(r"^stages\.(\d+)\.blocks\.(\d+)\.", k))})
    for i, j in units:
        src, dst = f"stages.{i}.blocks.{j}.", f"resnet/block{i + 1}/unit{j + 1:02d}/"
        for r, letter in zip((1, 2, 3), "abc"):
            out[f"{dst}{letter}/standardized_conv2d/kernel"] = _conv(get(f"{src}conv{r}.weight"))
            _norm(get, f"{src}norm{r}", out, f"{dst}{letter}/group_norm", ("gamma", "beta"))
        if f"{src}downsample.conv.weight" in get:
            out[f"{dst}a/proj/standardized_conv2d/kernel"] = _conv(get(f"{src}downsample.conv.weight"))
    _norm(get, "norm", out, "resnet/group_norm", ("gamma", "beta"))
    if "head.fc.weight" in get:
        out["resnet/head/conv2d/kernel"] = _conv(get("head.fc.weight"))
        out["resnet/head/conv2d/bias"] = get("head.fc.bias")
    return out, get.used
