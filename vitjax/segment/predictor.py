"""Segment Anything's interactive use: embed an image once, then answer prompts on it, each under jit.

    predictor = Predictor(models.SAM(variant="B"), variables)     # variables: sam_weights.load(...)
    predictor.set_image(image)                                      # [H, W, 3] RGB, 0-255; jitted
    masks, iou, low_res = predictor.predict(point_coords=[[500, 375]], point_labels=[1])
    masks, iou, low_res = predictor.predict(box=[425, 600, 700, 875], mask_input=low_res[:1])
    masks, iou, low_res = predictor.predict(point_coords=points, point_labels=labels)   # [B, N, 2]: B prompts

Coordinates are (x, y) pixels of the image given to `set_image`. The answer: masks [masks, H, W] (booleans,
or logits with `return_logits`), the predicted IoU of each [masks] and the low-resolution logits [masks, m,
m] that a next prompt may take as `mask_input`; with a batch of B prompts each gains a leading B axis.
`multimask_output` (default True) gives 3 masks for an ambiguous prompt, False one.

Every prompt is checked in numpy first (vitjax/segment/prompts.py): a bad one is a ValueError naming the
problem before anything is traced or compiled. Each prompt shape (which parts, how many points, the batch)
compiles once; later prompts of that shape reuse the program.

The image is resized so its longer side is the model's image_size with jax.image.resize (bilinear,
antialiased) in float; segment-anything resizes a uint8 image with PIL, so embeddings differ slightly for
images not already of that size. `set_resized_image` takes an image resized by any means, as the
reference's `set_torch_image` does.
"""
import jax
import jax.numpy as jnp
import numpy as np

from vitjax.models.sam import SAM, postprocess_masks, preprocess, resized_shape
from vitjax.segment import prompts


def _check_image(image, name: str) -> np.ndarray:
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[-1] != 3 or min(image.shape[:2]) == 0:
        raise ValueError(f"{name} must be one [height, width, 3] RGB image; got shape {image.shape}"
                         + (" (a batch? give its images one at a time)" if image.ndim == 4 else ""))
    if image.dtype.kind not in "biuf" or (image.dtype.kind == "f" and not np.all(np.isfinite(image))):
        raise ValueError(f"{name} must hold finite pixel values (0-255); got dtype {image.dtype}")
    return image


class Predictor:
    """SAM with one image's embedding kept: `set_image` once, `predict` for every prompt (module docstring)."""

    def __init__(self, model: SAM, variables):
        model.check()
        self.model, self.variables = model, variables
        self.embedding = self.original_size = self.input_size = None
        self._embed = jax.jit(self._embed_resized)
        self._resize = jax.jit(jax.image.resize, static_argnames=("shape", "method", "antialias"))
        self._answer = jax.jit(self._answer_prompt, static_argnames=(
            "multimask_output", "return_logits", "input_size", "original_size"))

    def _embed_resized(self, variables, image):
        return self.model.apply(variables, preprocess(image[None], self.model.image_size), method="embed_image")

    def _answer_prompt(self, variables, embedding, points, labels, boxes, mask_input, *, multimask_output,
                       return_logits, input_size, original_size):
        low_res, iou = self.model.apply(variables, embedding, points, labels, boxes, mask_input,
                                        multimask_output=multimask_output, method="predict_masks")
        masks = postprocess_masks(low_res, self.model.image_size, input_size, original_size)
        return (masks if return_logits else masks > 0.0), iou, low_res

    def set_image(self, image) -> None:
        """Embeds `image` ([H, W, 3] RGB, 0-255), resized so its longer side is the model's image_size."""
        image = _check_image(image, "image")
        height, width = image.shape[:2]
        size = resized_shape(height, width, self.model.image_size)
        resized = jnp.asarray(image, jnp.float32)
        if size != (height, width):
            resized = self._resize(resized, shape=(*size, 3), method="bilinear", antialias=True)
        self.set_resized_image(resized, (height, width))

    def set_resized_image(self, resized_image, original_size: tuple[int, int]) -> None:
        """Embeds an image already resized so its longer side is the model's image_size ([h, w, 3], 0-255);
        `original_size` (H, W): the image's size before, which prompts' coordinates and the masks refer to."""
        resized_image = _check_image(resized_image, "resized_image")
        if max(resized_image.shape[:2]) != self.model.image_size:
            raise ValueError(f"resized_image of {resized_image.shape[0]}x{resized_image.shape[1]} must have its "
                             f"longer side equal to image_size={self.model.image_size}; use set_image, which resizes")
        self.embedding = self._embed(self.variables, jnp.asarray(resized_image, jnp.float32))
        self.original_size = tuple(int(s) for s in original_size)
        self.input_size = tuple(int(s) for s in resized_image.shape[:2])

    def predict(self, point_coords=None, point_labels=None, box=None, mask_input=None, *,
                multimask_output: bool = True, return_logits: bool = False):
        """(masks, iou predictions, low-resolution logits) for one prompt, or a batch of them (module
        docstring). ValueError for a prompt that cannot be answered, before compiling."""
        if self.embedding is None:
            raise ValueError("no image to prompt: call set_image(image) first")
        prompt = prompts.check(point_coords, point_labels, box, mask_input, image_size=self.original_size,
                               mask_size=self.model.mask_size)
        prompt = prompts.scaled(prompt, self.original_size, self.input_size)
        answer = self._answer(self.variables, self.embedding, prompt.points, prompt.labels, prompt.boxes,
                              prompt.mask_input, multimask_output=bool(multimask_output),
                              return_logits=bool(return_logits), input_size=self.input_size,
                              original_size=self.original_size)
        return answer if prompt.batched else tuple(a[0] for a in answer)

