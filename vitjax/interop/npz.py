"""Official ViT / R50+ViT hybrid / BiT `.npz` checkpoints <-> vitjax parameter trees.

Formats (flat `.npz`, keys joined with '/'):
- ViT (google-research/vision_transformer): `embedding/{kernel,bias}`, `cls`,
  `Transformer/posembed_input/pos_embedding`, `Transformer/encoderblock_{i}/{LayerNorm_0,
  MultiHeadDotProductAttention_1/{query,key,value,out}, LayerNorm_2, MlpBlock_3/{Dense_0,Dense_1}}`,
  `Transformer/encoder_norm`, optional `pre_logits`, `head`, `MAPHead_0/...`; DeiT's distilled models
  add `dist` (the distillation token, after `cls` in the position embedding) and `head_dist`. These are the pre-Linen
  names; our Linen tree calls the block's sub-layers `MultiHeadDotProductAttention_0`, `LayerNorm_1`
  and `MlpBlock_0`. big_vision files (Linen names, blocks stacked under `Transformer/encoderblock`,
  `pos_embedding` at the top, optional `params/` prefix) are read as well.
- R50+ViT hybrids: the ViT keys plus `conv_root`, `gn_root`, `block{i}/unit{j}/{conv1,gn1,...,conv_proj,
  gn_proj}` (same names in our tree).
- BiT (google-research/big_transfer): `resnet/root_block/standardized_conv2d/kernel`,
  `resnet/block{i}/unit{j:02d}/{a,b,c}/{standardized_conv2d/kernel, group_norm/{gamma,beta}}`,
  `resnet/block{i}/unit{j:02d}/a/proj/standardized_conv2d/kernel`, `resnet/group_norm/{gamma,beta}`,
  `resnet/head/conv2d/{kernel,bias}` (a 1x1 conv kernel [1, 1, C, K]).

`load` checks the checkpoint against the target model's parameter shapes (computed with
`jax.eval_shape`, nothing is initialised) and adapts only what fine-tuning needs: the position
embedding is resized to a new grid, a head with another number of classes is re-initialised, and an
ImageNet-21k `pre_logits` layer the model does not have is dropped. Every other difference raises a
ValueError that lists the keys.
"""
from __future__ import annotations

import io
import logging
import os
import re
import zipfile
from typing import Any, Mapping

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import traverse_util

from vitjax import storage
from vitjax.models import posemb as posemb_lib
from vitjax.models.bit import BIT_DEPTHS, BiT
from vitjax.models.vit import ViT

log = logging.getLogger(__name__)

FAMILIES = ("vit", "hybrid", "bit")
_FAMILY_NAMES = {"vit": "ViT", "hybrid": "R50+ViT hybrid", "bit": "BiT ResNet-v2"}

# Sub-layers of an encoder block: official pre-Linen name <-> our Linen name.
_BLOCK_TO_OFFICIAL = {"MultiHeadDotProductAttention_0": "MultiHeadDotProductAttention_1",
                      "LayerNorm_1": "LayerNorm_2", "RMSNorm_1": "RMSNorm_2", "MlpBlock_0": "MlpBlock_3"}
_BLOCK_FROM_OFFICIAL = {v: k for k, v in _BLOCK_TO_OFFICIAL.items()}
_BLOCK_KEY = re.compile(r"^Transformer/encoderblock_(\d+)/([^/]+)/(.*)$")
_SCANNED_PREFIX = "Transformer/encoderblock/"
_POSEMB = "Transformer/posembed_input/pos_embedding"
_FIRST_CONV = {"vit": "embedding/kernel", "hybrid": "conv_root/kernel", "bit": "root_conv/kernel"}


# ----------------------------------------------------------------------------------------------
# Reading and writing flat dicts.

