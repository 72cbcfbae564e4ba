"""The layout rules of torch/timm tensors against vitjax's, shared by the timm converters.

torch stores a Linear's weight as [out, in] (vitjax's Dense kernel is [in, out]: transposed), a
convolution's as OIHW (vitjax: HWIO), and attention as one fused `qkv` Linear (or `q` and `kv`, as in
timm's MAP pooling) plus `proj`, where vitjax (like the official checkpoints) keeps per-head
`query/key/value` kernels [D, heads, head_dim] and an `out` kernel [heads, head_dim, D]. Norms are
`weight`/`bias` in torch, `scale`/`bias` (or `gamma`/`beta`) here.

The helpers work on flat dicts: torch names with `.` (`blocks.0.attn.qkv.weight`) on one side, vitjax
or official paths with `/` (`.../query/kernel`) on the other. timm -> vitjax reads through a `Reader`
(`get(key)`) and writes `out[path]`; vitjax -> timm reads through a `Taker` (`a.take(path)`) and writes
`out[torch name]`. Both remember what was read, so a caller can name the parameters left over.
Used by vitjax/interop/timm_weights.py (ViT, DeiT, hybrids, BiT), vitjax/interop/timm_swin.py and
vitjax/interop/sam_weights.py (Segment Anything).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np


def to_numpy(x) -> np.ndarray:
    """A torch tensor or array-like -> numpy; floating point as float32, other dtypes as they are."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().float().numpy()
    return np.asarray(x, np.float32) if np.asarray(x).dtype.kind == "f" else np.asarray(x)


def oihw_to_hwio(w):
    """torch's convolution weight OIHW -> vitjax's kernel HWIO."""
    return np.transpose(w, (2, 3, 1, 0))


def hwio_to_oihw(w):
    """vitjax's convolution kernel HWIO -> torch's weight OIHW."""
    return np.transpose(w, (3, 2, 0, 1))


# ----------------------------------------------------------------------------------------------
# torch -> vitjax

class Reader:
    """Hands out torch arrays by key (`get(key)`) and remembers which were read (`used`)."""

    def __init__(self, sd: Mapping[str, np.ndarray]):
        self.sd, self.used = sd, set()

    def __contains__(self, key):
        return key in self.sd

    def __call__(self, key):
        self.used.add(key)
        return self.sd[key]


def attention_from_torch(get, prefix, out, dst, num_heads, q_key, kv_key, qkv_key):
    """Fused (`qkv_key`) or split (`q_key`, `kv_key`) torch projections -> official per-head kernels
    [D, heads, head_dim] (`query/key/value`) and [heads, head_dim, D] (`out`)."""
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
    for name, (w, b) in parts.items():
        out[f"{dst}/{name}/kernel"], out[f"{dst}/{name}/bias"] = projection_from_torch(w, b, num_heads)
    out[f"{dst}/out/kernel"] = merge_from_torch(get(f"{prefix}proj.weight"), num_heads)
    out[f"{dst}/out/bias"] = get(f"{prefix}proj.bias")


def projection_from_torch(weight, bias, num_heads):
    """A torch Linear projecting to heads ([heads * head_dim, in], [heads * head_dim]) -> vitjax's
    HeadsProjection (kernel [in, heads, head_dim], bias [heads, head_dim])."""
    features_out, features_in = weight.shape
    head_dim = features_out // num_heads
    return weight.T.reshape(features_in, num_heads, head_dim), bias.reshape(num_heads, head_dim)


def merge_from_torch(weight, num_heads):
    """A torch Linear merging heads ([out, heads * head_dim]) -> vitjax's HeadsMerge kernel
    [heads, head_dim, out]."""
    features_out, features_in = weight.shape
    return weight.T.reshape(num_heads, features_in // num_heads, features_out)


def norm_from_torch(get, src, out, dst, names=("scale", "bias")):
    """torch `src.weight`/`src.bias` -> `dst/scale`/`dst/bias` (or the two `names` given)."""
    out[f"{dst}/{names[0]}"] = get(f"{src}.weight")
    out[f"{dst}/{names[1]}"] = get(f"{src}.bias")


def dense_from_torch(get, src, out, dst):
    """torch Linear [out, in] -> Dense kernel [in, out] and bias."""
    out[f"{dst}/kernel"] = get(f"{src}.weight").T
    out[f"{dst}/bias"] = get(f"{src}.bias")


# ----------------------------------------------------------------------------------------------
# vitjax -> torch

class Taker:
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


def norm_to_torch(out, dst, a, src, names=("scale", "bias")):
    """`src/scale`/`src/bias` (or the two `names` given) -> torch `dst.weight`/`dst.bias`."""
    out[f"{dst}.weight"], out[f"{dst}.bias"] = a.take(f"{src}/{names[0]}"), a.take(f"{src}/{names[1]}")


def dense_to_torch(out, dst, a, src):
    """Dense kernel [in, out] and bias -> torch Linear [out, in]."""
    out[f"{dst}.weight"], out[f"{dst}.bias"] = a.take(f"{src}/kernel").T, a.take(f"{src}/bias")


def attention_to_torch(out, dst, a, src, fused: bool):
    """Official per-head kernels -> timm's fused `qkv` (or `q` and `kv`, MAP pooling) and `proj`."""
    parts = {name: projection_to_torch(a.take(f"{src}/{name}/kernel"), a.take(f"{src}/{name}/bias"))
             for name in ("query", "key", "value")}
    groups = {"qkv": ("query", "key", "value")} if fused else {"q": ("query",), "kv": ("key", "value")}
    for torch_name, names in groups.items():
        out[f"{dst}.{torch_name}.weight"] = np.concatenate([parts[n][0] for n in names])
        out[f"{dst}.{torch_name}.bias"] = np.concatenate([parts[n][1] for n in names])
    out[f"{dst}.proj.weight"] = merge_to_torch(a.take(f"{src}/out/kernel"))
    out[f"{dst}.proj.bias"] = a.take(f"{src}/out/bias")


def projection_to_torch(kernel, bias):
    """vitjax's HeadsProjection (kernel [in, heads, head_dim], bias [heads, head_dim]) -> a torch Linear's
    weight [heads * head_dim, in] and bias."""
    return kernel.reshape(kernel.shape[0], -1).T, bias.reshape(-1)


def merge_to_torch(kernel):
    """vitjax's HeadsMerge kernel [heads, head_dim, out] -> a torch Linear's weight [out, heads * head_dim]."""
    return kernel.reshape(-1, kernel.shape[-1]).T
