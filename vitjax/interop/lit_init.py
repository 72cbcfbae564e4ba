"""LiT (locked-image tuning, Zhai et al. 2022): a dual encoder's image tower loaded from a vitjax ViT, MAE or
DINO run, for `objective='contrastive'` with `init_from` (and `contrastive.lock_image=True` to lock it).

    tower = lit_init.read("runs/encoder_vit", dual_encoder, (48, 48, 3))   # reads and checks; nothing compiles
    params = tower.apply(params)          # the dual encoder's initialised parameters, its image tower replaced
    print(tower.summary())                # what was loaded, what the source had that the tower has not

The source is a vitjax run or checkpoint (read by vitjax/checkpoints/reader.py, read-only and verified) or
the .npz `vitjax export` writes of one, through vitjax/interop/pretrained.py as every init_from is: a
supervised ViT's network, an MAE's encoder (its fixed sin-cos table on the tower's grid) or a DINO
teacher's backbone. The whole image tower is the source's encoder, tensor for tensor, and nothing of it
stays at init: the image embedding is the source's own representation (its CLS token after the final
norm, as LiT uses the pre-logits), and the text tower's head projects to that width. Left out and
listed: a classifier head, an MAE's decoder, a DINO head.

So that the locked tower computes the source's function, the dual encoder has SigLIP's layout (a plain
ViT: CLIP's tower has a pre-norm and a projection no vitjax run trained), the source's pooling
(`model.vision_pool`; 'tok' for an MAE, whose encoder reads its class token) and activation
(`model.activation`; 'gelu' for every vitjax ViT, MAE and DINO, and what an .npz, which records none, is
taken to have), and its dimensions: width, depth, heads, MLP width, patch, input channels and, for a
learned position table, the grid (model.image_size / model.patch_size). Anything else is refused with a
ValueError naming the setting that fits, before anything compiles: a BiT, hybrid or Swin run too. A path
that does not exist: FileNotFoundError.
Tests: `python -m pytest tests/interop/test_lit_init.py tests/objectives/test_lit_training.py`.
"""
import dataclasses

import flax.linen as nn
import jax.numpy as jnp
import numpy as np
from flax import traverse_util

from vitjax import rundir, storage
from vitjax.checkpoints import locations
from vitjax.interop import npz, pretrained

TOWER = "image"  # the dual encoder's image tower: its top-level parameter subtree
RECORD = "init_from.json"  # in the run directory: what init_from loaded into the tower, what was left out
_CLASSIFIER = ("head", "head_dist", "pre_logits")  # a classifier's layers after the representation
_BLOCK0 = "Transformer/encoderblock_0"
_POSEMB = "Transformer/posembed_input/pos_embedding"
_FIX = {"width": "model.vision_width", "depth": "model.vision_depth", "num_heads": "model.vision_heads",
        "mlp_dim": "model.vision_mlp_dim", "patch_size": "model.patch_size"}


@dataclasses.dataclass(frozen=True)
class LockedTower:
    """The image tower's parameters read from `source` (`params`, the tower's tree), what kind of run it
    was ('vit', 'mae', 'dino') and the source's top-level parameters the tower has no place for."""
    source: str
    kind: str
    params: dict = dataclasses.field(compare=False, repr=False)
    left_out: tuple[str, ...]

    def apply(self, params) -> dict:
        """The dual encoder's parameter tree `params` with the tower's in place, each in its dtype."""
        params = dict(nn.meta.unbox(params))
        ours = traverse_util.flatten_dict(params[TOWER], sep="/")
        loaded = traverse_util.flatten_dict(self.params, sep="/")
        if ours.keys() != loaded.keys():  # a bug here, not a user's mistake: read() loaded this very tower
            raise AssertionError(f"loaded tower keys differ: {sorted(ours.keys() ^ loaded.keys())[:5]}")
        params[TOWER] = traverse_util.unflatten_dict(
            {key: jnp.asarray(value, ours[key].dtype) for key, value in loaded.items()}, sep="/")
        return params

    def report(self, locked: bool) -> dict:
        """What the run records (init_from.json): the source, every key loaded, what was left out."""
        return {"init_from": self.source, "kind": self.kind, "tower": TOWER, "locked": locked,
                "loaded": sorted(traverse_util.flatten_dict(self.params, sep="/")),
                "left_out_of_source": list(self.left_out)}

    def summary(self, locked: bool) -> str:
        """One line for the run's log."""
        count = sum(int(np.size(v)) for v in traverse_util.flatten_dict(self.params).values())
        state = "locked (no gradient, no optimiser update, no weight decay)" if locked else "trained from there"
        left = ", ".join(self.left_out) or "nothing"
        return (f"init_from {self.source} ({self.kind}): loaded the whole image tower, {count:,} parameters, "
                f"{state}; left out of the source: {left}")


