"""Which timm network mirrors a vitjax model, one builder per model family.

    net, info = timm_nets.build(model, image_shape, num_classes, params=..., images=...)  # on the CPU
    timm_nets.decays(model, name, parameter)   # whether AdamW decays it, as vitjax's optimiser does

- ViT -> timm's `VisionTransformer` (class token, learned position embeddings, pre-norm blocks with
  LayerNorm eps 1e-6, exact GELU, token pooling), timm's own random weights: values do not change
  the speed of a dense model.
- Swin -> timm's `SwinTransformer` with vitjax's weights (vitjax/interop/timm_swin.py), so the two
  networks are one function: the builder checks that both give the same features on the first images
  of the batch (info["forward_check"]). The features before the head are compared, not the logits,
  because vitjax zero-initialises the head and every logit would agree trivially.
- MAE -> the official MAE's computation from timm's blocks (torch_mae.py), timm's random weights; the
  builder checks that its trainable parameters number vitjax's MAE's (info["parameter_check"]). Its
  forward returns the loss, so the train step's loss is the network's output.

Adding a family: a `Family` entry with its check, builder, weight-decay rule and, where it is not
cross-entropy on the output, its loss.
"""
import dataclasses
from typing import Callable

import numpy as np

from vitjax import models

FORWARD_CHECK_TOLERANCE = 1e-4  # relative error of the features, float32: far above rounding, far below a wrong weight


def _check_vit(model) -> None:
    unsupported = {"resnet": None, "representation_size": None, "pool": "tok", "posemb": "learned",
                   "norm": "layernorm", "norm_position": "pre"}
    bad = {k: getattr(model, k) for k, v in unsupported.items() if getattr(model, k) != v}
    if bad:
        raise ValueError(f"no timm counterpart for {bad}; the comparison needs a plain ViT (pool='tok', "
                         f"learned position embeddings, pre-norm LayerNorm, no hybrid); pass --no_timm")


def _vit(model, image_shape, num_classes: int, params, images) -> tuple:
    import torch
    from timm.models.vision_transformer import VisionTransformer

    size, patch = model.dims()
    height, width, channels = image_shape
    torch.manual_seed(0)
    net = VisionTransformer(
        img_size=(height, width), patch_size=patch, in_chans=channels, num_classes=num_classes,
        embed_dim=size.width, depth=size.depth, num_heads=size.num_heads, mlp_ratio=size.mlp_dim / size.width,
        class_token=True, global_pool="token", drop_rate=model.dropout_rate,
        attn_drop_rate=model.attention_dropout_rate, drop_path_rate=model.droppath_rate)
    return net, {}


def _swin(model, image_shape, num_classes: int, params, images) -> tuple:
    import torch
    from timm.models.swin_transformer import SwinTransformer

    from vitjax.interop import timm_swin

    if params is None:
        raise ValueError("the timm Swin takes vitjax's weights: pass the vitjax params")
    size = model.dims()
    height, width, channels = image_shape
    # vitjax's dropout_rate acts after the attention and in the MLP: timm's proj_drop_rate; neither
    # has dropout before the head (timm's drop_rate) or on the attention weights.
    net = SwinTransformer(
        img_size=(height, width), patch_size=model.patch_size, in_chans=channels, num_classes=num_classes,
        embed_dim=size.embed_dim, depths=size.depths, num_heads=size.num_heads, window_size=model.window_size,
        mlp_ratio=model.mlp_ratio, drop_rate=0.0, proj_drop_rate=model.dropout_rate, attn_drop_rate=0.0,
        drop_path_rate=model.droppath_rate)
    net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in timm_swin.to_timm(params, model).items()})
    info = {"weights": "vitjax's, through vitjax.interop.timm_swin.to_timm"}
    if images is not None:
        info["forward_check"] = _same_features(model, params, net, images[:2])
    return net, info


