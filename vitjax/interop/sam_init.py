"""SAM's image encoder started from a vitjax ViT or MAE encoder: `init_from` for `objective='sam'`.

    start = sam_init.read("runs/mae", sam_model, pixel_range=(-1.0, 1.0))   # reads and checks; nothing compiles
    params = start.apply(params)          # SAM's initialised parameters with the encoder's in place
    print(start.summary())                # what was loaded, what stayed at init, what the source had besides

SAM initialises its image encoder from an MAE-pre-trained ViT (Kirillov et al. 2023, after ViTDet); the
source here is a vitjax run or checkpoint (read by vitjax/checkpoints/reader.py, read-only and verified) or
the .npz `vitjax export` writes of one: an MAE's encoder, or a supervised (or DINO) ViT's. What maps is
what is the same computation in both networks:
- every block, tensor for tensor: `Transformer/encoderblock_i/{LayerNorm_0, LayerNorm_1, MlpBlock_0,
  MultiHeadDotProductAttention_0}` -> `image_encoder/block_i/{LayerNorm_0, LayerNorm_1, MlpBlock_0,
  attention}` (same pre-norm block, same epsilon 1e-6, same exact GELU, same projections' layout);
- the patch embedding, rewritten for SAM's input (`patch_kernel`): SAM sees the grey canvas repeated as
  RGB and normalised by its PIXEL_MEAN and PIXEL_STD, the source saw the pixels mapped linearly from
  0..255 to `pixel_range` (its value_range pp op). The kernel is split over the three channels and
  scaled, and the bias takes the offset, so SAM's patch embedding of an image equals the source's of the
  same pixels (exactly, up to float rounding: tested). Only the image's own pixels: SAM's zero padding
  past the image (none when the canvas is model.image_size) is its normalised zero, not the source's;
- the position embedding: a ViT's learned table without its CLS (and distillation) entry, bilinearly
  resized from the source's grid to SAM's where they differ (`posemb.resize_grid`, as fine-tuning at a
  new resolution does); an MAE's fixed 2-D sin-cos table evaluated on SAM's grid, as `pretrained.load`
  gives it to a ViT: the table is a function of the position, and with equal patches neighbouring
  tokens are as far apart as in pre-training.
What stays at SAM's own initialisation: the blocks' relative-position tables (SAM's alone; zero), the
neck, the prompt encoder and the mask decoder. What the source has that SAM has no place for is left out
and listed: the CLS token, the final `encoder_norm` (SAM's blocks feed the neck, ViTDet drops it), a
classifier head, an MAE's decoder, a DINO head.

Refused with a ValueError naming the problem and the fix, before anything compiles: a source that is no
ViT or MAE encoder (a BiT, a hybrid, a Swin run), widths, depths, heads, MLP widths or patch sizes that
differ from the model's, a ViT without a learned position table, a block with parameters SAM's block has
not, a run whose pixel range differs from `pixel_range`. A path that does not exist: FileNotFoundError.
Tests: `python -m pytest tests/interop/test_sam_init.py`.
"""
import dataclasses
import re

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import traverse_util

from vitjax import rundir, storage
from vitjax.checkpoints import locations, reader
from vitjax.data import preprocess as pp
from vitjax.interop import npz
from vitjax.models import posemb
from vitjax.models.sam import PIXEL_MEAN, PIXEL_STD

ENCODER = "image_encoder"
_BLOCK = re.compile(r"^Transformer/encoderblock_(\d+)/(.+)$")
_SUBLAYERS = {"LayerNorm_0": "LayerNorm_0", "LayerNorm_1": "LayerNorm_1", "MlpBlock_0": "MlpBlock_0",
              "MultiHeadDotProductAttention_0": "attention"}  # source block's -> SAM block's
_POSEMB = "Transformer/posembed_input/pos_embedding"


