"""Position embeddings: the sinusoid formulas, grid resizing, and the learned table's layout."""
import math

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax.models import posemb
from vitjax.models.posemb import AddPositionEmbedding, resize_grid, sincos_1d, sincos_2d, sincos_2d_mae
from vitjax.models.vit import ViT


@pytest.mark.parametrize("pos,channel", [(0, 0), (0, 1), (1, 0), (3, 1), (7, 4), (7, 5), (11, 14), (11, 15)])
def test_sincos_1d_matches_the_vaswani_formula(pos, channel):
    width = 16
    table = sincos_1d(12, width)
    i = channel // 2
    angle = pos / 10_000 ** (2 * i / width)
    expected = math.sin(angle) if channel % 2 == 0 else math.cos(angle)
    assert table.shape == (12, width)
    assert table[pos, channel] == pytest.approx(expected, abs=1e-6)


def test_sincos_1d_rejects_an_odd_width():
    with pytest.raises(ValueError, match="even width, got 15"):
        sincos_1d(4, 15)


def big_vision_sincos_2d(rows, cols, width, temperature=10_000.0):
    """big_vision's `posemb_sincos_2d` (big_vision/models/vit.py), written here from its description:

    y, x = the row and column index of each grid position, row-major (a mgrid over [rows, cols]);
    omega = 1 / temperature ** (arange(width // 4) / (width // 4 - 1));
    table = concat([sin(x omega), cos(x omega), sin(y omega), cos(y omega)]) along the channels.
    Computed position by position, channel by channel, in float64.
    """
    quarter = width // 4
    table = np.zeros((rows * cols, width))
    for position in range(rows * cols):
        y, x = divmod(position, cols)
        for i in range(quarter):
            omega = temperature ** -(i / (quarter - 1))
            table[position, i] = math.sin(x * omega)
            table[position, quarter + i] = math.cos(x * omega)
            table[position, 2 * quarter + i] = math.sin(y * omega)
            table[position, 3 * quarter + i] = math.cos(y * omega)
    return table


@pytest.mark.parametrize("grid, width", [((4, 4), 16), ((3, 5), 32), ((2, 7), 8)])
def test_sincos_2d_is_big_visions_table(grid, width):
    """A big_vision model trained with posemb='sincos2d' must see the same position signal here."""
    np.testing.assert_allclose(sincos_2d(grid, width), big_vision_sincos_2d(*grid, width), rtol=0, atol=1e-6)


def mae_sincos_2d(grid_size, width):
    """MAE's `get_2d_sincos_pos_embed` (facebookresearch/mae, util/pos_embed.py), from its description:

    a square grid; meshgrid(w, h) puts the column index first, so the first width/2 channels code the
    column and the rest the row; each half is [sin(pos omega), cos(pos omega)] with
    omega = 1 / 10000 ** (arange(width // 4) / (width / 4)). Computed with numpy's xy meshgrid.
    """
    quarter = width // 4
    omega = 1.0 / 10_000 ** (np.arange(quarter) / quarter)
    column, row = np.meshgrid(np.arange(grid_size), np.arange(grid_size))  # 'xy': the first varies along axis 1
    halves = [np.concatenate([np.sin(np.outer(c.reshape(-1), omega)), np.cos(np.outer(c.reshape(-1), omega))], 1)
              for c in (column, row)]
    return np.concatenate(halves, axis=1)


@pytest.mark.parametrize("grid_size, width", [(14, 768), (7, 64), (4, 4)])
def test_sincos_2d_mae_is_the_official_mae_table(grid_size, width):
    """An MAE encoder trained with its fixed table sees the same one in a vitjax ViT."""
    table = sincos_2d_mae((grid_size, grid_size), width)
    np.testing.assert_allclose(table, mae_sincos_2d(grid_size, width), rtol=0, atol=1e-6)
    # The two tables share a layout and differ only in the frequencies after the first.
    if width >= 8:  # big_vision's table needs two frequencies per quarter
        big_vision = sincos_2d((grid_size, grid_size), width)
        assert np.abs(table - big_vision).max() > 1e-3
        np.testing.assert_allclose(table[:, 0], big_vision[:, 0], atol=1e-6)
    with pytest.raises(ValueError, match="divisible by 4, got 6"):
        sincos_2d_mae((2, 2), 6)