def read(path_or_arrays) -> dict[str, np.ndarray]:
    """A `.npz` path (or an already loaded mapping of arrays) -> {key: np.ndarray}."""
    if isinstance(path_or_arrays, Mapping):
        return {str(k): np.asarray(v) for k, v in path_or_arrays.items()}
    path = os.fspath(path_or_arrays)
    if not storage.exists(path):
        raise FileNotFoundError(f"no checkpoint at {path!r}")
    try:
        with np.load(storage.readable(path), allow_pickle=False) as data:
            if not hasattr(data, "files"):
                raise ValueError("not an archive")
            return {k: data[k] for k in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:  # cut short, or a CRC that fails
        raise ValueError(f"{path!r} is not a readable .npz archive ({e}); official ViT/BiT weights are "
                         f".npz files of named arrays (np.load(path).files): export or download it again") from e


def check_readable(path: str) -> None:
    """Raises ValueError unless `path` opens as a .npz archive and lists its arrays (the zip directory
    sits at the file's end, so a file cut short fails here); reads no array."""
    try:
        with np.load(storage.readable(path), allow_pickle=False) as data:
            if not hasattr(data, "files") or not data.files:
                raise ValueError("no named arrays")
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path!r} is not a readable .npz archive ({e}): export or download it again") from e


def _plain_params(params) -> dict[str, Any]:
    params = nn.meta.unbox(params)
    if hasattr(params, "unfreeze"):
        params = params.unfreeze()
    if isinstance(params, Mapping) and isinstance(params.get("params"), Mapping) \
            and not {"embedding", "root_conv"} & set(params):
        params = params["params"]  # a variables dict: {'params': ..., maybe 'intermediates': ...}
    if not isinstance(params, Mapping):
        raise ValueError(f"expected a parameter tree (nested dict), got {type(params).__name__}")
    return traverse_util.flatten_dict(dict(params), sep="/")


def _to_numpy(x) -> np.ndarray:
    x = np.asarray(jax.device_get(x))
    if x.dtype.kind == "V" or (x.dtype.kind == "f" and x.dtype not in (np.float16, np.float32, np.float64)):
        x = x.astype(np.float32)  # bfloat16 and friends: plain npz readers cannot decode them
    return x


# ----------------------------------------------------------------------------------------------
# Family detection.

def family_of_keys(keys) -> str:
    """'vit', 'hybrid' or 'bit' from checkpoint or parameter-tree keys (official or ours)."""
    keys = set(keys)
    if any(k.startswith("resnet/") for k in keys) or "root_conv/kernel" in keys:
        return "bit"
    if "embedding/kernel" in keys:
        return "hybrid" if "conv_root/kernel" in keys else "vit"
    sample = ", ".join(sorted(keys)[:6])
    raise ValueError(
        f"cannot tell the model family of a checkpoint with keys [{sample}, ...]: a ViT checkpoint has "
        f"'embedding/kernel' (hybrids also 'conv_root/kernel'), a BiT one 'resnet/root_block/...'. "
        f"Is this an official ViT/BiT .npz file?")


def family_of_model(model) -> str:
    if isinstance(model, BiT):
        return "bit"
    if isinstance(model, ViT):
        return "hybrid" if model.resnet is not None else "vit"
    raise ValueError(f"npz.load supports vitjax.models.ViT and vitjax.models.BiT, got {type(model).__name__}")


def _describe_bit(flat) -> str:
    """'BiT-R50x1' guessed from canonical BiT keys (for error messages)."""
    try:
        units = []
        for stage in range(1, 5):
            names = {k.split("/")[1] for k in flat if k.startswith(f"block{stage}/")}
            units.append(len(names))
        width = flat["root_conv/kernel"].shape[-1] // 64
        depth = {v: k for k, v in BIT_DEPTHS.items()}[tuple(units)]
        return f"BiT(num_classes=..., variant='R{depth}x{width}')"
    except Exception:  # noqa: BLE001 - only a hint
        return "vitjax.models.BiT(...)"