@dataclasses.dataclass(frozen=True)
class EncoderStart:
    """SAM encoder parameters read from `source`: `params` {SAM key: array} to put in place, `at_init` the
    SAM keys that keep their initialisation, `unused` the source's keys that have no place in SAM."""
    source: str
    kind: str  # 'mae' or 'vit'
    params: dict = dataclasses.field(compare=False, repr=False)
    at_init: tuple[str, ...]
    unused: tuple[str, ...]
    position: str  # how the position embedding was made, in words

    def apply(self, params) -> dict:
        """SAM's parameter tree `params` (initialised) with the loaded ones in place, each in its dtype."""
        flat = traverse_util.flatten_dict(nn.meta.unbox(params), sep="/")
        for key, value in self.params.items():
            flat[key] = jnp.asarray(value, flat[key].dtype)
        return traverse_util.unflatten_dict(flat, sep="/")

    def report(self) -> dict:
        """What the run records (init_from.json): the source and every key loaded, left at init, left out."""
        return {"init_from": self.source, "kind": self.kind, "position_embedding": self.position,
                "loaded": sorted(self.params), "at_init": list(self.at_init), "unused_source": list(self.unused)}

    def summary(self) -> str:
        """One line for the run's log."""
        blocks = sorted({k.split("/")[1] for k in self.params if k.split("/")[1].startswith("block_")})
        return (f"init_from {self.source} ({self.kind}): loaded {len(self.params)} SAM encoder parameters "
                f"(patch embedding, {len(blocks)} blocks' attention, MLP and norms; position embedding: "
                f"{self.position}); at init {len(self.at_init)} ({_groups(self.at_init)}); "
                f"not used from the source {len(self.unused)} ({_groups(self.unused)})")


def _groups(keys) -> str:
    """'mask_decoder x86, rel_pos_h x6, ...': keys counted by their network part (a block's by its name)."""
    counts = {}
    for key in keys:
        parts = key.split("/")
        if parts[0] in (ENCODER, "Transformer") and len(parts) > 2:
            name = parts[-1] if parts[1].startswith(("block_", "encoderblock_")) else "/".join(parts[:2])
        else:
            name = parts[0]
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{name} x{n}" if n > 1 else name for name, n in sorted(counts.items()))


def read(path: str, model, *, pixel_range=(-1.0, 1.0), what: str = "init_from") -> EncoderStart:
    """The encoder parameters of the run, checkpoint or .npz at `path` for the SAM `model` (see the module
    docstring); `pixel_range`: what the source's inputs were mapped to from 0..255."""
    source = f"{what}={path!r}"
    flat, run_dir = _source_arrays(path, source)
    kind = _kind(flat, source)
    if run_dir is not None:
        _check_pixel_range(run_dir, pixel_range, source)
    expected = _sam_shapes(model)
    _check_dims(flat, model, kind, source)
    loaded, position = _mapped(flat, model, kind, pixel_range, source)
    for key, value in loaded.items():
        if tuple(value.shape) != tuple(expected[key].shape):  # a bug here, not a user's mistake: dims agree
            raise AssertionError(f"{key}: mapped {value.shape}, SAM has {expected[key].shape}")
    mapped_from = {_source_key(key) for key in loaded}
    unused = tuple(sorted(k for k in flat if k not in mapped_from))
    at_init = tuple(sorted(k for k in expected if k not in loaded))
    return EncoderStart(path, kind, loaded, at_init, unused, position)


def _source_arrays(path: str, source: str) -> tuple[dict, str | None]:
    """({vitjax key: numpy array}, unrolled and without a 'params' level; the run directory or None)."""
    if not storage.exists(path):
        raise FileNotFoundError(f"{source} does not exist")
    if path.endswith(".npz"):
        arrays, run_dir = npz.read(path), None
    else:
        location = locations.locate(path)
        arrays, run_dir = reader.read_params(path), location.run_dir
    try:
        converted = npz.from_official(arrays if run_dir is None else npz.to_official(arrays))[1]
    except ValueError:  # neither a ViT's nor a BiT's keys
        converted = traverse_util.flatten_dict(nn.meta.unbox(arrays), sep="/") if run_dir else dict(arrays)
    if "embedding/kernel" not in converted or not any(_BLOCK.match(k) for k in converted) \
            or "conv_root/kernel" in converted:
        sample = ", ".join(sorted(converted)[:4])
        raise ValueError(f"{source} is not a ViT or MAE encoder (its parameters [{sample}, ...] are not a ViT's "
                         f"patch embedding 'embedding/kernel' and blocks 'Transformer/encoderblock_i'): SAM's "
                         f"image encoder starts from a vitjax ViT or MAE run only, not a BiT, hybrid or Swin; "
                         f"pass one, or clear init_from")
    return {k: np.asarray(v) for k, v in converted.items()}, run_dir


