"""Properties of Segment Anything (vitjax/models/sam*.py) that hold whatever its weights.

Parameter counts equal the released models' (counted with jax.eval_shape: nothing allocated or compiled).
Windowed attention is checked against attention over the whole padded grid under a hand-made same-window
mask, with the relative-position terms written out pair by pair; the prompt encoder's Fourier encoding
against its formula. Outputs equal to segment-anything's: tests/interop/test_sam_weights.py.
"""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.models.compile_guard import no_compilation
from vitjax import models
from vitjax.models import sam_encoder, sam_prompt_encoder

# segment-anything 1.0's sam_model_registry models: sum of p.numel() over .parameters().
OFFICIAL_COUNTS = {"B": 93_735_472, "L": 312_342_832, "H": 641_090_608}


def _count(tree) -> int:
    return sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(tree))


def _shapes(model):
    images = jax.ShapeDtypeStruct((1, model.image_size, model.image_size, 3), jnp.float32)
    return nn.meta.unbox(jax.eval_shape(lambda x: model.init(jax.random.key(0), x), images))


@pytest.mark.parametrize("variant", list(OFFICIAL_COUNTS))
def test_parameter_counts_equal_the_released_models(variant):
    variables = _shapes(models.SAM(variant=variant))
    assert _count(variables["params"]) == OFFICIAL_COUNTS[variant]
    # The shared prompt encoder and mask decoder, as segment-anything reports them for every size.
    assert _count(variables["params"]["prompt_encoder"]) == 6_220
    assert _count(variables["params"]["mask_decoder"]) == 4_058_340
    # The Fourier matrix is a buffer in the reference, outside .parameters(): here a constant.
    assert {k: v.shape for k, v in variables["constants"]["prompt_encoder"].items()} == {"gaussian_matrix": (2, 128)}


def test_parameter_counts_equal_segment_anythings():
    """The same counts from the reference itself, built on torch's meta device (shapes only)."""
    torch = pytest.importorskip("torch")
    segment_anything = pytest.importorskip("segment_anything")
    for variant, count in OFFICIAL_COUNTS.items():
        with torch.device("meta"):
            reference = segment_anything.sam_model_registry[f"vit_{variant.lower()}"](checkpoint=None)
        assert sum(p.numel() for p in reference.parameters()) == count


def _random(shapes, seed=0, scale=0.3):
    leaves, tree = jax.tree.flatten(shapes)
    rng = np.random.RandomState(seed)
    return jax.tree.unflatten(tree, [scale * rng.standard_normal(a.shape).astype(np.float32) for a in leaves])


