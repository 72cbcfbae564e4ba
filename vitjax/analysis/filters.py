"""Principal components of the first-layer filters (ViT paper Fig. 7 left).

The patch embedding is a linear map from a p x p x C patch to D channels: D filters of p*p*C
numbers. Their principal components are a basis of what the embedding is most sensitive to; in
trained ViTs they resemble smooth low-frequency functions, much like the first filters of a CNN.
"""
import numpy as np

from vitjax.analysis.posemb import NotApplicable


def first_layer_kernel(model, params) -> tuple[np.ndarray, str]:
    """(kernel [kh, kw, C, D], description) of the layer that sees the pixels, or NotApplicable."""
    from vitjax.models import MAE, BiT, Swin, ViT  # the models package imports flax; keep this module light

    if isinstance(model, ViT) and model.resnet is not None:
        raise NotApplicable(
            f"the {model.resnet} hybrid embeds ResNet feature maps, not pixels: its patch-embedding "
            f"filters are not images")
    if isinstance(model, (ViT, Swin, MAE)):  # all embed pixel patches with vit.PatchEmbedding
        return np.asarray(params["embedding"]["kernel"]), "patch-embedding filters (embedding/kernel)"
    if isinstance(model, BiT):
        from vitjax.models.bit import standardize
        # StdConv standardises its kernel at every use; what meets the pixels is the standardised one.
        kernel = np.asarray(standardize(np.asarray(params["root_conv"]["kernel"], np.float32), 1e-8))
        return kernel, "BiT root convolution filters (root_conv/kernel, weight-standardised)"
    raise NotApplicable(f"no first-layer filters known for {type(model).__name__}")


def principal_components(kernel: np.ndarray, num_components: int = 28) -> dict:
    """PCA over the D filters of a [kh, kw, C, D] kernel.

    Each filter is a point in kh*kw*C dimensions; the mean filter is removed and the right singular
    vectors of the centred [D, kh*kw*C] matrix are the components, largest variance first.
    Returns 'components' [k, kh, kw, C] (unit norm) and 'explained_variance_ratio' [k], with k at most
    `num_components` and the number of directions that carry any variance, and 'spectrum': the
    variance ratio of every direction that carries variance (min(D - 1, kh*kw*C) of them for filters in
    general position), for comparisons with baselines.
    """
    kernel = np.asarray(kernel, np.float64)
    kh, kw, channels, count = kernel.shape
    points = kernel.reshape(kh * kw * channels, count).T
    centred = points - points.mean(axis=0, keepdims=True)
    _, singular, basis = np.linalg.svd(centred, full_matrices=False)
    variance = singular ** 2
    total = variance.sum()
    ratio = variance / total if total > 0 else np.zeros_like(variance)
    # Directions without variance (beyond the rank of the centred filters) are arbitrary: left out.
    rank = int(np.sum(singular > 1e-9 * max(singular.max(initial=0.0), 1e-30)))
    k = min(num_components, rank)
    return {"components": basis[:k].reshape(k, kh, kw, channels), "explained_variance_ratio": ratio[:k],
            "spectrum": ratio[:rank]}


def random_spectra(shape, draws: int = 20, seed: int = 0) -> np.ndarray:
    """[draws, n]: the PCA spectra of `draws` kernels of `shape` with i.i.d. Gaussian entries.

    The noise baseline for a filter spectrum: D random filters in kh*kw*C dimensions do not share
    their variance equally (a finite sample never does), so an uneven trained spectrum means
    structure only where it leaves this band. The scale does not matter: ratios are scale-free.
    """
    rng = np.random.default_rng(seed)
    return np.stack([principal_components(rng.normal(size=shape))["spectrum"] for _ in range(draws)])


def variance_in_first(spectrum: np.ndarray, ks) -> list[float]:
    """The fraction of the variance in the first k components, for each k in `ks`."""
    cumulative = np.cumsum(spectrum)
    return [float(cumulative[min(k, len(cumulative)) - 1]) for k in ks]