def _kind(flat: dict, source: str) -> str:
    if "decoder_pred/kernel" in flat:
        return "mae"
    if _POSEMB not in flat:
        raise ValueError(f"{source} is a ViT without a learned position embedding (posemb 'sincos2d' or 'none'), "
                         f"which SAM's learned table cannot take as it is; start from a ViT trained with "
                         f"posemb='learned', or from an MAE run")
    return "vit"


def _check_pixel_range(run_dir: str, pixel_range, source: str) -> None:
    """ValueError when the run's evaluation pp maps pixels elsewhere than `pixel_range`."""
    config = rundir.read_json(run_dir, rundir.CONFIG) or {}
    ops = [(name, args, kwargs) for name, args, kwargs in pp.parse(config.get("data", {}).get("pp_eval", ""))
           if name == "value_range"]
    low, high = _value_range(*ops[-1][1:]) if ops else (0.0, 255.0)  # without the op: pixels as they are
    if not np.allclose((low, high), tuple(pixel_range)):
        raise ValueError(f"{source} saw pixels in ({low:g}, {high:g}) (its data.pp_eval), but "
                         f"sam.init_pixel_range={tuple(pixel_range)}: set --config.sam.init_pixel_range="
                         f"'({low:g}, {high:g})' so that SAM's patch embedding sees what the source's did")


def _value_range(args, kwargs) -> tuple[float, float]:
    """(lo, hi) of a value_range op's arguments, for pixels 0..255 (its defaults' lo -1, hi 1)."""
    names = ("lo", "hi", "in_min", "in_max")
    values = {"lo": -1.0, "hi": 1.0, "in_min": 0.0, "in_max": 255.0, **dict(zip(names, args)), **kwargs}
    if (values["in_min"], values["in_max"]) != (0.0, 255.0):
        raise ValueError(f"a source mapping pixels from ({values['in_min']}, {values['in_max']}) is not mapped "
                         f"into SAM (pixels 0..255); pre-train with value_range(lo, hi) on 0..255")
    return float(values["lo"]), float(values["hi"])


def _sam_shapes(model) -> dict:
    """{SAM parameter key: ShapeDtypeStruct} from tracing its init (nothing compiles)."""
    images = jax.ShapeDtypeStruct((1, model.image_size, model.image_size, 3), jnp.float32)
    shapes = jax.eval_shape(lambda x: model.init(jax.random.key(0), x), images)["params"]
    return traverse_util.flatten_dict(nn.meta.unbox(shapes), sep="/")


def _source_dims(flat: dict) -> dict:
    """{'width', 'depth', 'num_heads', 'mlp_dim', 'patch_size'} of a ViT-layout encoder."""
    blocks = {int(m.group(1)) for m in map(_BLOCK.match, flat) if m}
    kernel = flat["embedding/kernel"]
    first = "Transformer/encoderblock_0"
    return {"width": kernel.shape[-1], "depth": len(blocks), "patch_size": kernel.shape[0],
            "num_heads": flat[f"{first}/MultiHeadDotProductAttention_0/query/kernel"].shape[1],
            "mlp_dim": flat[f"{first}/MlpBlock_0/Dense_0/kernel"].shape[1]}


def _check_dims(flat: dict, model, kind: str, source: str) -> None:
    """ValueError listing every dimension of the source's encoder that differs from SAM's encoder's."""
    have, size = _source_dims(flat), model.dims()
    want = {"width": size.width, "depth": size.depth, "num_heads": size.num_heads,
            "mlp_dim": int(size.width * model.mlp_ratio), "patch_size": model.patch_size}
    differ = [name for name in want if have[name] != want[name]]
    if not differ:
        return
    fix = {"width": f"model.width={have['width']}", "depth": f"model.depth={have['depth']}",
           "num_heads": f"model.num_heads={have['num_heads']}", "patch_size": f"model.patch_size={have['patch_size']}",
           "mlp_dim": f"model.mlp_ratio={have['mlp_dim'] / have['width']:g}"}
    raise ValueError(f"{source} ({kind} encoder) does not fit SAM's image encoder: "
                     + ", ".join(f"{name} {have[name]} against SAM's {want[name]}" for name in differ)
                     + f"; set --config.{' --config.'.join(fix[n] for n in differ)} (and global_attn_indexes "
                       f"within the depth), or start from a run whose encoder has SAM's dimensions")


