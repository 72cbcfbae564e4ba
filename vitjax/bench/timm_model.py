"""The same model in timm (PyTorch): an AdamW train step and inference on the same batch.

The network is the family's timm counterpart (timm_nets.py: ViT -> VisionTransformer, Swin ->
SwinTransformer with vitjax's weights, MAE -> the official MAE built from timm's blocks), on the same
batch and image size, with the same optimiser settings (learning rate, decoupled weight decay on what
vitjax decays, gradient clipping). On a GPU the bf16 variant runs under autocast, and `compile=True`
wraps the model in torch.compile.
"""
import functools
import time

import numpy as np

from vitjax.bench import timm_nets
from vitjax.bench.timing import Workload


def build(config, model, image_shape, num_classes: int, host_batch: dict, *, device: str = "cpu",
          threads: int | None = 2, compile: bool = False, inference: bool = True, params=None) -> tuple:
    """(train Workload, inference Workload or None, info) for timm's network mirroring `model`;
    `params`: vitjax's parameters, for the families whose timm network takes them (Swin)."""
    import torch

    if threads and device == "cpu":
        torch.set_num_threads(threads)
    net, net_info = timm_nets.build(model, image_shape, num_classes, params=params, images=host_batch["image"])
    net = net.to(device)
    run_net = torch.compile(net) if compile else net

    decays = {name: timm_nets.decays(model, name, p) for name, p in net.named_parameters()}
    decay = [p for name, p in net.named_parameters() if decays[name]]
    no_decay = [p for name, p in net.named_parameters() if not decays[name]]
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
            output = run_net(images)
        loss = timm_nets.loss(model, output, labels, config)
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
            "first_call_seconds": {"train": time.perf_counter() - start}, **net_info}
    infer = None
    if inference:
        start = time.perf_counter()
        infer_call()
        info["first_call_seconds"]["infer"] = time.perf_counter() - start
        infer = Workload(f"{label} infer", infer_call, images=len(images))
    return Workload(f"{label} train", train_call, images=len(images)), infer, info
