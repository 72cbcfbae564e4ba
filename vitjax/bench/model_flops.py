"""The model's matrix-product FLOPs per image, counted by hand: the usual numerator of MFU.

    model_flops.per_image(models.ViT(...), (224, 224, 3), 1000)       # forward, 2 FLOPs per multiply-add
    model_flops.per_image(models.Swin(...), (224, 224, 3), 1000)

One formula per model family; None for a family without one (the BiT ResNet, the R50+ViT hybrid).
Norms, softmax, GELU, the loss and the optimiser are not counted; XLA's count of the same program
includes them, and tests/bench/test_model_flops.py checks that the two agree to within a few percent.
"""
from vitjax import models


def vit(model, image_shape, num_classes: int, *, every_row: bool = False) -> float | None:
    """A plain ViT: patch embedding, QKV, attention scores and mixing, output projection, MLP and head.

    When the last block computes fewer rows (`ViT.last_block_rows`: the CLS row alone), it computes
    keys and values for every token and the rest for those rows, and so does this count unless
    `every_row` (what timm computes).
    """
    if model.resnet is not None or model.pool not in ("tok", "gap"):
        return None
    size, patch = model.dims()
    height, width, channels = image_shape
    patches = (height // patch) * (width // patch)
    tokens = patches + (1 if model.pool == "tok" else 0)
    d, m = size.width, size.mlp_dim

    def block(queries):
        keys_values = 2 * tokens * 2 * d * d
        per_query = 2 * (d * d + d * d + 2 * d * m) + 2 * 2 * tokens * d  # Q, output, MLP; scores, mixing
        return keys_values + queries * per_query

    last_queries = tokens if every_row else model.last_block_rows() or tokens
    flops = 2 * patches * patch * patch * channels * d + (size.depth - 1) * block(tokens) + block(last_queries)
    head_in = d
    if model.representation_size is not None:
        flops += 2 * d * model.representation_size
        head_in = model.representation_size
    return float(flops + 2 * head_in * num_classes)


def swin(model, image_shape, num_classes: int, *, every_row: bool = False) -> float:
    """A Swin: patch embedding; per stage its patch merging (4c -> 2c on the merged map) and blocks of
    window attention (QKV and output projection on every token, scores and mixing over each token's
    window of W^2 tokens) and MLP; the head. `every_row` changes nothing: every Swin block computes
    every token.

    Window attention costs 2 * 2 * tokens * W^2 * c per block, linear in the tokens where a ViT's is
    quadratic; so at a fixed window a Swin's count grows with the pixels.
    """
    size = model.dims()
    height, width, channels = image_shape
    patch = model.patch_size
    flops = 2 * (height // patch) * (width // patch) * patch * patch * channels * size.embed_dim
    for i, (plan, depth) in enumerate(zip(model.stages(height, width), size.depths)):
        c = size.embed_dim * 2 ** i
        tokens = plan.resolution[0] * plan.resolution[1]
        window = plan.window[0] * plan.window[1]
        if i > 0:
            flops += 2 * tokens * (2 * c) * c  # merging: the concatenated 4 (c / 2) channels -> c
        mlp = int(c * model.mlp_ratio)
        per_token = 2 * (3 * c * c + c * c + 2 * c * mlp) + 2 * 2 * window * c  # QKV, out, MLP; scores, mixing
        flops += depth * tokens * per_token
    return float(flops + 2 * size.embed_dim * 2 ** (len(size.depths) - 1) * num_classes)


FORMULAS = {models.ViT: vit, models.Swin: swin}


def per_image(model, image_shape, num_classes: int, *, every_row: bool = False) -> float | None:
    """Forward FLOPs (2 per multiply-add) of one image's matrix products; None where no formula is written."""
    formula = FORMULAS.get(type(model))
    return formula(model, image_shape, num_classes, every_row=every_row) if formula else None
