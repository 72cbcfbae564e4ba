"""MAE reconstructions (He et al. 2022, Fig. 2-4): what a masked autoencoder makes of the patches it
did not see.

For each image: the original, the masked input the encoder saw (masked patches blank), the decoder's
prediction of every patch, and the reconstruction with the visible patches pasted back (the paper's
figures). A model trained with `norm_pix_loss` predicts each patch normalised by its own mean and
variance, so its predictions are un-normalised with the original patch's mean and variance before
they are drawn, as the official visualisation does: its colours and brightness come from the
original, its shapes from the model. The masks are drawn from a fixed key, so every model analysed
(the trained one and its initialised control) and every rerun see the same masks.
Tests: `python -m pytest tests/analysis/test_reconstruction.py`.
"""
import numpy as np

MASK_SEED = 0  # the key of the analysis's masks


def applies(model) -> bool:
    """Whether `model` reconstructs images: an MAE (vitjax.models.MAE)."""
    from vitjax.models import MAE  # imports flax: on use, as the rest of vitjax/analysis
    return isinstance(model, MAE)


def unnormalized(pred, images, patch: int, eps: float = 1e-6):
    """Predictions [B, N, P*P*C] of normalised patches back in pixel values: times each original
    patch's standard deviation (sqrt(var + eps), the unbiased variance, as the loss's target), plus
    its mean (vitjax.models.mae.normalized_patches, inverted)."""
    import jax.numpy as jnp

    from vitjax.models.mae import patchify

    target = patchify(jnp.asarray(images, jnp.float32), patch)
    mean = jnp.mean(target, axis=-1, keepdims=True)
    var = jnp.var(target, axis=-1, keepdims=True, ddof=1)
    return pred * jnp.sqrt(var + eps) + mean


def reconstruct(model, params, images, *, seed: int = MASK_SEED) -> dict:
    """{'original', 'masked', 'prediction', 'pasted'} [n, H, W, C] and 'mask' [n, rows, cols] (1 =
    masked) of `images` [n, H, W, C] under `model` (vitjax.models.MAE) with `params`, as host numpy;
    'loss' is the model's masked-patch loss on them. 'masked' holds NaN in the masked patches (drawn
    blank); 'pasted' is the original in every visible patch, exactly."""
    import jax
    import jax.numpy as jnp

    from vitjax.models.mae import mae_loss, patchify, unpatchify

    images = jnp.asarray(images, jnp.float32)
    _, patch = model.dims()
    grid = (images.shape[1] // patch, images.shape[2] // patch)
    pred, mask = jax.jit(lambda p, x: model.apply({"params": p}, x, train=False,
                                                  rngs={"mask": jax.random.key(seed)}))(params, images)
    loss = mae_loss(images, pred, mask, patch, model.norm_pix_loss)
    if model.norm_pix_loss:
        pred = unnormalized(pred, images, patch)
    patches = patchify(images, patch)
    hidden = mask[..., None] > 0
    out = {"original": images,
           "masked": unpatchify(jnp.where(hidden, jnp.nan, patches), patch, grid),
           "prediction": unpatchify(pred, patch, grid),
           "pasted": unpatchify(jnp.where(hidden, pred, patches), patch, grid),
           "mask": mask.reshape(-1, *grid)}
    return {**{k: np.asarray(v) for k, v in out.items()}, "loss": float(loss)}
