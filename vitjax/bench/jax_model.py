"""The vitjax side: the train step exactly as the trainer compiles it, and inference, on a fixed batch.

The train step comes from `trainer.compile_train_step` (same optimiser, shardings, donated state), so
the benchmark measures what `vitjax train` runs. The batch is random and stays on the device: input
throughput is measured separately (pipeline.py).
"""
import dataclasses
import re
import time
from typing import Any, Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from vitjax import data
from vitjax.bench import model_flops
from vitjax.bench.timing import Workload
from vitjax.train import flops, trainer

# The hand count of the model's matmul FLOPs (the MFU numerator), by model family.
model_flops_per_image = model_flops.per_image


@dataclasses.dataclass
class JaxModel:
    plan: trainer.Plan
    train: Workload
    infer: Workload | None
    info: dict  # parameters, FLOPs, compile times, memory
    host_batch: dict  # the numpy batch both frameworks train on
    params: Callable[[], Any]  # the current parameters (the train step donates the state it is given)
    train_hlo: Callable[[], str]  # the compiled train step's HLO text (for the profile's scopes)
    infer_hlo: Callable[[], str] | None = None  # the compiled forward pass's, where inference was built


def random_batch(batch_size: int, image_shape, num_classes: int, seed: int = 0) -> dict:
    """Images uniform in [-1, 1] (the range the configs' preprocessing gives) and one-hot labels."""
    rng = np.random.default_rng(seed)
    images = rng.uniform(-1.0, 1.0, (batch_size, *image_shape)).astype(np.float32)
    labels = np.eye(num_classes, dtype=np.float32)[rng.integers(0, num_classes, batch_size)]
    return {"image": images, "labels": labels}


def _forward_flops(config, model, compiled, images) -> float | None:
    """The forward pass's FLOPs over all devices; a scanned stack counted on its unrolled twin."""
    if not config.model.get("scan", False):
        return flops.of(compiled)
    _, twin = flops.loop_free(config, model)
    variables = jax.eval_shape(lambda x: nn.unbox(twin.init(jax.random.key(0), x, train=False)), images)
    return flops.of(jax.jit(lambda v, x: twin.apply(v, x, train=False)).lower(variables, images))


def _memory(compiled) -> dict:
    """XLA's buffer sizes for one call (per device), in bytes."""
    try:
        stats = compiled.memory_analysis()
    except Exception:  # some backends do not implement it
        return {}
    if stats is None:
        return {}
    return {name: int(getattr(stats, name)) for name in (
        "argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes", "temp_size_in_bytes",
        "generated_code_size_in_bytes", "peak_memory_in_bytes") if hasattr(stats, name)}


# Pixel ops that keep an image's shape: without TensorFlow, synthetic images keep theirs through them.
_SHAPE_KEEPING_PP = re.compile(r"\s*(value_range\([^()]*\)\s*)?")


def data_info(cfg) -> data.DataInfo:
    """The DataInfo of data config `cfg`, as data.get_info reads it; without TensorFlow (a GPU image that
    has none), that of synthetic data whose pp strings only rescale values, which is all the random
    batches timed here need. Otherwise a ValueError names the fix."""
    if data.tensorflow_installed():
        return data.get_info(cfg)
    if cfg.name != "synthetic" or cfg.train_size is not None or cfg.val_size or cfg.val_split or tuple(cfg.classes):
        raise ValueError(f"without TensorFlow the benchmark takes synthetic data as it is (data.name "
                         f"{cfg.name!r}, train_size/val_size/val_split/classes unset): install tensorflow-cpu")
    for key in ("pp_train", "pp_eval"):
        if not _SHAPE_KEEPING_PP.fullmatch(cfg[key]):
            raise ValueError(f"data.{key} {cfg[key]!r}: without TensorFlow the benchmark applies no pp ops, so "
                             f"only value_range(...) may be given (its shape is the image's); install tensorflow-cpu")
    syn = cfg.synthetic
    return data.DataInfo(syn.num_train, syn.num_test, syn.num_classes, tuple(syn.image_shape))


def build(config, *, inference: bool = True, seed: int = 0, runtime=None,
          on_compile: Callable[[], None] | None = None) -> JaxModel:
    """Compiles the train step (and the forward pass) for `config` under `runtime` (the CLI's CPU choices,
    xla_cpu.Choices); nothing runs yet. `on_compile` is called once the model is built and initialised,
    before XLA compiles: a bad model setting fails before any "compiling" line."""
    p = trainer.plan(config, runtime, info=data_info(config.data))
    spec = trainer.state_spec(config, p)
    init_key, dropout_key = trainer.run_keys(config.seed)
    state = trainer.init_state(spec, init_key)
    if on_compile is not None:
        on_compile()

    start = time.perf_counter()
    step, batch_sharding = trainer.compile_train_step(config, p, spec, dropout_key)
    compile_train = time.perf_counter() - start

    host = random_batch(config.batch_size, p.info.image_shape, p.info.num_classes, seed)
    batch = data.to_global(host, batch_sharding)
    holder = {"state": state}

    def train_call():
        holder["state"], metrics = step(holder["state"], batch, dropout_key)
        return jax.block_until_ready((holder["state"], metrics))

    per_image = model_flops_per_image(p.model, p.info.image_shape, p.info.num_classes)
    every_row = model_flops_per_image(p.model, p.info.image_shape, p.info.num_classes, every_row=True)
    xla_train = trainer.train_step_flops(config, p, step, dropout_key)
    info = {
        "params": spec.num_params,
        "image_shape": list(p.info.image_shape),
        "num_classes": p.info.num_classes,
        "batch_size": config.batch_size,
        "compile_seconds": {"train": compile_train},
        "xla_flops_per_step": {"train": xla_train},
        "xla_flops_counted_on": "the loop-free twin" if flops.has_loops(config) else "the compiled step",
        "model_flops_per_image": {"forward": per_image, "train": 3 * per_image if per_image else None,
                                  "forward_every_row": every_row},
        "memory": {"train": _memory(step)},
    }
    train = Workload("vitjax train", train_call, images=config.batch_size, flops=xla_train)

    infer = None
    if inference:
        # A 'mask' key for the families that draw one at inference (MAE); the others ignore it.
        forward = jax.jit(lambda params, images: p.model.apply({"params": params}, images, train=False,
                                                               rngs={"mask": jax.random.key(0)}),
                          in_shardings=(spec.shardings.params, batch_sharding))
        start = time.perf_counter()
        with jax.set_mesh(p.mesh), nn.logical_axis_rules(p.rules):
            forward = forward.lower(spec.abstract.params, batch["image"]).compile(p.compiler_options or None)
        info["compile_seconds"]["infer"] = time.perf_counter() - start
        info["xla_flops_per_step"]["infer"] = _forward_flops(
            config, p.model, forward, jax.ShapeDtypeStruct(batch["image"].shape, jnp.float32))
        info["memory"]["infer"] = _memory(forward)
        images = batch["image"]
        infer = Workload("vitjax infer", lambda: jax.block_until_ready(forward(holder["state"].params, images)),
                         images=config.batch_size, flops=info["xla_flops_per_step"]["infer"])
    return JaxModel(p, train, infer, info, host, lambda: holder["state"].params, step.as_text,
                    forward.as_text if inference else None)