# ----------------------------------------------------------------------------------------------
# Official names -> our (unrolled) Linen names, and back.

def _unstack_scanned(flat):
    """`Transformer/encoderblock/<x>` with a leading layer axis -> `Transformer/encoderblock_{i}/<x>`."""
    out = {}
    for key, value in flat.items():
        if key.startswith(_SCANNED_PREFIX):
            rest = key[len(_SCANNED_PREFIX):]
            for i in range(value.shape[0]):
                out[f"Transformer/encoderblock_{i}/{rest}"] = value[i]
        else:
            out[key] = value
    return out


def _stack_scanned(flat):
    """Inverse of `_unstack_scanned`: per-layer arrays -> one stacked `Transformer/encoderblock`."""
    out, layers = {}, {}
    for key, value in flat.items():
        match = re.match(r"^Transformer/encoderblock_(\d+)/(.*)$", key)
        if match:
            layers.setdefault(match.group(2), {})[int(match.group(1))] = value
        else:
            out[key] = value
    for rest, by_layer in layers.items():
        out[_SCANNED_PREFIX + rest] = np.stack([by_layer[i] for i in sorted(by_layer)])
    return out


def _rename_block_layer(key, table):
    match = _BLOCK_KEY.match(key)
    if not match:
        return key
    index, layer, rest = match.groups()
    return f"Transformer/encoderblock_{index}/{table.get(layer, layer)}/{rest}"


def _vit_from_official(flat):
    flat = _unstack_scanned(flat)
    if "pos_embedding" in flat and _POSEMB not in flat:  # big_vision keeps it at the top
        flat[_POSEMB] = flat.pop("pos_embedding")
    pre_linen = any("/MultiHeadDotProductAttention_1/" in k for k in flat if k.startswith("Transformer/"))
    if pre_linen:
        flat = {_rename_block_layer(k, _BLOCK_FROM_OFFICIAL): v for k, v in flat.items()}
    return flat


def _vit_to_official(flat):
    flat = _unstack_scanned(flat)
    return {_rename_block_layer(k, _BLOCK_TO_OFFICIAL): v for k, v in flat.items()}


_BIT_UNIT = re.compile(r"^(block\d+)/(unit\d+)/(.*)$")
_BIT_NORM_PARAM = {"gamma": "scale", "beta": "bias"}


def _bit_from_official(flat):
    out = {}
    for key, value in flat.items():
        name = key[len("resnet/"):] if key.startswith("resnet/") else key
        new = None
        if name == "root_block/standardized_conv2d/kernel":
            new = "root_conv/kernel"
        elif name in ("group_norm/gamma", "group_norm/beta"):
            new = f"norm/{_BIT_NORM_PARAM[name.rsplit('/', 1)[1]]}"
            value = value.reshape(-1)
        elif name == "head/conv2d/kernel":
            new, value = "head/kernel", value.reshape(value.shape[-2], value.shape[-1])
        elif name == "head/conv2d/bias":
            new = "head/bias"
        elif match := _BIT_UNIT.match(name):
            block, unit, rest = match.groups()
            unit = f"unit{int(unit[4:]):02d}"
            parts = rest.split("/")
            if parts[1:] == ["standardized_conv2d", "kernel"] and parts[0] in "abc":
                new = f"{block}/{unit}/conv_{parts[0]}/kernel"
            elif parts[1:2] == ["group_norm"] and parts[0] in "abc" and parts[2] in _BIT_NORM_PARAM:
                new = f"{block}/{unit}/norm_{parts[0]}/{_BIT_NORM_PARAM[parts[2]]}"
                value = value.reshape(-1)
            elif rest == "a/proj/standardized_conv2d/kernel":
                new = f"{block}/{unit}/conv_proj/kernel"
        out[new or key] = value  # unknown keys keep their name and are reported as unexpected
    return out