def _attention_by_hand(params, x, window):
    """Every token of the zero-padded grid attends to every other in its window: full attention over the
    padded grid, pairs in different windows masked out, the relative terms q . R_h[dy] + q . R_w[dx]
    written pair by pair with dy, dx the offsets inside the window; then the padding cropped."""
    _, height, width, channels = x.shape
    padded_h, padded_w = -(-height // window) * window, -(-width // window) * window
    padded = np.zeros((padded_h, padded_w, channels), np.float32)
    padded[:height, :width] = x[0]
    tokens = padded.reshape(-1, channels)
    q, k, v = (np.einsum("tc,chd->thd", tokens, params[n]["kernel"]) + params[n]["bias"]
               for n in ("query", "key", "value"))
    rows, cols = np.divmod(np.arange(padded_h * padded_w), padded_w)
    same = (rows[:, None] // window == rows[None] // window) & (cols[:, None] // window == cols[None] // window)
    dy = (rows[:, None] % window) - (rows[None] % window) + window - 1  # query - key, inside the window
    dx = (cols[:, None] % window) - (cols[None] % window) + window - 1
    rel_h, rel_w = params["rel_pos_h"][dy], params["rel_pos_w"][dx]  # [t, t, head_dim]
    scores = (np.einsum("qhd,khd->hqk", q, k) * q.shape[-1] ** -0.5
              + np.einsum("qhd,qkd->hqk", q, rel_h) + np.einsum("qhd,qkd->hqk", q, rel_w))
    scores = np.where(same, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    y = np.einsum("hqk,khd->qhd", weights, v)
    y = np.einsum("qhd,hdc->qc", y, params["out"]["kernel"]) + params["out"]["bias"]
    return y.reshape(padded_h, padded_w, channels)[:height, :width][None]


@pytest.mark.parametrize("grid,window", [((6, 6), 3), ((7, 5), 3), ((4, 4), 4)], ids=["6x6/3", "7x5/3-padded", "4x4/4"])
def test_windowed_attention_equals_full_attention_restricted_to_each_window(grid, window):
    attention = sam_encoder.RelativePositionAttention(num_heads=2)
    x = np.random.RandomState(1).standard_normal((1, *grid, 8)).astype(np.float32)
    window_shape = jax.ShapeDtypeStruct((1, window, window, 8), jnp.float32)
    params = _random(nn.meta.unbox(jax.eval_shape(attention.init, jax.random.key(0), window_shape)))["params"]
    ours = sam_encoder.windowed(lambda w: attention.apply({"params": params}, w), jnp.asarray(x), window)
    np.testing.assert_allclose(ours, _attention_by_hand(params, x, window), rtol=1e-4, atol=1e-5)


def test_global_attention_is_the_window_of_the_whole_grid():
    """A window as large as the grid is global attention, relative terms included."""
    attention = sam_encoder.RelativePositionAttention(num_heads=2)
    x = np.random.RandomState(2).standard_normal((1, 5, 5, 8)).astype(np.float32)
    params = _random(nn.meta.unbox(jax.eval_shape(attention.init, jax.random.key(0), x)))["params"]
    np.testing.assert_allclose(attention.apply({"params": params}, x), _attention_by_hand(params, x, 5),
                               rtol=1e-4, atol=1e-5)


def test_global_attention_holds_one_heads_scores_at_a_time():
    """The heads are computed one by one so that a global block at 1024x1024 (a 64x64 grid) never holds
    all heads' [4096, 4096] scores (805 MB for ViT-B). Here 8 narrow heads on that grid, 64 MiB of scores
    each: all heads at once took 16 heads' worth of temporary memory. XLA's scheduler serialises the
    heads only when their scores are this large (on a 32x32 grid it keeps ~10 alive), so the test needs
    the real grid; it only compiles."""
    attention = sam_encoder.RelativePositionAttention(num_heads=8)
    x = jax.ShapeDtypeStruct((1, 64, 64, 64), jnp.float32)
    params = nn.meta.unbox(jax.eval_shape(attention.init, jax.random.key(0), x))["params"]
    compiled = jax.jit(lambda p, x: attention.apply({"params": p}, x)).lower(params, x).compile()
    one_head_scores = 4096 * 4096 * 4
    assert compiled.memory_analysis().temp_size_in_bytes < 3 * one_head_scores


def test_relative_index_is_query_minus_key_shifted():
    assert sam_encoder.relative_index(3).tolist() == [[2, 1, 0], [3, 2, 1], [4, 3, 2]]


def _prompt_encoder():
    encoder = sam_prompt_encoder.PromptEncoder(width=8, grid=(3, 4), image_size=(48, 64), mask_in_chans=4)
    variables = encoder.init(jax.random.key(0), jnp.zeros((1, 2, 2)), jnp.zeros((1, 2), jnp.int32))
    return encoder, variables


def test_point_encoding_is_the_random_fourier_formula():
    """(x, y) in pixels -> p = ((x + 0.5) / W, (y + 0.5) / H); [sin(2 pi (2p - 1) G), cos(...)] plus the
    label's embedding; a padding point (label -1) is the not-a-point embedding alone."""
    encoder, variables = _prompt_encoder()
    gaussian = np.asarray(variables["constants"]["gaussian_matrix"], np.float64)
    params = variables["params"]
    points = np.array([[[0.0, 0.0], [63.0, 47.0], [20.5, 7.25]]], np.float32)
    labels = np.array([[1, 0, -1]])
    ours = encoder.apply(variables, points, labels, pad=False, method="embed_points")[0]
    normalised = (points[0].astype(np.float64) + 0.5) / np.array([64.0, 48.0])
    angles = 2 * np.pi * (2 * normalised - 1) @ gaussian
    fourier = np.concatenate([np.sin(angles), np.cos(angles)], axis=-1)
    np.testing.assert_allclose(ours[0], fourier[0] + params["foreground"][0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours[1], fourier[1] + params["background"][0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours[2], params["not_a_point"][0], rtol=1e-6)


def test_image_encoding_is_the_formula_at_every_cell_centre():
    encoder, variables = _prompt_encoder()
    gaussian = np.asarray(variables["constants"]["gaussian_matrix"], np.float64)
    ours = np.asarray(encoder.apply(variables, method="image_encoding"))[0]  # [3, 4, 8]
    assert ours.shape == (3, 4, 8)
    for row in range(3):
        for col in range(4):
            angles = 2 * np.pi * (2 * np.array([(col + 0.5) / 4, (row + 0.5) / 3]) - 1) @ gaussian
            np.testing.assert_allclose(ours[row, col], np.concatenate([np.sin(angles), np.cos(angles)]),
                                       rtol=1e-5, atol=1e-5)


def test_points_without_a_box_get_one_padding_token_and_with_one_do_not():
    encoder, variables = _prompt_encoder()
    points, labels, box = jnp.zeros((2, 3, 2)), jnp.ones((2, 3), jnp.int32), jnp.array([[1.0, 2, 30, 40]] * 2)
    sparse, dense = encoder.apply(variables, points, labels)
    assert sparse.shape == (2, 4, 8) and dense.shape == (2, 3, 4, 8)
    np.testing.assert_array_equal(sparse[:, 3], np.broadcast_to(variables["params"]["not_a_point"], (2, 8)))
    assert encoder.apply(variables, points, labels, box)[0].shape == (2, 5, 8)
    assert encoder.apply(variables, None, None, box)[0].shape == (2, 2, 8)


@pytest.mark.parametrize("fields,message", [
    (dict(variant="X"), "unknown SAM variant 'X'"),
    (dict(variant=None, width=64), r"needs \['depth', 'num_heads', 'global_attn_indexes'\]"),
    (dict(image_size=1000), "multiple of patch_size=16"),
    (dict(variant=None, width=64, depth=2, num_heads=3, global_attn_indexes=(1,)), "not divisible by num_heads=3"),
    (dict(variant=None, width=64, depth=2, num_heads=2, global_attn_indexes=(2,)), r"global_attn_indexes \[2\]"),
])
def test_configurations_that_cannot_run_are_refused_before_compiling(fields, message):
    with no_compilation(), pytest.raises(ValueError, match=message):
        _shapes(models.SAM(**fields))


def test_encoder_input_of_another_size_is_refused():
    model = models.SAM(variant=None, width=16, depth=1, num_heads=1, global_attn_indexes=(), image_size=64)
    with no_compilation(), pytest.raises(ValueError, match=r"takes \[batch, 64, 64, 3\] images"):
        jax.eval_shape(model.init, jax.random.key(0), jax.ShapeDtypeStruct((1, 48, 64, 3), jnp.float32))
