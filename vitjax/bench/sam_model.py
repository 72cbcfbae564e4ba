"""SAM's image encoder and its prompt answers, vitjax beside segment-anything 1.0 on the same weights.

    sam = sam_model.build(model, batch_size, compiler_options=..., official=True, threads=2)
    sam.workloads          # the encoder both sides; a point and a box prompt on a cached embedding, both sides
    sam.ratios(), sam.latencies_ms(), sam.info     # after the rounds: vitjax over segment-anything, ms per prompt

Weights: segment-anything's `Sam` of the vitjax model's sizes (sam_weights.official_model), every parameter
moved by seeded noise, read into vitjax by sam_weights.load (the direction the official checkpoints take).
Speed does not depend on the values; the noise gives the zero-initialised relative-position tables and
position embedding values, so a table read wrongly would show in the agreement checks below.

Before anything is timed the pair must compute one function, or the ratio would compare two (ValueError):
- the two encoders embed the benchmark's own images to within TOLERANCE (relative error, float32);
- the two predictors answer the point prompt with the same low-resolution logits and IoU predictions.

Encoder: `SAM.embed_image` on [batch, image_size, image_size, 3] preprocessed images (random pixels through
`preprocess`), jitted with the run's XLA options, the batch split over the CPU devices as `vitjax train`
splits it; segment-anything's `image_encoder` under torch.inference_mode on the same array (NCHW).
Prompts: vitjax/segment/predictor.py's Predictor and segment-anything's SamPredictor, each given the first
image (random pixels, image_size square, so that neither resizes it) once, then one prompt per call: a
foreground point, or a box; three masks (multimask_output, both predictors' default) at the image's size.
Each call returns numpy arrays, as SamPredictor's do: vitjax's answer is copied to the host too. The
Predictor compiles as a user's does (no XLA options): the latency is what the library gives.
"""
import dataclasses
import functools
import time
from typing import Callable

import numpy as np

from vitjax.bench import report
from vitjax.bench.timing import Workload, median
from vitjax.bench.timm_nets import FORWARD_CHECK_TOLERANCE as TOLERANCE

NOISE = 0.05  # added to every parameter: O(1) activations still, and no table left at zero
OFFICIAL = "segment-anything"


def prompts(image_size: int) -> dict:
    """{name: SamPredictor/Predictor keyword arguments} of the timed prompts, in the image's pixels."""
    return {"point": {"point_coords": np.array([[0.4, 0.6]]) * image_size, "point_labels": np.array([1])},
            "box": {"box": np.array([0.2, 0.25, 0.7, 0.8]) * image_size}}


@dataclasses.dataclass
class SamBench:
    """The workloads, by side: {"vitjax" | OFFICIAL: {"encoder" | "point" | "box": Workload}}."""
    sides: dict
    info: dict  # parameters, compile time, XLA FLOPs, the agreement checks

    @property
    def workloads(self) -> list:
        return [w for side in self.sides.values() for w in side.values()]

    def ratios(self) -> dict:
        """vitjax's rate over segment-anything's (images or prompts per second), median of per-round ratios:
        above 1, vitjax is faster."""
        if OFFICIAL not in self.sides:
            return {}
        ours, theirs = self.sides["vitjax"], self.sides[OFFICIAL]
        names = {"encoder": f"infer vitjax/{OFFICIAL} (image encoder)"}
        return {names.get(part, f"prompt {part} vitjax/{OFFICIAL}"): report.ratio(ours[part], theirs[part])
                for part in ours}

    def latencies_ms(self) -> dict:
        """{'<side> <prompt>': median milliseconds per prompt answered on the cached embedding}."""
        return {f"{side} {part}": median([s / w.calls_per_round for s in w.wall]) * 1e3
                for side, parts in self.sides.items() for part, w in parts.items() if part != "encoder"}


