"""Properties of the Swin Transformer that hold whatever its weights (vitjax/models/swin.py).

Each is checked against a definition written here independently of the model's code: shifted-window
attention against attention over the whole map under a hand-made mask, window locality by changing one
token, the relative-position index and the patch-merging order against the reference's definitions.
timm's outputs and parameter counts: tests/interop/test_timm_swin.py, tests/models/test_param_counts.py.
"""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.models.compile_guard import no_compilation
from tests.parallel import fake_devices
from vitjax import models
from vitjax.models import swin


def _init(module, *args, seed=0):
    variables = jax.eval_shape(lambda key: module.init(key, *args), jax.random.key(seed))  # shapes only
    # Random values for every leaf (norm scales and the bias table too), so no term is left at 0 or 1.
    leaves, tree = jax.tree.flatten(nn.meta.unbox(variables))
    rng = np.random.RandomState(seed)
    return jax.tree.unflatten(tree, [0.3 * rng.standard_normal(a.shape).astype(np.float32) for a in leaves])


def _map(height, width, channels, seed=0):
    return np.random.RandomState(100 + seed).standard_normal((1, height, width, channels)).astype(np.float32)


def test_relative_position_index_equals_hand_built_table():
    # A 2x2 window: tokens (0,0), (0,1), (1,0), (1,1); offset (dy, dx) = query - key -> (dy+1)*3 + (dx+1).
    assert swin.relative_position_index(2, 2).tolist() == [[4, 3, 1, 0],
                                                           [5, 4, 2, 1],
                                                           [7, 6, 4, 3],
                                                           [8, 7, 5, 4]]
    # A non-square 3x2 window, by the definition, pair by pair.
    tokens = [(r, c) for r in range(3) for c in range(2)]
    table = [[(qr - kr + 2) * 3 + (qc - kc + 1) for kr, kc in tokens] for qr, qc in tokens]
    assert swin.relative_position_index(3, 2).tolist() == table


