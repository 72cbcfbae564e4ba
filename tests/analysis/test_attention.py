"""The attention maths: distances, CLS handling, rollout, and reading weights out of real models."""
import itertools
import math

import numpy as np
import pytest

from vitjax.analysis import attention
from tests.analysis import tiny

GRID, PATCH = (3, 4), 5  # a non-square grid, so rows and columns cannot be swapped unnoticed


def _with_cls(patch_weights, cls_share=0.3, heads=2, batch=2):
    """[N, N] patch attention -> [batch, heads, 1 + N, 1 + N] with CLS rows/columns taking a share."""
    n = patch_weights.shape[0]
    full = np.zeros((1 + n, 1 + n))
    full[1:, 1:] = (1 - cls_share) * patch_weights
    full[1:, 0] = cls_share
    full[0, :] = 1.0 / (1 + n)
    return np.broadcast_to(full, (batch, heads, 1 + n, 1 + n))


def _mean_pairwise_distance(grid, patch):
    """Independent reference: plain loops over every (query, key) patch pair, self-pairs included."""
    cells = list(itertools.product(range(grid[0]), range(grid[1])))
    total = sum(math.hypot(patch * (r1 - r2), patch * (c1 - c2)) for (r1, c1), (r2, c2)
                in itertools.product(cells, cells))
    return total / len(cells) ** 2


def test_patch_distances_in_pixels():
    d = attention.patch_distances((2, 2), 4)
    np.testing.assert_allclose(d[0], [0, 4, 4, 4 * math.sqrt(2)])
    np.testing.assert_allclose(d, d.T)


def test_identity_attention_has_zero_distance():
    n = GRID[0] * GRID[1]
    weights = _with_cls(np.eye(n))
    np.testing.assert_allclose(attention.mean_attention_distance(weights, GRID, PATCH), 0.0, atol=1e-12)


def test_uniform_attention_has_the_mean_pairwise_patch_distance():
    n = GRID[0] * GRID[1]
    expected = _mean_pairwise_distance(GRID, PATCH)
    # Uniform over every token, CLS included: dropping CLS and renormalising leaves uniform over patches.
    everywhere = np.full((2, 3, 1 + n, 1 + n), 1.0 / (1 + n))
    np.testing.assert_allclose(attention.mean_attention_distance(everywhere, GRID, PATCH), expected, rtol=1e-12)
    # The same without a CLS token (pool='gap').
    no_cls = np.full((1, 2, n, n), 1.0 / n)
    np.testing.assert_allclose(attention.mean_attention_distance(no_cls, GRID, PATCH), expected, rtol=1e-12)


def test_weight_on_cls_does_not_count_as_distance():
    n = GRID[0] * GRID[1]
    for share in (0.0, 0.5, 0.9):
        weights = _with_cls(np.eye(n), cls_share=share)
        np.testing.assert_allclose(attention.mean_attention_distance(weights, GRID, PATCH), 0.0, atol=1e-12)


def test_rollout_of_identity_attention_is_identity():
    eye = np.broadcast_to(np.eye(1 + 12), (2, 3, 13, 13))
    np.testing.assert_allclose(attention.attention_rollout([eye] * 4), np.broadcast_to(np.eye(13), (2, 13, 13)))


def test_rollout_averages_heads_adds_identity_and_multiplies_later_layers_on_the_left():
    rng = np.random.default_rng(0)
    layers = [rng.dirichlet(np.ones(5), size=(1, 2, 5)) for _ in range(2)]
    step = [(w.mean(axis=1)[0] + np.eye(5)) / 2 for w in layers]
    got = attention.attention_rollout(layers)[0]
    np.testing.assert_allclose(got, step[1] @ step[0], rtol=1e-12)
    np.testing.assert_allclose(got.sum(axis=-1), 1.0)