def _mae(model, image_shape, num_classes: int, params, images) -> tuple:
    import torch

    from vitjax.bench import torch_mae
    from vitjax.models.mae import num_visible

    size, patch = model.dims()
    torch.manual_seed(0)
    decoder_mlp = model.decoder_mlp_dim or 4 * model.decoder_width
    net = torch_mae.build(
        image_shape, patch, size.width, size.depth, size.num_heads, size.mlp_dim / size.width, model.decoder_width,
        model.decoder_depth, model.decoder_heads, decoder_mlp / model.decoder_width, model.norm_pix_loss,
        num_visible((image_shape[0] // patch) * (image_shape[1] // patch), model.mask_ratio))
    info = {"weights": "timm's random initialisation (dense arithmetic: values do not change the speed)"}
    if params is not None:
        ours = sum(int(np.size(leaf)) for leaf in _leaves(params))
        theirs = sum(p.numel() for p in net.parameters())
        if ours != theirs:
            raise ValueError(f"the PyTorch MAE has {theirs:,} trainable parameters and vitjax's {ours:,}: the two "
                             f"networks differ")
        info["parameter_check"] = {"parameters": ours}
    return net, info


def _leaves(params) -> list:
    import jax
    from flax.core import meta
    return jax.tree.leaves(meta.unbox(params))


def _same_features(model, params, net, images) -> dict:
    """Relative error of timm's pooled features against vitjax's on `images` (NHWC numpy); ValueError
    above FORWARD_CHECK_TOLERANCE."""
    import jax
    import torch
    from flax.core import meta

    def features(p, x):
        _, state = model.apply({"params": p}, x, mutable=["intermediates"])
        return state["intermediates"]["pre_logits"][0]

    ours = np.asarray(jax.jit(features)(meta.unbox(params), images))
    with torch.inference_mode():
        theirs = net.eval().forward_head(
            net.forward_features(torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2)))),
            pre_logits=True).numpy()
    error = float(np.linalg.norm(ours - theirs) / max(np.linalg.norm(theirs), 1e-30))
    if error > FORWARD_CHECK_TOLERANCE:
        raise ValueError(f"timm's SwinTransformer with vitjax's weights gives other features (relative error "
                         f"{error:.2e}): the two networks differ")
    return {"images": len(images), "relative_error_of_features": error}


def _cross_entropy(logits, labels, config):
    import torch
    return torch.nn.functional.cross_entropy(logits.float(), labels, label_smoothing=config.label_smoothing)


@dataclasses.dataclass(frozen=True)
class Family:
    check: Callable  # model -> None, ValueError where timm has no counterpart
    build: Callable  # (model, image_shape, num_classes, params, images) -> (torch module, info)
    decays: Callable  # (parameter name, tensor) -> whether AdamW decays it
    loss: Callable = _cross_entropy  # (network output, labels, config) -> the train step's loss


FAMILIES = {
    # The ViT's rule predates this table and is kept as it was: every tensor of rank > 1.
    models.ViT: Family(_check_vit, _vit, lambda name, p: p.ndim > 1),
    # vitjax decays kernels only (vitjax.train.optimizer.decay_mask), not the bias tables.
    models.Swin: Family(lambda model: None, _swin,
                        lambda name, p: p.ndim > 1 and not name.endswith("relative_position_bias_table")),
    # vitjax decays kernels only: the linear and convolution weights, not the CLS and mask tokens.
    models.MAE: Family(lambda model: None, _mae, lambda name, p: p.ndim > 1 and name.endswith("weight"),
                       lambda loss, labels, config: loss),
}


def family(model) -> Family:
    """The model's entry in FAMILIES; ValueError for families timm is not compared with."""
    found = FAMILIES.get(type(model))
    if found is None:
        raise ValueError(f"the timm comparison covers {sorted(f.__name__ for f in FAMILIES)}, not "
                         f"{type(model).__name__}; pass --no_timm")
    return found


def check_comparable(model) -> None:
    """Raises ValueError for vitjax models that no timm network here mirrors."""
    family(model).check(model)


def build(model, image_shape, num_classes: int, *, params=None, images=None) -> tuple:
    """(torch module on the CPU, info) mirroring `model`; `params` (vitjax's) where the family copies
    weights, `images` (NHWC numpy) where it checks a forward pass."""
    check_comparable(model)
    return family(model).build(model, image_shape, num_classes, params, images)


def decays(model, name: str, parameter) -> bool:
    return family(model).decays(name, parameter)


def loss(model, output, labels, config):
    """The train step's loss from the network's output: cross-entropy, or the MAE's own."""
    return family(model).loss(output, labels, config)