def _masked_full_attention(params, x, window, shift):
    """Attention of every token of the map to every other, computed without windows: a pair may attend
    iff it lies in one window of the rolled map and the roll did not bring it together across an edge
    (its original offset is smaller than the window), with the bias of its original offset."""
    _, height, width, channels = x.shape
    tokens = x.reshape(height * width, channels)
    q, k, v = (jnp.einsum("tc,chd->thd", tokens, params[n]["kernel"]) + params[n]["bias"]
               for n in ("query", "key", "value"))
    rows, cols = np.divmod(np.arange(height * width), width)
    rolled_rows, rolled_cols = (rows - shift[0]) % height, (cols - shift[1]) % width
    same_window = ((rolled_rows[:, None] // window[0] == rolled_rows[None] // window[0])
                   & (rolled_cols[:, None] // window[1] == rolled_cols[None] // window[1]))
    dy, dx = rows[:, None] - rows[None], cols[:, None] - cols[None]
    allowed = same_window & (np.abs(dy) < window[0]) & (np.abs(dx) < window[1])
    offset_row = np.where(allowed, (dy + window[0] - 1) * (2 * window[1] - 1) + dx + window[1] - 1, 0)
    bias = params["relative_position_bias_table"][offset_row]  # [t, t, heads]
    scores = jnp.einsum("qhd,khd->hqk", q, k) * q.shape[-1] ** -0.5 + bias.transpose(2, 0, 1)
    weights = jax.nn.softmax(jnp.where(allowed, scores, -jnp.inf), axis=-1)
    out = jnp.einsum("hqk,khd->qhd", weights, v)
    out = jnp.einsum("qhd,hdc->qc", out, params["out"]["kernel"]) + params["out"]["bias"]
    return out.reshape(1, height, width, channels)


@pytest.mark.parametrize("window,shift", [((4, 4), (2, 2)), ((4, 4), (0, 0)), ((4, 2), (2, 1))])
def test_shifted_window_attention_equals_masked_full_attention(window, shift):
    attention = swin.WindowAttention(num_heads=2, window=window, shift=shift)
    x = _map(8, 8, 8)
    windows = swin.to_windows(x, window, shift)
    params = _init(attention, windows, (8, 8))["params"]
    out = jax.jit(attention.apply, static_argnums=2)({"params": params}, windows, (8, 8))
    ours = swin.from_windows(out, window, shift, 8, 8)
    reference = jax.jit(_masked_full_attention, static_argnums=(2, 3))(params, x, window, shift)
    np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-5)


def _changed_by_one_token(shift, token):
    """Which positions of a block's output change when the input at `token` does (8x8 map, window 4)."""
    block = swin.SwinBlock(num_heads=2, window=(4, 4), shift=shift, mlp_dim=16)
    x = _map(8, 8, 8)
    params = _init(block, swin.to_windows(x, (4, 4), shift), (8, 8))
    # Not a constant across channels: the block's LayerNorms would remove it.
    other = x.copy()
    other[0, token[0], token[1]] += np.linspace(-1.0, 1.0, 8, dtype=np.float32)

    @jax.jit
    def apply(image):  # the block on its windows, read back as a map
        out = block.apply(params, swin.to_windows(image, (4, 4), shift), (8, 8))
        return swin.from_windows(out, (4, 4), shift, 8, 8)

    return np.abs(np.asarray(apply(other) - apply(x)))[0].max(-1) > 0


def test_one_token_changes_only_its_window_in_a_regular_block():
    expected = np.zeros((8, 8), bool)
    expected[4:8, 0:4] = True  # (5, 2) lies in the window of rows 4-7, columns 0-3
    assert (_changed_by_one_token((0, 0), (5, 2)) == expected).all()


def test_one_token_at_the_corner_of_a_shifted_block_reaches_only_its_region():
    # Shifted by 2, the window holding (0, 0) also holds the map's far edges, which the mask keeps apart:
    # (0, 0) only reaches the 2x2 corner it shares a region with.
    expected = np.zeros((8, 8), bool)
    expected[0:2, 0:2] = True
    assert (_changed_by_one_token((2, 2), (0, 0)) == expected).all()


@pytest.mark.parametrize("shift", [(2, 2), (2, 0), (0, 0)])
def test_a_stage_keeping_its_tokens_in_windows_equals_blocks_each_on_the_map(shift):
    # Four blocks (regular, shifted, regular, shifted): the stage moves tokens between the blocks' windows
    # directly; here every block partitions the map into its own windows and merges them back.
    stage = swin.SwinStage(num_heads=2, plan=swin.StagePlan((8, 8), (4, 4), shift), mlp_ratio=2.0,
                           downsample=False, droppath_rates=(0.0,) * 4)
    x = _map(8, 8, 8)
    params = _init(stage, x)["params"]
    ours = jax.jit(stage.apply)({"params": params}, x)

    @jax.jit
    def block_by_block(image):
        for j in range(4):
            block_shift = shift if j % 2 else (0, 0)
            block = swin.SwinBlock(num_heads=2, window=(4, 4), shift=block_shift, mlp_dim=16)
            out = block.apply({"params": params[f"block_{j}"]}, swin.to_windows(image, (4, 4), block_shift), (8, 8))
            image = swin.from_windows(out, (4, 4), block_shift, 8, 8)
        return image

    np.testing.assert_allclose(ours, block_by_block(x), rtol=1e-6, atol=1e-6)


def test_patch_merging_concatenates_neighbours_in_the_references_order():
    x = np.arange(1 * 4 * 6 * 3, dtype=np.float32).reshape(1, 4, 6, 3)
    # The official PatchMerging: x0 = x[:, 0::2, 0::2], x1 = x[:, 1::2, 0::2], x2 = x[:, 0::2, 1::2],
    # x3 = x[:, 1::2, 1::2], concatenated on channels.
    reference = np.concatenate([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
    np.testing.assert_array_equal(swin.merge_neighbours(jnp.asarray(x)), reference)


def test_stages_shrink_the_window_and_drop_the_shift_where_the_map_is_small():
    model = models.Swin(10, variant=None, patch_size=2, embed_dim=16, depths=(2, 2, 2), num_heads=(2, 2, 2),
                        window_size=4)
    assert model.stages(32, 16) == [swin.StagePlan((16, 8), (4, 4), (2, 2)),
                                    swin.StagePlan((8, 4), (4, 4), (2, 0)),
                                    swin.StagePlan((4, 2), (4, 2), (0, 0))]


@pytest.mark.parametrize("kwargs,size,message", [
    (dict(variant="T"), 32, r"image height 32 .* Valid sizes near 32: \[224, 448, 672, 896\]"),
    # 30 / 2 = 15: larger than the window 7 and not a multiple of it.
    (dict(variant=None, patch_size=2, embed_dim=16, depths=(2, 2), num_heads=(2, 2)), 30,
     r"Valid sizes near 30: \[4, 8, 12, 28, 56, 84, 112, 140\]"),
    # 28 / 4 = 7 cannot halve for the second stage.
    (dict(variant=None, patch_size=4, embed_dim=16, depths=(2, 2), num_heads=(2, 2)), 28, r"\[8, 16, 24, 56"),
    (dict(variant="T"), 225, r"multiple of the patch size.* \[224, 448, 672, 896, 1120\]"),
])
def test_a_size_that_does_not_divide_raises_naming_valid_sizes_before_compiling(kwargs, size, message):
    model = models.Swin(10, **kwargs)
    with no_compilation(), pytest.raises(ValueError, match=message):
        jax.eval_shape(lambda x: model.init(jax.random.key(0), x),
                       jax.ShapeDtypeStruct((1, size, size, 3), jnp.float32))


def test_droppath_is_off_at_eval_and_on_in_training():
    kwargs = dict(variant=None, patch_size=2, embed_dim=16, depths=(2, 2), num_heads=(2, 2), window_size=4)
    x = _map(16, 16, 3)
    plain, dropping = models.Swin(10, **kwargs), models.Swin(10, droppath_rate=0.5, **kwargs)
    params = _init(plain, x)
    reference = jax.jit(plain.apply)(params, x)
    apply = jax.jit(dropping.apply, static_argnames="train")
    for seed in (1, 2):
        rngs = {"dropout": jax.random.key(seed)}
        np.testing.assert_array_equal(apply(params, x, train=False, rngs=rngs), reference)
    trained = apply(params, x, train=True, rngs={"dropout": jax.random.key(1)})
    assert not np.allclose(trained, reference)


def test_every_parameter_has_logical_axis_names_where_it_is_large():
    model = models.Swin(10, variant=None, patch_size=2, embed_dim=16, depths=(2, 2), num_heads=(2, 4),
                        window_size=4)
    boxed = jax.eval_shape(lambda x: model.init(jax.random.key(0), x),
                           jax.ShapeDtypeStruct((1, 16, 16, 3), jnp.float32))["params"]
    leaves = jax.tree_util.tree_flatten_with_path(boxed, is_leaf=lambda x: isinstance(x, nn.Partitioned))[0]
    unnamed = [jax.tree_util.keystr(path) for path, leaf in leaves
               if not isinstance(leaf, nn.Partitioned) and leaf.ndim > 1 and "head" not in jax.tree_util.keystr(path)]
    assert unnamed == []
    table = boxed["stage_1"]["block_0"]["attention"]["relative_position_bias_table"]
    assert table.names == (None, "heads") and table.value.shape == (7 * 7, 4)


def test_on_rows_gives_the_products_of_the_unflattened_tensor():
    x = jnp.asarray(np.random.RandomState(0).standard_normal((2, 3, 5, 4, 6)).astype(np.float32))
    kernel = jnp.asarray(np.random.RandomState(1).standard_normal((4, 6, 7)).astype(np.float32))
    merged = swin.on_rows(lambda rows: jnp.einsum("thk,hkd->td", rows, kernel), x, kept=2)
    np.testing.assert_allclose(merged, jnp.einsum("...hk,hkd->...d", x, kernel), rtol=1e-5, atol=1e-5)
    assert merged.shape == (2, 3, 5, 7)
    parts = swin.on_rows(lambda rows: [rows[:, :, :2], rows.sum(-1)], x, kept=2)  # several outputs, each viewed back
    assert [p.shape for p in parts] == [(2, 3, 5, 4, 2), (2, 3, 5, 4)]
    np.testing.assert_array_equal(parts[1], x.sum(-1))


_UNDER_TENSOR_PARALLELISM = """
import json, jax, jax.numpy as jnp, flax.linen as nn
from vitjax import parallel
from vitjax.models.swin import Swin
model = Swin(num_classes=10, patch_size=2, window_size=7, embed_dim=32, depths=(2, 2), num_heads=(2, 4), variant=None)
x = jax.random.normal(jax.random.key(0), (8, 28, 28, 1))
params = nn.unbox(model.init(jax.random.key(1), x))["params"]
loss = lambda p: jnp.mean(model.apply({"params": p}, x) ** 2)
logits, grads = model.apply({"params": params}, x), jax.grad(loss)(params)
with jax.set_mesh(parallel.make_mesh({"data": 2, "fsdp": 1, "model": 2, "dcn_data": 1})), \
        nn.logical_axis_rules(parallel.rules_for("fsdp_tp")):
    logits_tp, grads_tp = jax.jit(lambda p: model.apply({"params": p}, x))(params), jax.jit(jax.grad(loss))(params)
print(json.dumps({"devices": jax.device_count(), "logits": float(jnp.max(jnp.abs(logits_tp - logits))),
                  "grads": max(float(jnp.max(jnp.abs(a - b))) for a, b in
                               zip(jax.tree.leaves(grads_tp), jax.tree.leaves(grads)))}))
"""


def test_rows_keep_their_logical_names_under_tensor_parallelism():
    """The MLP on Swin's [rows, c] view names its axes ('batch', 'mlp'): a data x model mesh trains as one device."""
    result = fake_devices.run(_UNDER_TENSOR_PARALLELISM, devices=4)
    assert result["logits"] < 1e-5 and result["grads"] < 1e-5, result
