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
`query/key/value` kernels. vitjax -> timm is the way back (`npz.to_official`, then `_vit_to_timm` or
`_bit_to_timm`).
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


# (kind, timm name, official name) of the norm and dense layers of an encoder block (names relative to
# the block) and of the MAP head: one table for both directions.
_BLOCK_LAYERS = (("norm", "norm1", "LayerNorm_0"), ("norm", "norm2", "LayerNorm_2"),
                 ("dense", "mlp.fc1", "MlpBlock_3/Dense_0"), ("dense", "mlp.fc2", "MlpBlock_3/Dense_1"))
_MAP_LAYERS = (("norm", "attn_pool.norm", "MAPHead_0/LayerNorm_0"),
               ("dense", "attn_pool.mlp.fc1", "MAPHead_0/MlpBlock_0/Dense_0"),
               ("dense", "attn_pool.mlp.fc2", "MAPHead_0/MlpBlock_0/Dense_1"))


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
        _attention(get, f"{src}attn.", out, f"{dst}MultiHeadDotProductAttention_1", num_heads,
                   None, None, "qkv")
        for kind, timm_name, name in _BLOCK_LAYERS:
            (_norm if kind == "norm" else _dense)(get, f"{src}{timm_name}", out, f"{dst}{name}")
    if "norm.weight" in get:
        _norm(get, "norm", out, "Transformer/encoder_norm")
    if "attn_pool.latent" in get:
        out["MAPHead_0/probe"] = get("attn_pool.latent")
        _attention(get, "attn_pool.", out, "MAPHead_0/MultiHeadDotProductAttention_0", num_heads,
                   "q", "kv", None)
        for kind, timm_name, name in _MAP_LAYERS:
            (_norm if kind == "norm" else _dense)(get, timm_name, out, name)
    for head in ("head", "head_dist"):
        if f"{head}.weight" in get:
            _dense(get, head, out, head)
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


# ----------------------------------------------------------------------------------------------
# The entry points, and vitjax -> timm.

def _family(model) -> str:
    """'vit', 'hybrid', 'bit', or the name vitjax.models.FAMILIES gives another family ('swin')."""
    from vitjax import models  # here: importing this module for to_official must not start JAX

    name = next((n for n, cls in models.FAMILIES.items() if isinstance(model, cls)), None)
    if name is None:
        raise ValueError(f"timm_weights supports the model families {sorted(models.FAMILIES)}, got "
                         f"{type(model).__name__}")
    return "hybrid" if name == "vit" and model.resnet is not None else name


def load(timm_model_or_state_dict: Any, model, image_size=None) -> dict:
    """A timm model or state dict -> a plain parameter tree (numpy) for the vitjax `model`.

    Every shape is checked against the model's (`npz.load`); `image_size` (int or (h, w)): the
    resolution the model will run at, by default the weights' own (a position grid is resized)."""
    from vitjax.interop import npz

    family = _family(model)
    if family == "swin":  # dispatch point: vitjax/interop/timm_swin.py converts Swin both ways
        from vitjax.interop.timm_swin import from_timm
        return from_timm(timm_model_or_state_dict, model)
    num_heads = model.dims()[0].num_heads if family in ("vit", "hybrid") else None
    official = to_official(timm_model_or_state_dict, num_heads=num_heads)
    return npz.load(official, model, image_size=image_size, verbose=False)


def state_dict(params, model) -> dict[str, np.ndarray]:
    """vitjax parameters of `model` -> timm's state dict (float32 numpy arrays, torch layouts), for
    `timm_model.load_state_dict` on the timm model of the same architecture."""
    from vitjax.interop import npz

    family = _family(model)
    if family == "swin":  # dispatch point: vitjax/interop/timm_swin.py converts Swin both ways
        from vitjax.interop.timm_swin import to_timm
        return to_timm(params, model)
    official = npz.to_official(params)
    if family == "bit":
        return _bit_to_timm(official)
    return _vit_to_timm(official, model.dims()[0].num_heads)


def _hwio_to_oihw(w):
    return np.transpose(w, (3, 2, 0, 1))


def _torch_norm(out, dst, a, src, names=("scale", "bias")):
    out[f"{dst}.weight"], out[f"{dst}.bias"] = a.take(f"{src}/{names[0]}"), a.take(f"{src}/{names[1]}")


def _torch_dense(out, dst, a, src):
    out[f"{dst}.weight"], out[f"{dst}.bias"] = a.take(f"{src}/kernel").T, a.take(f"{src}/bias")