def test_cls_maps_drop_the_cls_key_and_need_a_cls_token():
    n = GRID[0] * GRID[1]
    weights = _with_cls(np.eye(n))
    maps = attention.cls_maps(weights, GRID)
    assert maps.shape == (2, 2, *GRID)
    np.testing.assert_allclose(maps, 1.0 / n)  # the CLS row was uniform over all tokens
    with pytest.raises(ValueError, match="no CLS token"):
        attention.cls_maps(np.full((1, 1, n, n), 1.0 / n), GRID)


@pytest.mark.parametrize("scan", [False, True])
def test_weights_read_from_unrolled_and_scanned_models(scan):
    model, params = tiny.vit(scan=scan)
    images = tiny.images(3)
    layers = attention.attention_weights(model, params, images)
    assert len(layers) == 2
    for w in layers:
        assert w.shape == (3, 2, 17, 17)  # batch, heads, CLS + 4x4 patches
        np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-5)
    stats = attention.summarize(model, params, images, (4, 4), 4, num_show=2)
    assert stats["distance"].shape == (2, 2) and stats["num_images"] == 3
    assert stats["rollout"].shape == (2, 4, 4) and stats["cls"].shape == (3, 2, 4, 4)  # every image's CLS maps
    assert np.all(stats["distance"] > 0) and np.all(stats["distance"] < attention.patch_distances((4, 4), 4).max())


def test_chunking_does_not_change_the_statistics():
    model, params = tiny.vit()
    images = tiny.images(3)
    whole = attention.summarize(model, params, images, (4, 4), 4, num_show=2, chunk=3)
    pieces = attention.summarize(model, params, images, (4, 4), 4, num_show=2, chunk=1)
    for key in ("distance", "rollout", "cls"):
        np.testing.assert_allclose(whole[key], pieces[key], rtol=1e-5)


def test_gap_model_rollout_without_cls():
    model, params = tiny.vit(posemb="sincos2d", pool="gap")
    stats = attention.summarize(model, params, tiny.images(3), (4, 4), 4)
    assert stats["cls"] is None
    assert stats["rollout"].shape == (3, 4, 4)
    np.testing.assert_allclose(stats["rollout"].sum(axis=(1, 2)), 1.0)


def test_maps_upsample_to_one_constant_cell_per_token():
    """Nearest-neighbour, not smooth: each token's patch x patch cell holds exactly the token's value."""
    maps = np.random.default_rng(0).uniform(size=(2, 3, *GRID))  # [images, heads, rows, cols]
    pixels = attention.to_pixels(maps, PATCH)
    assert pixels.shape == (2, 3, GRID[0] * PATCH, GRID[1] * PATCH)
    for r, c in itertools.product(range(GRID[0]), range(GRID[1])):
        cell = pixels[..., r * PATCH:(r + 1) * PATCH, c * PATCH:(c + 1) * PATCH]
        np.testing.assert_array_equal(cell, np.broadcast_to(maps[..., r, c, None, None], cell.shape))


def test_distance_figure_tells_each_control_apart(tmp_path):
    """Two controls (initialised, supervised) beside a trained model: each has its own look and column."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from vitjax.analysis import figures

    layers, heads = 3, 2
    distances = {"trained": np.full((layers, heads), 5.0), "init": np.full((layers, heads), 9.0),
                 "supervised": np.full((layers, heads), 7.0)}
    captured = []
    original_save = figures._save
    figures._save = lambda fig, path: captured.append(fig) or original_save(fig, path)
    try:
        path = figures.attention_distance(distances, str(tmp_path / "distance.png"), uniform_distance=10.0)
    finally:
        figures._save = original_save
    assert (tmp_path / "distance.png").exists() and path.endswith("distance.png")
    ax = captured[0].axes[0]
    by_label = {c.get_label(): c for c in ax.collections}
    init, supervised = by_label["init: every head"], by_label["supervised: every head"]
    assert not np.allclose(init.get_facecolor(), supervised.get_facecolor()) or \
        init.get_paths()[0] != supervised.get_paths()[0]
    columns = [np.unique(np.round(c.get_offsets()[:, 0] % 1, 6)) for c in (init, supervised)]
    assert len(columns[0]) == len(columns[1]) == 1 and columns[0][0] != columns[1][0]
    plt.close("all")
