"""Segment Anything (Kirillov et al. 2023): promptable segmentation, with the parameters and outputs of the
official `segment-anything` 1.0 model.

An image, resized so its longer side is `image_size` (1024), normalised and zero-padded to a square, is
embedded once by a ViT (vitjax/models/sam_encoder.py) into a [rows, cols, 256] grid (64x64). Prompts
(points with labels, a box, an earlier mask's logits) are encoded (vitjax/models/sam_prompt_encoder.py)
and a light two-way transformer decodes them against the embedding (vitjax/models/sam_decoder.py) into
mask logits at 4x the grid (256x256) and a predicted IoU per mask: one mask, or three for an ambiguous
prompt (`multimask_output`). `postprocess_masks` removes the padding and resizes the logits to the
image's own size; a logit above 0 is inside the mask.

    model = SAM(variant="B")                                  # "B", "L", "H": the released sizes
    variables = model.init(rng, images)                       # {"params", "constants"}
    embeddings = model.apply(variables, images, method="embed_image")           # [1, 64, 64, 256]
    masks, iou = model.apply(variables, embeddings, points, labels, method="predict_masks")
    tiny = SAM(variant=None, width=64, depth=2, num_heads=2, global_attn_indexes=(1,), image_size=128)

`images` are what the encoder takes: [b, image_size, image_size, 3], already normalised and padded
(`preprocess`). Points [B, N, 2] are (x, y) in the pixels of the resized image, labels [B, N] (1
foreground, 0 background, -1 padding), boxes [B, 4] (x0, y0, x1, y1), mask_input [B, 1, 4 rows, 4 cols]
(a previous output's logits). vitjax/segment/predictor.py does all of that from an image of any size
and checks the prompts; vitjax/interop/sam_weights.py reads the official weights.

The variables hold `params` (exactly the official model's `.parameters()`: 93,735,472 for "B") and
`constants`: the prompt encoder's random Fourier matrix, which the official model keeps as a buffer.
"""
import dataclasses
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from vitjax.models.attention import check_heads
from vitjax.models.sam_decoder import MaskDecoder
from vitjax.models.sam_encoder import ImageEncoder
from vitjax.models.sam_prompt_encoder import PromptEncoder

# The normalisation of the released models, in 0-255 pixel units (ImageNet's mean and std).
PIXEL_MEAN = (123.675, 116.28, 103.53)
PIXEL_STD = (58.395, 57.12, 57.375)


@dataclasses.dataclass(frozen=True)
class Size:
    width: int
    depth: int
    num_heads: int
    global_attn_indexes: tuple[int, ...]


# segment-anything's build_sam.py: ViT-B, -L and -H image encoders; the rest of the model is shared.
SIZES = {
    "B": Size(768, 12, 12, (2, 5, 8, 11)),
    "L": Size(1024, 24, 16, (5, 11, 17, 23)),
    "H": Size(1280, 32, 16, (7, 15, 23, 31)),
}