def build(model, batch_size: int, *, compiler_options: dict | None = None, official: bool = True,
          threads: int | None = 2, seed: int = 0, log: Callable[[str], None] = print) -> SamBench:
    """Compiles and checks everything for `model` (a vitjax SAM) at `batch_size` images per encoder call;
    nothing is timed yet. `official`: also segment-anything's side (torch, on the CPU)."""
    from vitjax.interop import sam_weights

    pixels, images = input_images(model, batch_size, seed)
    if official:
        import torch

        if threads:
            torch.set_num_threads(threads)
        reference = official_with_weights(model, seed)
        variables = sam_weights.load(reference, model)
    else:
        # Nothing to agree with: the model's own initialisation, no torch needed.
        variables = _initialised(model, seed)
    log("compiling the vitjax SAM image encoder ...")
    embed, info = compile_encoder(model, variables, images, compiler_options)
    info["params"] = {"all": _count(variables["params"]), "image_encoder": _count(variables["params"]["image_encoder"])}
    sides = {"vitjax": {"encoder": Workload("vitjax encoder", embed, images=batch_size, flops=info["xla_flops"])}}
    if official:
        log(f"checking {OFFICIAL}'s image encoder against vitjax's ...")
        info["encoder_agreement"] = encoder_agreement(embed, reference, images)
    log("the vitjax predictor: embedding the image, compiling the prompts ...")
    sides["vitjax"].update(vitjax_prompts(model, variables, pixels[0]))
    if official:
        sides[OFFICIAL] = {"encoder": Workload(f"{OFFICIAL} encoder", _official_encoder(reference, images),
                                               images=batch_size, flops=info["xla_flops"])}
        sides[OFFICIAL].update(official_prompts(reference, pixels[0]))
        info["prompt_agreement"] = prompt_agreement(sides["vitjax"]["point"].call, sides[OFFICIAL]["point"].call)
        info["weights"] = (f"{OFFICIAL}'s initialisation plus N(0, {NOISE}^2) noise on every parameter (seed "
                           f"{seed}), read into vitjax by vitjax.interop.sam_weights.load")
    return SamBench(sides, info)


def input_images(model, batch_size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 pixels [batch, size, size, 3], the encoder's input: those pixels normalised, float32)."""
    from vitjax.models.sam import preprocess

    size = model.image_size
    pixels = np.random.default_rng(seed).integers(0, 256, (batch_size, size, size, 3), dtype=np.uint8)
    return pixels, np.asarray(preprocess(pixels, size))


def official_with_weights(model, seed: int = 0):
    """segment-anything's `Sam` of `model`'s sizes, every parameter moved by N(0, NOISE^2) (seeded)."""
    import torch

    from vitjax.interop import sam_weights

    reference = sam_weights.official_model(model)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in reference.parameters():
            parameter.add_(NOISE * torch.randn(parameter.shape, generator=generator))
    return reference


def _initialised(model, seed: int) -> dict:
    import jax
    from flax.core import meta

    images = np.zeros((1, model.image_size, model.image_size, 3), np.float32)
    return jax.device_get(meta.unbox(jax.jit(model.init)(jax.random.key(seed), images)))


def _count(tree) -> int:
    import jax

    return int(sum(np.size(leaf) for leaf in jax.tree.leaves(tree)))


def compile_encoder(model, variables, images: np.ndarray, compiler_options: dict | None) -> tuple[Callable, dict]:
    """(call: embeds `images` and waits for the result, info: compile seconds and XLA's FLOPs per call).
    The batch is split over as many JAX devices as split it evenly (all of them where the runtime chose
    their number for this batch), the variables replicated."""
    import math

    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from vitjax.train import flops

    devices = jax.devices()[:math.gcd(len(images), jax.device_count())]
    mesh = Mesh(np.array(devices), ("batch",))
    replicated, split = NamedSharding(mesh, PartitionSpec()), NamedSharding(mesh, PartitionSpec("batch"))
    forward = jax.jit(functools.partial(model.apply, method="embed_image"), in_shardings=(replicated, split),
                      out_shardings=split)
    variables, batch = jax.device_put(variables, replicated), jax.device_put(images, split)
    start = time.perf_counter()
    lowered = forward.lower(variables, batch)
    compiled = lowered.compile(compiler_options or None)
    # Counted on the lowered program, the whole batch's: the compiled one's count is per device, and
    # flops.of would scale it by every device, not only those this program runs on.
    info = {"compile_seconds": {"encoder": time.perf_counter() - start}, "xla_flops": flops.of(lowered),
            "compiler_options": dict(compiler_options or {}), "devices": len(devices)}
    return (lambda: jax.block_until_ready(compiled(variables, batch))), info


def _official_encoder(reference, images: np.ndarray) -> Callable:
    import torch

    batch = torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2)))

    @torch.inference_mode()
    def call():
        return reference.image_encoder(batch)

    return call


