"""The DINO objective's settings (config.dino) read and checked against the model and the data, before
anything is compiled: every refusal names the bad value and what to use instead.

Crop sizes: 0 means the image's size for the global crops, and for the local crops 96/224 of the
global size (the official 96- and 224-pixel crops) rounded to a multiple of the patch size, at least
one patch. Every crop size must be a multiple of the patch size: a ViT cuts its input into whole
patches, and its position table is interpolated to each crop's patch grid.
"""
import dataclasses

from vitjax.models.dino import DINO as DINOModel
from vitjax.objectives import multicrop, photometric


@dataclasses.dataclass(frozen=True)
class Settings:
    crops: multicrop.Crops
    student_temp: float
    teacher_temp: float
    warmup_teacher_temp: float
    warmup_teacher_temp_epochs: int
    teacher_momentum: float
    centre_momentum: float
    freeze_last_layer_epochs: int


def check(config, model, info) -> Settings:
    """config.dino as Settings for `model` on images of `info.image_shape`; ValueError naming the fix."""
    if not isinstance(model, DINOModel):
        raise ValueError(f"objective='dino' trains a ViT with DINO's projection head: set "
                         f"--config.model_name=dino (got model_name={config.model_name!r})")
    if model.resnet is not None:
        raise ValueError("objective='dino' takes a plain ViT backbone; drop model.resnet")
    d = config.dino
    problems = [f"dino.{key}={d[key]!r}: {fix}" for key, ok, fix in _rules(d) if not ok]
    if problems:
        raise ValueError("; ".join(problems))
    crops = _crops(d, model.dims()[1], info.image_shape)
    return Settings(crops, float(d.student_temp), float(d.teacher_temp), float(d.warmup_teacher_temp),
                    int(d.warmup_teacher_temp_epochs), float(d.teacher_momentum), float(d.centre_momentum),
                    int(d.freeze_last_layer_epochs))


def _rules(d):
    """(key, whether its value is usable, what to use instead) of each setting."""
    def scale(value):
        return len(value) == 2 and 0 < value[0] <= value[1] <= 1

    return (
        ("local_crops", d.local_crops >= 0, "use 0 or more local crops (the official 8)"),
        ("global_crop_size", d.global_crop_size >= 0, "use a size in pixels, or 0 for the image's size"),
        ("local_crop_size", d.local_crop_size >= 0, "use a size in pixels, or 0 for 96/224 of the global size"),
        ("global_crop_scale", scale(d.global_crop_scale), "use (low, high) with 0 < low <= high <= 1, e.g. (0.4, 1.0)"),
        ("local_crop_scale", scale(d.local_crop_scale), "use (low, high) with 0 < low <= high <= 1, e.g. (0.05, 0.4)"),
        ("student_temp", d.student_temp > 0, "use a temperature > 0 (the paper's 0.1)"),
        ("teacher_temp", d.teacher_temp > 0, "use a temperature > 0 (0.04 to 0.07 in the paper)"),
        ("warmup_teacher_temp", d.warmup_teacher_temp > 0, "use a temperature > 0 (the paper's 0.04)"),
        ("warmup_teacher_temp_epochs", d.warmup_teacher_temp_epochs >= 0, "use 0 (no warm-up) or more epochs"),
        ("teacher_momentum", 0 <= d.teacher_momentum <= 1, "use a momentum in [0, 1] (the paper's 0.996)"),
        ("centre_momentum", 0 <= d.centre_momentum < 1, "use a momentum in [0, 1) (the paper's 0.9)"),
        ("freeze_last_layer_epochs", d.freeze_last_layer_epochs >= 0, "use 0 (never frozen) or more epochs"),
        ("pixel_range", len(d.pixel_range) == 2 and d.pixel_range[0] < d.pixel_range[1],
         "use (low, high) with low < high: the range pp_train maps pixels to, e.g. (-1.0, 1.0)"),
    )


def _crops(d, patch: int, image_shape) -> multicrop.Crops:
    """The crops, sizes resolved and checked against the patch size."""
    global_size = int(d.global_crop_size) or int(image_shape[0])
    local_size = int(d.local_crop_size) or max(patch, int(round(global_size * 96 / 224 / patch)) * patch)
    for key, size in (("global_crop_size", global_size), ("local_crop_size", local_size)):
        if size % patch:
            raise ValueError(f"dino.{key}={size} is not divisible by the patch size {patch}: a ViT takes whole "
                             f"patches; use a multiple of {patch}, e.g. {max(patch, size // patch * patch)}")
    return multicrop.Crops(global_size, local_size, int(d.local_crops), tuple(d.global_crop_scale),
                           tuple(d.local_crop_scale), bool(d.flip), photometric=_photometric(d, image_shape))


def _photometric(d, image_shape) -> photometric.Photometric | None:
    """The views' photometric augmentations, refused on colour images (saturation, hue and grey-scale
    conversion, the official pipeline's colour operations, are not implemented)."""
    if not d.photometric:
        return None
    if image_shape[-1] != 1:
        raise ValueError(f"dino.photometric=True implements the official augmentations that act on grey images "
                         f"only, and these images have {image_shape[-1]} channels: set dino.photometric=False")
    return photometric.Photometric(pixel_range=tuple(float(v) for v in d.pixel_range))


def with_table_grid(model, image_shape):
    """`model` taking every crop size: its learned position table stored for the images' patch grid (the
    grid `init` creates it for) and interpolated to each crop's (posemb_table_grid, vitjax/models/vit.py)."""
    if model.posemb != "learned" or model.posemb_table_grid is not None:
        return model
    patch = model.dims()[1]
    return model.clone(posemb_table_grid=(image_shape[0] // patch, image_shape[1] // patch))
