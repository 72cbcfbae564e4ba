"""The same ViT in timm (PyTorch): an AdamW train step and inference on the same batch.

Same architecture as vitjax's ViT (class token, learned position embeddings, pre-norm blocks with
LayerNorm eps 1e-6, exact GELU, token pooling), the same batch and image size, the same optimiser
settings (learning rate, decoupled weight decay on weight matrices only, gradient clipping). On a GPU
the bf16 variant runs under autocast, and `compile=True` wraps the model in torch.compile.
"""
import functools
import time

import numpy as np

from vitjax import models
from vitjax.bench.timing import Workload


def check_comparable(model) -> None:
    """Raises ValueError for vitjax models that timm's VisionTransformer does not mirror here."""
    if not isinstance(model, models.ViT):
        raise ValueError("the timm comparison covers the plain ViT only (model_name='vit'); pass --no_timm")
    unsupported = {"resnet": None, "representation_size": None, "pool": "tok", "posemb": "learned",
                   "norm": "layernorm", "norm_position": "pre"}
    bad = {k: getattr(model, k) for k, v in unsupported.items() if getattr(model, k) != v}
    if bad:
        raise ValueError(f"no timm counterpart for {bad}; the comparison needs a plain ViT (pool='tok', "
                         f"learned position embeddings, pre-norm LayerNorm, no hybrid); pass --no_timm")


def build(config, model, image_shape, num_classes: int, host_batch: dict, *, device: str = "cpu",
          threads: int | None = 2, compile: bool = False, inference: bool = True) -> tuple:
    """(train Workload, inference Workload or None, info) for timm's ViT mirroring `model`."""
    import torch
    from timm.models.vision_transformer import VisionTransformer

    check_comparable(model)
    if threads and device == "cpu":
        torch.set_num_threads(threads)
    size, patch = model.dims()
    height, width, channels = image_shape
    torch.manual_seed(0)
    net = VisionTransformer(
        img_size=(height, width), patch_size=patch, in_chans=channels, num_classes=num_classes,
        embed_dim=size.width, depth=size.depth, num_heads=size.num_heads, mlp_ratio=size.mlp_dim / size.width,
        class_token=True, global_pool="token", drop_rate=model.dropout_rate,
        attn_drop_rate=model.attention_dropout_rate, drop_path_rate=model.droppath_rate).to(device)
    run_net = torch.compile(net) if compile else net

    decay = [p for p in net.parameters() if p.ndim > 1]
    no_decay = [p for p in net.parameters() if p.ndim <= 1]
    opt = config.optimizer
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=config.lr, betas=(opt.b1, opt.b2), eps=opt.eps, **({"fused": True} if device.startswith("cuda") else {}))

    # NHWC numpy -> NCHW tensors, once: the benchmark times the model, not the copy.
    images = torch.from_numpy(np.ascontiguousarray(host_batch["image"].transpose(0, 3, 1, 2))).to(device)
    labels = torch.from_numpy(host_batch["labels"]).to(device)
    bf16 = config.dtype == "bfloat16"
    autocast = functools.partial(torch.autocast, device_type=device.split(":")[0], dtype=torch.bfloat16,
                                 enabled=bf16)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def train_call():
        net.train()
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            logits = run_net(images)
        loss = torch.nn.functional.cross_entropy(logits.float(), labels,
                                                 label_smoothing=config.label_smoothing)
        loss.backward()
        if config.grad_clip_norm:
            torch.nn.utils.clip_grad_norm_(net.parameters(), config.grad_clip_norm)
        optimizer.step()
        sync()
        return loss

    @torch.inference_mode()
    def infer_call():
        net.eval()
        with autocast():
            out = run_net(images)
        sync()
        return out

    label = "timm" + (" compiled" if compile else "")
    start = time.perf_counter()
    train_call()  # the first call builds (and with torch.compile, compiles) the graph
    info = {"params": sum(p.numel() for p in net.parameters()), "threads": torch.get_num_threads(),
            "torch": torch.__version__, "compile": compile,
            "first_call_seconds": {"train": time.perf_counter() - start}}
    infer = None
    if inference:
        start = time.perf_counter()
        infer_call()
        info["first_call_seconds"]["infer"] = time.perf_counter() - start
        infer = Workload(f"{label} infer", infer_call, images=len(images))
    return Workload(f"{label} train", train_call, images=len(images)), infer, info