def patch_kernel(kernel, bias, pixel_range) -> tuple[np.ndarray, np.ndarray]:
    """(kernel [p, p, 3, w], bias [w]) for SAM's normalised RGB input from a source's (kernel [p, p, C, w]
    with C 1 or 3, bias) on pixels mapped linearly from 0..255 to `pixel_range`: the same embedding of the
    same pixels. With u = a x + b the source's input and y_c = (x_c - m_c) / s_c SAM's, K_c u_c =
    (a s_c K_c) y_c + K_c (a m_c + b): the kernel scales by a s_c, the bias gains the sum of K_c (a m_c + b).
    A grey kernel is split evenly over the three (equal) channels first."""
    kernel = np.asarray(kernel, np.float64)
    if kernel.shape[2] == 1:
        kernel = np.repeat(kernel / 3.0, 3, axis=2)
    elif kernel.shape[2] != 3:
        raise ValueError(f"a patch embedding over {kernel.shape[2]} input channels has no place in SAM's RGB "
                         f"encoder; start from a grey (1-channel) or RGB run")
    low, high = (float(v) for v in pixel_range)
    scale, offset = (high - low) / 255.0, low
    mean, std = np.asarray(PIXEL_MEAN, np.float64), np.asarray(PIXEL_STD, np.float64)
    new_kernel = kernel * (scale * std)[None, None, :, None]
    new_bias = np.asarray(bias, np.float64) + np.einsum("ijcw,c->w", kernel, scale * mean + offset)
    return new_kernel.astype(np.float32), new_bias.astype(np.float32)


def _position(flat: dict, model, kind: str) -> tuple[np.ndarray, str]:
    """(SAM's pos_embed [1, g, g, w], how it was made)."""
    grid, width = (model.grid, model.grid), flat["embedding/kernel"].shape[-1]
    if kind == "mae":
        table = posemb.sincos_2d_mae(grid, width)
        return table.reshape(1, *grid, width), f"the MAE's sin-cos table on SAM's {grid[0]}x{grid[1]} grid"
    prefix = npz.prefix_tokens(flat)
    table = flat[_POSEMB]
    side = int(round(np.sqrt(table.shape[1] - prefix)))
    resized = posemb.resize_grid(table, grid, prefix)[:, prefix:]
    how = ("the ViT's table" if (side, side) == grid else
           f"the ViT's table resized bilinearly from its {side}x{side} grid to SAM's {grid[0]}x{grid[1]}")
    return np.asarray(resized).reshape(1, *grid, width), how


def _mapped(flat: dict, model, kind: str, pixel_range, source: str) -> tuple[dict, str]:
    """({SAM key: array} of everything that maps, how the position embedding was made)."""
    out = {}
    for key, value in flat.items():
        match = _BLOCK.match(key)
        if not match:
            continue
        sublayer, rest = match.group(2).split("/", 1)
        if sublayer not in _SUBLAYERS:
            raise ValueError(f"{source}: block parameter {key!r} has no counterpart in SAM's encoder block "
                             f"(norms, attention, MLP only); start from a plain ViT or MAE run")
        out[f"{ENCODER}/block_{match.group(1)}/{_SUBLAYERS[sublayer]}/{rest}"] = value
    kernel, bias = patch_kernel(flat["embedding/kernel"], flat["embedding/bias"], pixel_range)
    out[f"{ENCODER}/patch_embed/kernel"], out[f"{ENCODER}/patch_embed/bias"] = kernel, bias
    out[f"{ENCODER}/pos_embed"], how = _position(flat, model, kind)
    return out, how


def _source_key(sam_key: str) -> str:
    """The source's key that a SAM key was mapped from."""
    parts = sam_key.split("/")[1:]
    if parts[0] == "patch_embed":
        return f"embedding/{parts[1]}"
    if parts[0] == "pos_embed":
        return _POSEMB
    inverse = {v: k for k, v in _SUBLAYERS.items()}
    return f"Transformer/encoderblock_{parts[0][len('block_'):]}/{inverse[parts[1]]}/{'/'.join(parts[2:])}"