def test_sincos2d_mae_posemb_adds_the_table_after_a_zero_cls_entry():
    x = jnp.asarray(np.random.default_rng(3).normal(size=(2, 1 + 6, 8)), jnp.float32)
    y = np.asarray(AddPositionEmbedding("sincos2d_mae", grid=(2, 3), num_prefix_tokens=1).apply({}, x))
    np.testing.assert_array_equal(y[:, 0], np.asarray(x[:, 0]))
    np.testing.assert_allclose(y[:, 1:] - np.asarray(x[:, 1:]), np.broadcast_to(sincos_2d_mae((2, 3), 8), (2, 6, 8)),
                               atol=1e-6)


def test_sincos_2d_codes_columns_then_rows_and_separates_positions():
    rows, cols, width = 3, 4, 16
    table = sincos_2d((rows, cols), width)
    assert table.shape == (rows * cols, width)
    grid = table.reshape(rows, cols, width)
    half = width // 4 * 2
    # The first half of the channels encodes the column only, the second half the row only.
    assert np.ptp(grid[:, :, :half], axis=0).max() == 0.0, "column code must not depend on the row"
    assert np.ptp(grid[:, :, half:], axis=1).max() == 0.0, "row code must not depend on the column"
    # Frequencies run from 1 (channel 0: sin of the column index) down to 1/10000 (the last channel of
    # each quarter; the last channel of all is cos of the row index / 10000).
    np.testing.assert_allclose(grid[0, :, 0], np.sin(np.arange(cols)), atol=1e-6)
    np.testing.assert_allclose(grid[:, 0, width - 1], np.cos(np.arange(rows) / 10_000), atol=1e-6)
    # Every grid position gets its own code.
    distances = np.linalg.norm(table[:, None] - table[None], axis=-1)
    assert distances[~np.eye(rows * cols, dtype=bool)].min() > 1e-2
    with pytest.raises(ValueError, match="divisible by 4 and at least 8, got 18"):
        sincos_2d((2, 2), 18)
    with pytest.raises(ValueError, match="at least 8, got 4"):  # width // 4 - 1 would be 0
        sincos_2d((2, 2), 4)


def test_resize_grid_keeps_cls_and_gives_the_new_shape():
    width = 8
    table = np.random.default_rng(0).normal(size=(1, 1 + 4 * 4, width)).astype(np.float32)
    resized = resize_grid(table, (6, 6))
    assert resized.shape == (1, 1 + 36, width)
    np.testing.assert_array_equal(resized[:, 0], table[:, 0])
    # Bilinear interpolation stays within the range of the original grid, channel by channel.
    grid = table[0, 1:]
    assert (resized[0, 1:] >= grid.min(0) - 1e-6).all() and (resized[0, 1:] <= grid.max(0) + 1e-6).all()
    # A constant grid stays constant; a grid that varies stays varying.
    constant = np.concatenate([table[:, :1], np.full((1, 16, width), 0.7, np.float32)], axis=1)
    np.testing.assert_allclose(resize_grid(constant, (6, 6))[0, 1:], 0.7, atol=1e-6)
    assert np.ptp(resized[0, 1:], axis=0).min() > 1e-3


def test_resize_grid_to_the_same_grid_is_the_identity():
    table = np.random.default_rng(1).normal(size=(1, 1 + 9, 8)).astype(np.float32)
    np.testing.assert_array_equal(resize_grid(table, (3, 3)), table)
    no_cls = table[:, 1:]
    np.testing.assert_array_equal(resize_grid(no_cls, (3, 3), num_prefix_tokens=0), no_cls)