def read(path: str, model, image_shape, *, what: str = "init_from") -> LockedTower:
    """The image tower of the ConfiguredDualEncoder `model` for images of `image_shape` (H, W, C) from the
    run, checkpoint or .npz at `path` (see the module docstring)."""
    source = f"{what}={path!r}"
    if not storage.exists(path):
        raise FileNotFoundError(f"{source} does not exist")
    if model.layout != "siglip":
        raise ValueError(f"{source}: LiT loads a vitjax ViT encoder as the image tower, which is SigLIP's layout "
                         f"(CLIP's tower has a pre-norm and a projection no vitjax run trained): set "
                         f"--config.model.layout=siglip (contrastive.loss=softmax trains it as well)")
    tower = model.towers().image
    kind, settings = _kind_and_settings(path)
    arrays, flat = _encoder(path, tower, image_shape, what, source)
    _check_settings(tower, kind, settings, flat, source)
    _check_dims(flat, tower, image_shape, kind, source)
    left_out = sorted({key.split("/")[0] for key in flat if key.split("/")[0] in _CLASSIFIER})
    kept = {key: value for key, value in arrays.items() if key.split("/")[0] not in _CLASSIFIER}
    params = npz.load(kept, tower, image_size=tuple(image_shape[:2]), channels=image_shape[2], verbose=False,
                      source=source)
    left_out += {"mae": ["decoder"], "dino": ["dino_head"]}.get(kind, [])
    return LockedTower(path, kind, params, tuple(left_out))


def _encoder(path, tower, image_shape, what, source) -> tuple[dict, dict]:
    """The source's encoder in the official layout and in vitjax's (unrolled); ValueError naming the fix
    for one that is no ViT's."""
    try:
        arrays = pretrained.encoder_arrays(path, tower, tuple(image_shape[:2]), what=what)
        family, flat = npz.from_official(arrays)
    except ValueError as error:  # keys of neither a ViT nor a BiT
        family, flat = f"neither ViT nor BiT ({error})", {}
    if family == "vit" and not any(key.startswith("Transformer/encoderblock_") for key in flat):
        family = "patch-embedding network without a ViT's blocks (a Swin)"
    if family != "vit":
        raise ValueError(f"{source} is a {family} network: LiT's image tower is a ViT, loaded from a vitjax ViT, "
                         f"MAE or DINO run only (not a BiT, hybrid or Swin); pass one, or clear init_from")
    return arrays, flat


def _kind_and_settings(path: str) -> tuple[str, dict]:
    """('vit' | 'mae' | 'dino', the run's model settings; {} for an .npz, which records none)."""
    if path.endswith(".npz"):
        keys = {key.split("/")[0] for key in npz.read(path)}
        return ("mae" if "decoder_pred" in keys else "dino" if "dino_head" in keys else "vit"), {}
    config = rundir.read_json(locations.locate(path).run_dir, rundir.CONFIG) or {}
    kind = {"mae": "mae", "dino": "dino"}.get(config.get("objective"), "vit")
    return kind, dict(config.get("model", {}))


def _check_settings(tower, kind: str, settings: dict, flat: dict, source: str) -> None:
    """ValueError when the tower would pool or activate otherwise than the source did."""
    if kind == "mae":
        pool = "tok"  # the MAE's encoder reads its class token; 'gap' would drop it from the sequence
    else:
        pool = "map" if any(k.startswith("MAPHead_0/") for k in flat) else "tok" if "cls" in flat else "gap"
    activation = settings.get("activation", "gelu")  # every vitjax ViT's default; an .npz records none
    problems = [f"{name} {have!r} against the tower's {want!r} (set --config.{fix}={have})"
                for name, have, want, fix in (("pooling", pool, tower.pool, "model.vision_pool"),
                                              ("activation", activation, tower.activation, "model.activation"))
                if have != want]
    if problems:
        raise ValueError(f"{source} ({kind}) computes its representation otherwise than the image tower would: "
                         + "; ".join(problems))


def _check_dims(flat: dict, tower, image_shape, kind: str, source: str) -> None:
    """ValueError listing every dimension of the source's encoder that differs from the tower's."""
    size, patch = tower.dims()
    kernel = flat["embedding/kernel"]
    have = {"width": kernel.shape[-1], "patch_size": kernel.shape[0],
            "depth": len({key.split("/")[1] for key in flat if key.startswith("Transformer/encoderblock_")}),
            "num_heads": flat[f"{_BLOCK0}/MultiHeadDotProductAttention_0/query/kernel"].shape[1],
            "mlp_dim": flat[f"{_BLOCK0}/MlpBlock_0/Dense_0/kernel"].shape[1]}
    want = {"width": size.width, "patch_size": patch, "depth": size.depth, "num_heads": size.num_heads,
            "mlp_dim": size.mlp_dim}
    problems = [f"{name} {have[name]} against the tower's {want[name]} (--config.{_FIX[name]}={have[name]})"
                for name in want if have[name] != want[name]]
    if kernel.shape[2] != image_shape[2]:
        problems.append(f"{kernel.shape[2]} input channels against the images' {image_shape[2]} (pre-train the "
                        f"source on these images: configs/captions/encoder.py)")
    grid = (image_shape[0] // patch, image_shape[1] // patch)
    if kind != "mae" and _POSEMB in flat and not problems:
        tokens = flat[_POSEMB].shape[1] - npz.prefix_tokens(flat)
        if tokens != grid[0] * grid[1]:
            side = int(round(np.sqrt(tokens)))
            problems.append(f"a learned position table of {tokens} patches against the tower's {grid[0]}x{grid[1]} "
                            f"(--config.model.image_size={side * patch} and images of that size)")
    if problems:
        raise ValueError(f"{source} ({kind} encoder) does not fit the image tower: " + "; ".join(problems)
                         + "; or start from a run whose encoder has the tower's dimensions")