def _bit_to_official(flat):
    out = {}
    for key, value in flat.items():
        new = None
        if key == "root_conv/kernel":
            new = "root_block/standardized_conv2d/kernel"
        elif key in ("norm/scale", "norm/bias"):
            new = "group_norm/" + ("gamma" if key.endswith("scale") else "beta")
        elif key == "head/kernel":
            new, value = "head/conv2d/kernel", value.reshape(1, 1, *value.shape)
        elif key == "head/bias":
            new = "head/conv2d/bias"
        elif match := _BIT_UNIT.match(key):
            block, unit, rest = match.groups()
            layer, param = rest.split("/")
            if layer == "conv_proj":
                new = f"{block}/{unit}/a/proj/standardized_conv2d/kernel"
            elif layer.startswith("conv_"):
                new = f"{block}/{unit}/{layer[5:]}/standardized_conv2d/kernel"
            elif layer.startswith("norm_"):
                new = f"{block}/{unit}/{layer[5:]}/group_norm/" + ("gamma" if param == "scale" else "beta")
        if new is None:
            raise ValueError(f"parameter {key!r} has no place in the official BiT format")
        out["resnet/" + new] = value
    return out


def to_official(params) -> dict[str, np.ndarray]:
    """Our parameter tree (boxed or plain, scanned or unrolled, with or without a 'params' level)
    -> {official key: np.ndarray}."""
    flat = {k: _to_numpy(v) for k, v in _plain_params(params).items()}
    family = family_of_keys(flat)
    return _bit_to_official(flat) if family == "bit" else _vit_to_official(flat)


def from_official(arrays: Mapping[str, np.ndarray]) -> tuple[str, dict[str, np.ndarray]]:
    """{official key: array} -> (family, {our unrolled Linen key: array}); no shape checks."""
    flat = dict(arrays)
    for prefix in ("opt/target/", "params/img/", "params/"):
        if not any(k in flat for k in ("embedding/kernel", "resnet/root_block/standardized_conv2d/kernel")) \
                and any(k.startswith(prefix) for k in flat):
            flat = {k[len(prefix):] if k.startswith(prefix) else k: v for k, v in flat.items()}
    family = family_of_keys(flat)
    return family, (_bit_from_official(flat) if family == "bit" else _vit_from_official(flat))


def save(path, params) -> str:
    """Writes `params` as an official-format `.npz` (readable by timm's `load_pretrained`).

    Returns the path written ('.npz' is appended when missing). `path` may be a URL (gs://...):
    the archive is then built in memory and uploaded whole.
    """
    arrays = to_official(params)
    path = os.fspath(path)
    if not path.endswith(".npz"):
        path += ".npz"
    if storage.is_remote(path):
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        storage.write_bytes(path, buffer.getvalue())
    else:
        np.savez(path, **arrays)
    return path


# ----------------------------------------------------------------------------------------------
# Loading into a model.

def _as_hw(image_size) -> tuple[int, int]:
    if isinstance(image_size, int):
        return image_size, image_size
    image_size = tuple(int(s) for s in image_size)
    if len(image_size) != 2:
        raise ValueError(f"image_size must be an int or (height, width), got {image_size}")
    return image_size


def prefix_tokens(keys) -> int:
    """Position-embedding entries before the patch grid: the CLS token's, and the distillation token's."""
    return int("cls" in keys) + int("dist" in keys)


def _checkpoint_grid(ckpt, num_prefix):
    table = ckpt.get(_POSEMB)
    if table is None:
        return None
    tokens = table.shape[1] - num_prefix
    side = int(round(np.sqrt(max(tokens, 0))))
    return (side, side) if side * side == tokens and tokens > 0 else None