def _torch_attention(out, dst, a, src, fused: bool):
    """Official per-head kernels -> timm's fused `qkv` (or `q` and `kv`, MAP pooling) and `proj`."""
    parts = {}
    for name in ("query", "key", "value"):
        kernel = a.take(f"{src}/{name}/kernel")
        parts[name] = (kernel.reshape(kernel.shape[0], -1).T, a.take(f"{src}/{name}/bias").reshape(-1))
    groups = {"qkv": ("query", "key", "value")} if fused else {"q": ("query",), "kv": ("key", "value")}
    for torch_name, names in groups.items():
        out[f"{dst}.{torch_name}.weight"] = np.concatenate([parts[n][0] for n in names])
        out[f"{dst}.{torch_name}.bias"] = np.concatenate([parts[n][1] for n in names])
    kernel = a.take(f"{src}/out/kernel")
    out[f"{dst}.proj.weight"] = kernel.reshape(-1, kernel.shape[-1]).T
    out[f"{dst}.proj.bias"] = a.take(f"{src}/out/bias")


class _Taker:
    """Hands out official arrays by key and remembers which were taken: any left over has no place in timm."""

    def __init__(self, arrays):
        self.arrays, self.taken = arrays, set()

    def __contains__(self, key):
        return key in self.arrays

    def take(self, key):
        self.taken.add(key)
        return np.asarray(self.arrays[key], np.float32)

    def check_all_taken(self, family: str):
        left = sorted(set(self.arrays) - self.taken)
        if left:
            raise ValueError(f"these {family} parameters have no place in timm's model: {left[:12]}"
                             f"{' ...' if len(left) > 12 else ''}")


def _vit_to_timm(official, num_heads: int) -> dict[str, np.ndarray]:
    a, out = _Taker(official), {}
    out["patch_embed.proj.weight"] = _hwio_to_oihw(a.take("embedding/kernel"))
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
        _torch_attention(out, f"{dst}attn", a, f"{src}MultiHeadDotProductAttention_1", fused=True)
        for kind, timm_name, name in _BLOCK_LAYERS:
            (_torch_norm if kind == "norm" else _torch_dense)(out, f"{dst}{timm_name}", a, f"{src}{name}")
    _torch_norm(out, "norm", a, "Transformer/encoder_norm")
    if "MAPHead_0/probe" in a:
        out["attn_pool.latent"] = a.take("MAPHead_0/probe")
        _torch_attention(out, "attn_pool", a, "MAPHead_0/MultiHeadDotProductAttention_0", fused=False)
        for kind, timm_name, name in _MAP_LAYERS:
            (_torch_norm if kind == "norm" else _torch_dense)(out, timm_name, a, name)
    for head in ("head", "head_dist"):
        if f"{head}/kernel" in a:
            _torch_dense(out, head, a, head)
    a.check_all_taken("ViT")
    return out


def _hybrid_backbone_to_timm(a, out):
    bb = "patch_embed.backbone."
    out[f"{bb}stem.conv.weight"] = _hwio_to_oihw(a.take("conv_root/kernel"))
    _torch_norm(out, f"{bb}stem.norm", a, "gn_root")
    units = sorted({tuple(map(int, m.groups())) for k in a.arrays if (m := re.match(r"^block(\d+)/unit(\d+)/", k))})
    for i, j in units:
        src, dst = f"block{i}/unit{j}/", f"{bb}stages.{i - 1}.blocks.{j - 1}."
        for r in (1, 2, 3):
            out[f"{dst}conv{r}.weight"] = _hwio_to_oihw(a.take(f"{src}conv{r}/kernel"))
            _torch_norm(out, f"{dst}norm{r}", a, f"{src}gn{r}")
        if f"{src}conv_proj/kernel" in a:
            out[f"{dst}downsample.conv.weight"] = _hwio_to_oihw(a.take(f"{src}conv_proj/kernel"))
            _torch_norm(out, f"{dst}downsample.norm", a, f"{src}gn_proj")


def _bit_to_timm(official) -> dict[str, np.ndarray]:
    a, out = _Taker(official), {}
    out["stem.conv.weight"] = _hwio_to_oihw(a.take("resnet/root_block/standardized_conv2d/kernel"))
    units = sorted({tuple(map(int, m.groups())) for k in official
                    if (m := re.match(r"^resnet/block(\d+)/unit(\d+)/", k))})
    for i, j in units:
        src, dst = f"resnet/block{i}/unit{j:02d}/", f"stages.{i - 1}.blocks.{j - 1}."
        for r, letter in zip((1, 2, 3), "abc"):
            out[f"{dst}conv{r}.weight"] = _hwio_to_oihw(a.take(f"{src}{letter}/standardized_conv2d/kernel"))
            _torch_norm(out, f"{dst}norm{r}", a, f"{src}{letter}/group_norm", ("gamma", "beta"))
        if f"{src}a/proj/standardized_conv2d/kernel" in a:
            out[f"{dst}downsample.conv.weight"] = _hwio_to_oihw(a.take(f"{src}a/proj/standardized_conv2d/kernel"))
    _torch_norm(out, "norm", a, "resnet/group_norm", ("gamma", "beta"))
    if "resnet/head/conv2d/kernel" in a:
        out["head.fc.weight"] = _hwio_to_oihw(a.take("resnet/head/conv2d/kernel"))
        out["head.fc.bias"] = a.take("resnet/head/conv2d/bias")
    a.check_all_taken("BiT")
    return out
