"""Position-embedding similarity and the PCA of first-layer filters."""
import numpy as np
import pytest

from vitjax.analysis import filters, posemb
from vitjax.models import build
from tests.analysis import tiny


def test_cosine_similarity_is_one_on_the_diagonal_and_symmetric():
    table = np.random.default_rng(0).normal(size=(6, 5))
    sim = posemb.cosine_similarity(table)
    np.testing.assert_allclose(np.diag(sim), 1.0)
    np.testing.assert_allclose(sim, sim.T)
    np.testing.assert_allclose(sim[0, 1], table[0] @ table[1] / np.linalg.norm(table[0]) / np.linalg.norm(table[1]))


def test_similarity_grid_leaves_out_cls_and_keeps_row_major_order():
    grid = (2, 3)
    table = np.random.default_rng(1).normal(size=(1 + 6, 8))
    table[0] = 100.0  # a CLS entry that would dominate if it leaked in
    params = {"Transformer": {"posembed_input": {"pos_embedding": table[None]}}}
    sim = posemb.similarity_grid(params, grid, num_prefix=1)
    assert sim.shape == (2, 3, 2, 3)
    # Patch (1, 2) is token 1 + 1*3 + 2 = 6; patch (0, 1) is token 2.
    expected = posemb.cosine_similarity(table[1:])[5, 1]
    np.testing.assert_allclose(sim[1, 2, 0, 1], expected)
    rows = posemb.similarity_rows(sim)
    assert len(rows) == 36 and rows[0] == dict(query_row=0, query_col=0, key_row=0, key_col=0, cosine=1.0)
    with pytest.raises(ValueError, match="resolution the model was trained at"):
        posemb.similarity_grid(params, (3, 3), num_prefix=1)


def test_fixed_or_missing_position_embeddings_are_not_applicable():
    for kind in ("sincos2d", "none"):
        _, params = tiny.vit(posemb=kind)
        with pytest.raises(posemb.NotApplicable, match="no learned position embedding"):
            posemb.learned_table(params)


def test_pca_recovers_planted_components_in_order():
    rng = np.random.default_rng(0)
    size = 4 * 4 * 3
    basis, _ = np.linalg.qr(rng.normal(size=(size, 2)))  # two orthonormal directions
    strong, weak = basis[:, 0], basis[:, 1]
    count = 200
    # Coefficients on an ellipse: zero mean, uncorrelated, variances 9:1, so the answer is exact.
    angle = 2 * np.pi * np.arange(count)[:, None] / count
    filters_flat = 0.5 + 3.0 * np.cos(angle) * strong + np.sin(angle) * weak
    kernel = filters_flat.T.reshape(4, 4, 3, count)
    pca = filters.principal_components(kernel, num_components=5)
    assert pca["components"].shape == (2, 4, 4, 3)  # only the planted directions carry variance
    first, second = (c.reshape(-1) for c in pca["components"][:2])
    assert abs(first @ strong) == pytest.approx(1.0, abs=1e-6)  # the mean filter (0.5) was removed
    assert abs(second @ weak) == pytest.approx(1.0, abs=1e-6)
    ratio = pca["explained_variance_ratio"]
    np.testing.assert_allclose(ratio, [0.9, 0.1])


def test_first_layer_kernels():
    model, params = tiny.vit()
    kernel, description = filters.first_layer_kernel(model, params)
    assert kernel.shape == (4, 4, 3, 16) and "patch-embedding" in description
    model, params = tiny.swin()
    kernel, description = filters.first_layer_kernel(model, params)
    assert kernel.shape == (2, 2, 3, 16) and "patch-embedding" in description
    model, params = tiny.bit()
    kernel, description = filters.first_layer_kernel(model, params)
    assert kernel.shape == (3, 3, 3, 64) and "BiT root" in description
    # Weight-standardised, as the model uses it: zero mean and unit variance per output filter.
    np.testing.assert_allclose(kernel.mean(axis=(0, 1, 2)), 0.0, atol=1e-5)
    np.testing.assert_allclose(kernel.std(axis=(0, 1, 2)), 1.0, atol=1e-3)
    hybrid = build("vit", 4, patch_size=4, width=16, depth=1, mlp_dim=32, num_heads=2, resnet="R26")
    with pytest.raises(filters.NotApplicable, match="hybrid embeds ResNet feature maps"):
        filters.first_layer_kernel(hybrid, {})


def test_random_filter_baseline_has_the_kernels_shape_and_spectrum_length():
    kernel, _ = filters.first_layer_kernel(*tiny.vit())  # (4, 4, 3, 16)
    spectra = filters.random_spectra(kernel.shape, draws=5, seed=3)
    trained = filters.principal_components(kernel)["spectrum"]
    assert spectra.shape == (5, len(trained)) == (5, 15)  # 16 centred filters span 15 directions
    np.testing.assert_allclose(spectra.sum(axis=1), 1.0)
    assert not np.allclose(spectra[0], spectra[1])  # separate draws
    np.testing.assert_array_equal(spectra, filters.random_spectra(kernel.shape, draws=5, seed=3))  # seeded


def test_random_filter_baseline_draws_kernels_of_the_given_shape(monkeypatch):
    seen = []
    original = filters.principal_components
    monkeypatch.setattr(filters, "principal_components", lambda k, *a: seen.append(k.shape) or original(k, *a))
    filters.random_spectra((4, 4, 1, 64), draws=3)
    assert seen == [(4, 4, 1, 64)] * 3


def test_variance_in_first_k_components():
    spectrum = np.array([0.5, 0.3, 0.15, 0.05])
    np.testing.assert_allclose(filters.variance_in_first(spectrum, (1, 2, 8)), [0.5, 0.8, 1.0])


def test_neighbour_similarity_sorts_pairs_by_grid_relation():
    rows, cols = 3, 4
    r, c, kr, kc = np.meshgrid(*(np.arange(n) for n in (rows, cols, rows, cols)), indexing="ij")
    step = np.abs(r - kr) + np.abs(c - kc)
    similarity = np.select([step == 0, step == 1, r == kr, c == kc], [1.0, 0.7, 0.4, 0.2], default=-0.1)
    got = posemb.neighbour_similarity(similarity)
    assert got == pytest.approx(dict(neighbour=0.7, same_row=0.4, same_column=0.2, other=-0.1))