def test_resize_grid_of_a_non_square_table_needs_old_grid():
    table = np.zeros((1, 1 + 6, 4), np.float32)
    with pytest.raises(ValueError, match=r"6 entries after 1 prefix tokens; pass old_grid"):
        resize_grid(table, (3, 3))
    assert resize_grid(table, (4, 6), old_grid=(2, 3)).shape == (1, 1 + 24, 4)


def test_learned_posemb_is_a_parameter_covering_cls_and_every_patch():
    width, grid = 16, 4
    model = ViT(num_classes=3, patch_size=4, width=width, depth=1, mlp_dim=32, num_heads=2)
    images = jax.ShapeDtypeStruct((1, 4 * grid, 4 * grid, 3), jnp.float32)
    params = nn.unbox(jax.eval_shape(model.init, jax.random.key(0), images))["params"]
    assert params["Transformer"]["posembed_input"]["pos_embedding"].shape == (1, 1 + grid * grid, width)
    gap = model.clone(pool="gap")
    gap_params = nn.unbox(jax.eval_shape(gap.init, jax.random.key(0), images))["params"]
    assert gap_params["Transformer"]["posembed_input"]["pos_embedding"].shape == (1, grid * grid, width)
    # The fixed embeddings have no parameters.
    fixed = jax.eval_shape(model.clone(posemb="sincos2d").init, jax.random.key(0), images)["params"]
    assert "posembed_input" not in fixed["Transformer"]


@pytest.mark.parametrize("kind", ["sincos1d", "sincos2d"])
def test_fixed_posemb_leaves_prefix_tokens_alone_and_adds_the_table(kind):
    width, prefix, grid = 8, 1, (2, 3)
    x = jnp.asarray(np.random.default_rng(2).normal(size=(2, prefix + 6, width)), jnp.float32)
    y = np.asarray(AddPositionEmbedding(kind, grid=grid, num_prefix_tokens=prefix).apply({}, x))
    np.testing.assert_array_equal(y[:, :prefix], np.asarray(x[:, :prefix]))
    table = sincos_1d(6, width) if kind == "sincos1d" else big_vision_sincos_2d(*grid, width)
    np.testing.assert_allclose(y[:, prefix:] - np.asarray(x[:, prefix:]), np.broadcast_to(table, (2, 6, width)),
                               atol=1e-6)


def test_unknown_posemb_kind_raises():
    with pytest.raises(ValueError, match=r"unknown position embedding 'rope'; choose one of"):
        AddPositionEmbedding("rope").apply({}, jnp.zeros((1, 4, 8)))
    assert "rope" not in posemb.KINDS


def test_a_learned_table_with_a_table_grid_keeps_its_shape_and_is_interpolated_to_other_grids():
    layer = AddPositionEmbedding("learned", grid=(3, 3), num_prefix_tokens=1, table_grid=(7, 7))
    x = jnp.zeros((2, 10, 8))
    params = nn.unbox(layer.init(jax.random.key(0), x)["params"])
    table = params["pos_embedding"]
    assert table.shape == (1, 50, 8)  # the stored grid's, whatever the input's
    out = layer.apply({"params": params}, x)
    np.testing.assert_array_equal(out[:, 0], jnp.broadcast_to(table[0, 0], (2, 8)))  # CLS's entry kept
    np.testing.assert_allclose(out[0, 1:], posemb.interpolate_table(table, (7, 7), (3, 3), 1)[0, 1:])
    # A table constant over the grid stays constant; the same grid is the identity.
    flat = jnp.concatenate([table[:, :1], jnp.full((1, 49, 8), 0.25)], axis=1)
    np.testing.assert_allclose(posemb.interpolate_table(flat, (7, 7), (4, 4), 1)[0, 1:], 0.25, rtol=1e-6)
    assert posemb.interpolate_table(table, (7, 7), (7, 7), 1) is table