def _relative_error(ours, theirs) -> float:
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    return float(np.linalg.norm(ours - theirs) / max(np.linalg.norm(theirs), 1e-30))


def encoder_agreement(embed: Callable, reference, images: np.ndarray) -> dict:
    """Relative error of segment-anything's image embeddings of `images` against vitjax's (`embed()`: the
    compiled encoder's call on those images); ValueError above TOLERANCE."""
    ours = np.asarray(embed())
    theirs = _official_encoder(reference, images)().permute(0, 2, 3, 1).numpy()  # NCHW -> NHWC
    error = _relative_error(ours, theirs) if ours.shape == theirs.shape else float("inf")
    if error > TOLERANCE:
        raise ValueError(f"{OFFICIAL}'s image encoder gives other embeddings than vitjax's on the benchmark's images "
                         f"(shapes {ours.shape}, {theirs.shape}; relative error {error:.2e} > {TOLERANCE:.0e}): the "
                         f"two do not hold the same weights, so their times would compare different functions")
    return {"images": len(images), "relative_error_of_embeddings": error}


def prompt_agreement(ours: Callable, theirs: Callable) -> dict:
    """Relative errors of the two predictors' answers to one prompt (calls returning (masks, iou,
    low-resolution logits)): the IoU predictions and the logits; ValueError above TOLERANCE."""
    _, our_iou, our_logits = ours()
    _, their_iou, their_logits = theirs()
    errors = {"relative_error_of_iou": _relative_error(our_iou, their_iou) if our_iou.shape == their_iou.shape
              else float("inf"),
              "relative_error_of_low_res_logits": _relative_error(our_logits, their_logits)
              if our_logits.shape == their_logits.shape else float("inf")}
    if max(errors.values()) > TOLERANCE:
        raise ValueError(f"vitjax's Predictor and {OFFICIAL}'s SamPredictor answer the same prompt differently "
                         f"({errors}; tolerance {TOLERANCE:.0e}): the prompt latencies would compare different work")
    return errors


def vitjax_prompts(model, variables, image: np.ndarray) -> dict:
    """{prompt name: Workload} of vitjax's Predictor on `image` (embedded once, here), each compiled here."""
    from vitjax.segment.predictor import Predictor

    predictor = Predictor(model, variables)
    predictor.set_image(image)
    workloads = {}
    for name, prompt in prompts(model.image_size).items():
        call = functools.partial(_answer_on_host, predictor, prompt)
        call()  # compiles this prompt's shape
        workloads[name] = Workload(f"vitjax prompt {name}", call, images=1)
    return workloads


def _answer_on_host(predictor, prompt: dict) -> list:
    return [np.asarray(part) for part in predictor.predict(**prompt)]


def official_prompts(reference, image: np.ndarray) -> dict:
    """{prompt name: Workload} of segment-anything's SamPredictor on `image` (embedded once, here)."""
    from segment_anything import SamPredictor

    predictor = SamPredictor(reference)
    predictor.set_image(image)
    return {name: Workload(f"{OFFICIAL} prompt {name}", functools.partial(predictor.predict, **prompt), images=1)
            for name, prompt in prompts(reference.image_encoder.img_size).items()}
