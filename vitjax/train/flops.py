"""FLOPs of a program as XLA counts them, and the loop-free twin a train step is counted on.

XLA's cost analysis counts the body of a loop once. A scanned block stack (`model.scan`) or gradient
accumulation (`grad_accum_steps` > 1) would therefore come out depth or accumulation-steps times too
low, and so would every MFU, GFLOP/s and accuracy-vs-compute figure built on it. Such steps are
counted on their loop-free twin instead: blocks unrolled, one micro-batch of the whole batch; the same
arithmetic, with the optimiser update once per step either way.
"""
import jax


def of(stage) -> float | None:
    """XLA's FLOP count of a lowered (global) or compiled (per device, so times the devices) program."""
    cost = stage.cost_analysis()
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else {}
    flops = (cost or {}).get("flops")
    if not flops:
        return None
    return float(flops) * (jax.device_count() if isinstance(stage, jax.stages.Compiled) else 1)


def has_loops(config) -> bool:
    return bool(config.model.get("scan", False)) or config.grad_accum_steps > 1


def loop_free(config, model):
    """(config, model) of the loop-free twin: the same arithmetic, so its last block computes the
    rows the looped model's does (`ViT.last_block_rows`; a scan computes every row)."""
    config = config.copy_and_resolve_references()
    with config.unlocked():
        config.grad_accum_steps = 1
    if getattr(model, "scan", False):
        twin = model.clone(scan=False)
        if twin.last_block_rows() != model.last_block_rows():
            twin = twin.clone(cls_only_last_block=False)
        model = twin
    return config, model