class SAM(nn.Module):
    """Segment Anything. `SAM(variant="B")`; `image_size` (default 1024, any multiple of `patch_size`) sets
    the grid and so the position embedding's and the global blocks' relative tables' shapes. With
    `variant=None`, `width`, `depth`, `num_heads` and `global_attn_indexes` are all given (small models
    for tests); with a variant, any of them given overrides it.

    Methods: `__call__(images, points, labels, boxes, mask_input, multimask_output)` (the whole model;
    `init` takes it with images alone), `embed_image(images)` and `predict_masks(image_embeddings, ...)`
    (the two halves, so an image is embedded once for many prompts).
    """
    variant: str | None = "B"
    image_size: int = 1024
    patch_size: int = 16
    window_size: int = 14
    width: int | None = None
    depth: int | None = None
    num_heads: int | None = None
    global_attn_indexes: tuple[int, ...] | None = None
    mlp_ratio: float = 4.0  # the encoder blocks' MLP width over theirs (2 matches vitjax's Fashion-MNIST ViT)
    prompt_width: int = 256
    mask_in_chans: int = 16
    decoder_depth: int = 2
    decoder_heads: int = 8
    decoder_mlp_dim: int = 2048
    num_multimask_outputs: int = 3
    iou_head_depth: int = 3
    iou_head_hidden: int = 256
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    def dims(self) -> Size:
        """The image encoder's resolved Size: the variant's, with explicit fields overriding it."""
        if self.variant is not None:
            if self.variant not in SIZES:
                raise ValueError(f"unknown SAM variant {self.variant!r}; choose one of {list(SIZES)}, or "
                                 f"variant=None with width, depth, num_heads and global_attn_indexes")
            size = SIZES[self.variant]
        else:
            missing = [f.name for f in dataclasses.fields(Size) if getattr(self, f.name) is None]
            if missing:
                raise ValueError(f"SAM without a variant needs {missing}; pass them or variant='B' etc.")
            size = Size(0, 0, 0, ())
        return Size(*(getattr(self, f.name) if getattr(self, f.name) is not None else getattr(size, f.name)
                      for f in dataclasses.fields(Size)))

    @property
    def grid(self) -> int:
        """Rows (= columns) of the image embedding: image_size / patch_size."""
        return self.image_size // self.patch_size

    @property
    def mask_size(self) -> int:
        """Rows (= columns) of the low-resolution mask logits, and of a mask prompt: 4 x grid."""
        return 4 * self.grid

    def check(self) -> None:
        """ValueError for a configuration that cannot run, naming the fix (nothing is compiled)."""
        size = self.dims()
        check_heads(size.width, size.num_heads)
        check_heads(self.prompt_width // 2, self.decoder_heads)
        if self.patch_size <= 0 or self.image_size <= 0 or self.image_size % self.patch_size:
            nearest = max(self.image_size // max(self.patch_size, 1), 1) * self.patch_size
            raise ValueError(f"image_size {self.image_size} must be a positive multiple of patch_size="
                             f"{self.patch_size} (e.g. {nearest})")
        if self.window_size < 0:
            raise ValueError(f"window_size must be >= 0 (0: every block global), got {self.window_size}")
        wrong = [i for i in size.global_attn_indexes if not 0 <= i < size.depth]
        if wrong:
            raise ValueError(f"global_attn_indexes {wrong} are not blocks of a depth-{size.depth} encoder; use "
                             f"indexes in 0..{size.depth - 1}")
        if self.prompt_width % 8 or self.mask_in_chans % 4:
            raise ValueError(f"prompt_width must be a multiple of 8 and mask_in_chans of 4 (the upscaling "
                             f"divides by 8, the mask downscaling by 4); got {self.prompt_width}, "
                             f"{self.mask_in_chans}")

    def setup(self):
        self.check()
        size = self.dims()
        dtypes = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        self.image_encoder = ImageEncoder(
            size.width, size.depth, size.num_heads, tuple(size.global_attn_indexes), self.window_size,
            self.patch_size, self.image_size, self.prompt_width, self.mlp_ratio, **dtypes)
        self.prompt_encoder = PromptEncoder(self.prompt_width, (self.grid, self.grid),
                                            (self.image_size, self.image_size), self.mask_in_chans, **dtypes)
        self.mask_decoder = MaskDecoder(self.decoder_depth, self.decoder_heads, self.decoder_mlp_dim,
                                        self.num_multimask_outputs, self.iou_head_depth, self.iou_head_hidden,
                                        **dtypes)

    def embed_image(self, images):
        """[b, image_size, image_size, 3] preprocessed images -> [b, grid, grid, prompt_width]."""
        expected = (self.image_size, self.image_size, 3)
        if images.ndim != 4 or tuple(images.shape[1:]) != expected:
            raise ValueError(f"SAM's encoder takes [batch, {self.image_size}, {self.image_size}, 3] images, "
                             f"normalised and padded (vitjax.models.sam.preprocess); got shape {images.shape}")
        return self.image_encoder(images)

    def predict_masks(self, image_embeddings, points=None, labels=None, boxes=None, mask_input=None,
                      multimask_output: bool = True):
        """(mask logits [B, masks, mask_size, mask_size], IoU predictions [B, masks]) for B prompts on one
        image's embeddings [1, grid, grid, w] (or B images', one prompt each)."""
        sparse, dense = self.prompt_encoder(points, labels, boxes, mask_input)
        return self.mask_decoder(image_embeddings, self.prompt_encoder.image_encoding(), sparse, dense,
                                 multimask_output)

    def __call__(self, images, points=None, labels=None, boxes=None, mask_input=None,
                 multimask_output: bool = True, *, train: bool = False):
        # `train` changes nothing (SAM has no dropout): the trainer initialises every family with it.
        return self.predict_masks(self.embed_image(images), points, labels, boxes, mask_input, multimask_output)


def resized_shape(height: int, width: int, long_side: int) -> tuple[int, int]:
    """(height, width) scaled so the longer side is `long_side`, each rounded half up, as the reference's
    ResizeLongestSide does (which the released models were trained with)."""
    scale = long_side / max(height, width)
    return int(height * scale + 0.5), int(width * scale + 0.5)


def preprocess(images, image_size: int):
    """[b, h, w, 3] pixels (0-255, already resized: max(h, w) <= image_size) -> the encoder's input:
    normalised by PIXEL_MEAN and PIXEL_STD, then zero-padded at the bottom and right to image_size."""
    height, width = images.shape[1:3]
    if max(height, width) > image_size:
        raise ValueError(f"images of {height}x{width} are larger than image_size={image_size}; resize them so "
                         f"the longer side is {image_size} first (resized_shape gives the size)")
    x = (jnp.asarray(images, jnp.float32) - np.asarray(PIXEL_MEAN, np.float32)) / np.asarray(PIXEL_STD, np.float32)
    return jnp.pad(x, ((0, 0), (0, image_size - height), (0, image_size - width), (0, 0)))


def postprocess_masks(masks, image_size: int, input_size: tuple[int, int], original_size: tuple[int, int]):
    """[B, masks, m, m] low-resolution logits -> [B, masks, *original_size]: bilinearly upsampled to the
    padded `image_size` square, the padding cut off (`input_size`: the resized image's (h, w)), then resized
    to the image's `original_size`. Bilinear with half-pixel centres and no antialiasing, as the
    reference's F.interpolate(align_corners=False)."""
    batch, count = masks.shape[:2]
    masks = jax.image.resize(masks, (batch, count, image_size, image_size), "bilinear", antialias=False)
    masks = masks[..., :input_size[0], :input_size[1]]
    return jax.image.resize(masks, (batch, count, *original_size), "bilinear", antialias=False)