def _expected(model, image_size, channels) -> dict[str, jax.ShapeDtypeStruct]:
    images = jax.ShapeDtypeStruct((1, *image_size, channels), jnp.float32)
    # Unboxed while traced: under a mesh and logical rules (the trainer's, for init_from) unboxing applies
    # each parameter's sharding constraint, which the abstract shapes eval_shape returns cannot take.
    shapes = jax.eval_shape(lambda x: nn.meta.unbox(model.init(jax.random.key(0), x, train=False))["params"],
                            images)
    return traverse_util.flatten_dict(shapes, sep="/")


def _describe(shape):
    return "x".join(map(str, shape)) if len(shape) else "scalar"


def _head_init(model, shape, dtype, name):
    if name.endswith("bias") or getattr(model, "head_zero_init", True):
        return np.zeros(shape, dtype)
    return np.asarray(nn.initializers.lecun_normal()(jax.random.key(0), shape, dtype))


def _adapt_channels(kernel, channels):
    """Sums (1 channel) or tiles and rescales the input-channel axis of an HWIO kernel."""
    have = kernel.shape[2]
    if channels == 1:
        return kernel.sum(axis=2, keepdims=True)
    reps = -(-channels // have)
    return np.tile(kernel, (1, 1, reps, 1))[:, :, :channels] * (have / channels)


def load(path, model, image_size=None, *, channels: int | None = None, adapt_channels: bool = False,
         verbose: bool = True, source: str | None = None) -> dict:
    """Official `.npz` (a path, or a mapping of arrays) -> a plain parameter tree for `model`.

    The leaves are numpy arrays in the model's `param_dtype` (place them with `jax.device_put`, with
    shardings if needed); use the result as `model.apply({'params': params}, images)`.
    `image_size` (int or (h, w)) is the resolution the model will run at; by default the checkpoint's
    own (its position grid x patch size; 224 for BiT). `channels` is the model's input channel count
    (default: the checkpoint's). The target tree is computed with `jax.eval_shape` (no initialisation).

    Adapted, with a log message: a position embedding on another grid (bilinear resize of the grid
    part, CLS entry kept), a head with another number of classes (or none in the file;
    re-initialised as the model initialises it), a `pre_logits` layer the model lacks (dropped, as the
    official fine-tuning code does). With `adapt_channels=True`, the first convolution is summed over
    input channels for 1-channel models (tiled and rescaled for other counts). Anything else that
    differs raises ValueError listing the keys. `source` names what the arrays came from, in errors
    (default: the path, or 'the given arrays').
    """
    source = source or (f"{path!r}" if not isinstance(path, Mapping) else "the given arrays")
    family, ckpt = _read_of_the_models_family(path, model, source)
    channels = _fit_channels(ckpt, family, channels, adapt_channels, verbose)
    num_prefix = prefix_tokens(ckpt)
    if image_size is None:
        image_size = _checkpoint_image_size(ckpt, family, model, num_prefix, source)
    image_size = _as_hw(image_size)
    expected = _expected(model, image_size, channels)
    scanned = any(k.startswith(_SCANNED_PREFIX) for k in expected)
    if scanned:
        expected = _unstack_scanned({k: _LayerAxis(v) if k.startswith(_SCANNED_PREFIX) else v
                                     for k, v in expected.items()})

    pre_logits_note = _drop_pre_logits(ckpt, expected)
    notes = [pre_logits_note,
             _fit_head(ckpt, expected, model, after_dropped_pre_logits=pre_logits_note is not None),
             _resize_position_embedding(ckpt, expected, model, image_size, num_prefix)]
    _report(ckpt, expected, model, image_size, source, [note for note in notes if note], verbose)
    out = {k: np.asarray(ckpt[k], dtype=expected[k].dtype) for k in expected}
    if scanned:
        out = _stack_scanned(out)
    return traverse_util.unflatten_dict(out, sep="/")


def _read_of_the_models_family(path, model, source: str) -> tuple[str, dict[str, np.ndarray]]:
    """(family, {our key: array}) of the checkpoint; raises ValueError naming the model to load it
    into when its family is not the model's."""
    target = family_of_model(model)
    family, ckpt = from_official(read(path))
    if family != target:
        hint = {"bit": _describe_bit(ckpt), "vit": "vitjax.models.ViT(variant=..., resnet=None)",
                "hybrid": "vitjax.models.ViT(variant='B/16', resnet='R50')"}[family]
        raise ValueError(
            f"{source} is a {_FAMILY_NAMES[family]} checkpoint but the model is a {_FAMILY_NAMES[target]} "
            f"({type(model).__name__}); load it into a matching model, e.g. {hint}")
    return family, ckpt


def _fit_channels(ckpt, family: str, channels: int | None, adapt_channels: bool, verbose: bool) -> int:
    """The model's input channels (default: the checkpoint's); folds the first convolution to them
    in `ckpt` when they differ and `adapt_channels`, else raises ValueError."""
    first = _FIRST_CONV[family]
    ckpt_channels = ckpt[first].shape[2] if first in ckpt and ckpt[first].ndim == 4 else 3
    channels = ckpt_channels if channels is None else int(channels)
    if channels != ckpt_channels:
        if not adapt_channels:
            raise ValueError(
                f"channel-count mismatch: the checkpoint's '{first}' {ckpt[first].shape} takes "
                f"{ckpt_channels}-channel images but the model is built for channels={channels}. Feed "
                f"{ckpt_channels}-channel images (e.g. repeat a grey channel: jnp.repeat(x, 3, axis=-1)), "
                f"or pass adapt_channels=True to fold the first convolution's kernel to {channels} channels")
        ckpt[first] = _adapt_channels(ckpt[first], channels)
        if verbose:
            log.warning("adapted %s from %d to %d input channels", first, ckpt_channels, channels)
    return channels


def _checkpoint_image_size(ckpt, family: str, model, num_prefix: int, source: str) -> tuple[int, int]:
    """The resolution the checkpoint was trained at: its position grid x patch size; 224 for BiT."""
    if family == "bit":
        return 224, 224
    grid = _checkpoint_grid(ckpt, num_prefix)
    if grid is None:
        raise ValueError(f"cannot infer the image size of {source} (no square position grid); pass image_size=")
    _, patch = model.dims()
    return grid[0] * patch, grid[1] * patch


def _drop_pre_logits(ckpt, expected) -> str | None:
    """Removes an ImageNet-21k pre-logits layer the model does not have (the official fine-tuning
    drops it); returns the note saying so, or None."""
    if "pre_logits/kernel" not in ckpt or "pre_logits/kernel" in expected:
        return None
    ckpt.pop("pre_logits/kernel")
    ckpt.pop("pre_logits/bias", None)
    return "dropped the checkpoint's pre_logits layer (the model has representation_size=None)"


def _fit_head(ckpt, expected, model, *, after_dropped_pre_logits: bool) -> str | None:
    """Re-initialises the head in `ckpt` for another number of classes, for none in the file, or behind
    a dropped pre-logits layer; returns the note saying so, or None."""
    note = None
    for name in ("head/kernel", "head/bias", "head_dist/kernel", "head_dist/bias"):
        want, have = expected.get(name), ckpt.get(name)
        if want is None or (have is not None and have.shape == want.shape):
            continue
        if have is None or after_dropped_pre_logits or have.shape[:-1] == want.shape[:-1]:
            ckpt[name] = _head_init(model, want.shape, want.dtype, name)
            if name == "head/kernel":
                note = (f"re-initialised the head for {want.shape[-1]} classes (checkpoint: "
                        f"{'no head' if have is None else f'{have.shape[-1]} classes'})")
    return note


def _resize_position_embedding(ckpt, expected, model, image_size, num_prefix: int) -> str | None:
    """Resizes the grid part of the checkpoint's position embedding to the model's grid at
    `image_size`; returns the note saying so, or None (same grid, or one this cannot resize)."""
    want, have = expected.get(_POSEMB), ckpt.get(_POSEMB)
    if want is None or have is None or have.shape == want.shape \
            or have.ndim != 3 or have.shape[-1] != want.shape[-1]:
        return None
    old_grid = _checkpoint_grid(ckpt, num_prefix)
    _, patch = model.dims()
    new_grid = (image_size[0] // patch, image_size[1] // patch)
    want_prefix = prefix_tokens(expected)
    if old_grid is None or want_prefix != num_prefix or want.shape[1] != num_prefix + new_grid[0] * new_grid[1]:
        return None
    ckpt[_POSEMB] = posemb_lib.resize_grid(have, new_grid, num_prefix, old_grid)
    return (f"resized the position embedding from a {old_grid[0]}x{old_grid[1]} to a "
            f"{new_grid[0]}x{new_grid[1]} grid ({tuple(have.shape)} -> {tuple(want.shape)})")


def _report(ckpt, expected, model, image_size, source: str, notes: list[str], verbose: bool) -> None:
    """Raises ValueError listing the keys that still differ from the model's (20 of each kind);
    otherwise logs what was adapted."""
    mismatched = sorted((k for k in expected if k in ckpt and tuple(ckpt[k].shape) != tuple(expected[k].shape)),
                        key=_network_order)
    missing = sorted((k for k in expected if k not in ckpt), key=_network_order)
    unexpected = sorted((k for k in ckpt if k not in expected), key=_network_order)
    if missing or unexpected or mismatched:
        lines = [f"{source} does not fit the model {_model_summary(model)} at image size "
                 f"{image_size[0]}x{image_size[1]} (only the resolution and the number of classes may differ):"]
        lines += [f"  shape mismatch {k}: checkpoint {_describe(ckpt[k].shape)}, model "
                  f"{_describe(expected[k].shape)}" for k in mismatched[:20]]
        lines += [f"  missing from the checkpoint {k}: model {_describe(expected[k].shape)}"
                  for k in missing[:20]]
        lines += [f"  unexpected in the checkpoint {k}: {_describe(ckpt[k].shape)}" for k in unexpected[:20]]
        more = max(len(mismatched) - 20, 0) + max(len(missing) - 20, 0) + max(len(unexpected) - 20, 0)
        if more:
            lines.append(f"  ... and {more} more")
        lines.append("Build the model with the checkpoint's dimensions (variant, patch_size, width, depth, "
                     "mlp_dim, pool, representation_size) or pick the matching checkpoint.")
        raise ValueError("\n".join(lines))
    if verbose:
        for note in notes:
            log.warning("npz.load: %s", note)


def _network_order(key):
    """Input side first (embedding, stem), then blocks in numeric order, then the final norm and heads."""
    if key.startswith(("embedding/", "cls", "dist", "root_conv/", "conv_root/", "gn_root/")):
        group = 0
    elif key.startswith(("Transformer/encoder_norm/", "norm/", "MAPHead_0/", "pre_logits/", "head/", "head_dist/")):
        group = 2
    else:
        group = 1
    return group, [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", key)]


class _LayerAxis:
    """A stand-in with a leading layer axis, so `_unstack_scanned` can split ShapeDtypeStructs."""

    def __init__(self, struct):
        self.struct = struct
        self.shape = struct.shape

    def __getitem__(self, i):
        return jax.ShapeDtypeStruct(self.shape[1:], self.struct.dtype)


def _model_summary(model) -> str:
    if isinstance(model, BiT):
        return f"BiT(variant={model.variant!r}, num_classes={model.num_classes})"
    size, patch = model.dims()
    extra = f", resnet={model.resnet!r}" if model.resnet else ""
    return (f"ViT(width={size.width}, depth={size.depth}, mlp_dim={size.mlp_dim}, num_heads={size.num_heads}, "
            f"patch_size={patch}, pool={model.pool!r}{extra}, num_classes={model.num_classes})")
