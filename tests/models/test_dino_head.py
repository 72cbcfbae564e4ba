"""DINO's projection head and network: the parameter count from the definition (and torch's count of the
same layers), outputs equal to torch's weight-normalised layers given the same weights, the L2-normalised
bottleneck and unit prototypes, logical axis names; the DINO network on crops of other sizes."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax import models
from vitjax.models import dino_head
from vitjax.models.dino_head import DINOHead

# The official default head on ViT-S/16 features (in_dim 384): hidden 2048, bottleneck 256, K 65536.
# MLP: 384*2048 + 2048 + 2048*2048 + 2048 + 2048*256 + 256 = 5,509,376; prototypes v: 256*65536 =
# 16,777,216; the official module also holds g (65,536 values, frozen with norm_last_layer).
OFFICIAL_HEAD = dict(out_dim=65536, hidden_dim=2048, bottleneck_dim=256, num_layers=3)
MLP_PARAMS = 384 * 2048 + 2048 + 2048 * 2048 + 2048 + 2048 * 256 + 256
TRAINED_PARAMS = MLP_PARAMS + 256 * 65536


def _count(tree):
    return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(tree))


def test_official_head_parameter_count_from_its_definition():
    assert MLP_PARAMS == 5_509_376 and TRAINED_PARAMS == 22_286_592
    assert dino_head.num_params(384, **OFFICIAL_HEAD) == TRAINED_PARAMS
    assert dino_head.official_num_params(384, **OFFICIAL_HEAD) == TRAINED_PARAMS + 65536 == 22_352_128
    shapes = jax.eval_shape(lambda: DINOHead(**OFFICIAL_HEAD).init(jax.random.key(0), jnp.zeros((1, 384))))
    assert _count(shapes["params"]) == TRAINED_PARAMS
    learned_g = DINOHead(**OFFICIAL_HEAD, norm_last_layer=False)
    assert _count(jax.eval_shape(lambda: learned_g.init(jax.random.key(0), jnp.zeros((1, 384))))["params"]) \
        == 22_352_128


def _torch_head(torch, in_dim, hidden, bottleneck, out_dim):
    """The official DINOHead's layers (defaults: no batch norm, 3 layers, GELU), built in torch."""
    mlp = torch.nn.Sequential(torch.nn.Linear(in_dim, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, hidden),
                              torch.nn.GELU(), torch.nn.Linear(hidden, bottleneck))
    last = torch.nn.utils.weight_norm(torch.nn.Linear(bottleneck, out_dim, bias=False))
    last.weight_g.data.fill_(1)
    return mlp, last


@pytest.mark.filterwarnings("ignore:.*weight_norm.*:FutureWarning")  # the official code's weight_norm
def test_torch_counts_the_same_parameters_and_computes_the_same_scores():
    torch = pytest.importorskip("torch")
    mlp, last = _torch_head(torch, 384, 2048, 256, 65536)
    assert sum(p.numel() for p in [*mlp.parameters(), *last.parameters()]) == 22_352_128

    mlp, last = _torch_head(torch, 24, 32, 8, 40)  # small, for the forward pass
    head = DINOHead(out_dim=40, hidden_dim=32, bottleneck_dim=8)
    linears = [m for m in mlp if isinstance(m, torch.nn.Linear)]
    params = {f"Dense_{i}": {"kernel": jnp.asarray(m.weight.detach().numpy().T), "bias": jnp.asarray(m.bias.detach().numpy())}
              for i, m in enumerate(linears)}
    params["last_layer"] = {"kernel": jnp.asarray(last.weight_v.detach().numpy().T)}
    x = np.random.default_rng(0).normal(size=(5, 24)).astype(np.float32)
    with torch.no_grad():
        want = last(torch.nn.functional.normalize(mlp(torch.from_numpy(x)), dim=-1, p=2)).numpy()
    np.testing.assert_allclose(head.apply({"params": params}, x), want, rtol=1e-5, atol=1e-6)


def test_scores_are_cosines_to_unit_prototypes_and_parameters_are_named():
    head = DINOHead(out_dim=16, hidden_dim=32, bottleneck_dim=8)
    variables = head.init(jax.random.key(0), jnp.zeros((1, 12)))
    names = {"/".join(k.key for k in path): leaf.names for path, leaf in
             jax.tree_util.tree_flatten_with_path(variables["params"], is_leaf=lambda x: isinstance(x, nn.Partitioned))[0]}
    assert names["Dense_0/kernel"] == ("embed", "mlp") and names["last_layer/kernel"] == (None, "classes")
    params = nn.unbox(variables["params"])
    x = jax.random.normal(jax.random.key(1), (6, 12))
    scores = head.apply({"params": params}, x)
    assert scores.shape == (6, 16) and scores.dtype == jnp.float32
    assert float(jnp.max(jnp.abs(scores))) <= 1 + 1e-6  # unit bottleneck . unit prototype
    # Scaling a prototype's direction v changes nothing (g = 1): only its direction counts.
    scaled = jax.tree.map(lambda a: a, params)
    scaled["last_layer"]["kernel"] = params["last_layer"]["kernel"] * 7.0
    np.testing.assert_allclose(head.apply({"params": scaled}, x), scores, rtol=1e-5, atol=1e-6)


def test_dino_network_takes_crops_of_other_sizes_with_its_position_table_interpolated():
    model = models.build("dino", 10, patch_size=4, width=16, depth=1, num_heads=2, mlp_dim=32, head_out_dim=24,
                         head_hidden_dim=16, head_bottleneck_dim=8)
    params = nn.unbox(model.init(jax.random.key(0), jnp.zeros((1, 28, 28, 1)))["params"])
    assert "head" not in params and set(params["dino_head"]) == {"Dense_0", "Dense_1", "Dense_2", "last_layer"}
    assert params["Transformer"]["posembed_input"]["pos_embedding"].shape == (1, 50, 16)
    resampling = model.clone(posemb_table_grid=(7, 7))
    images = jax.random.normal(jax.random.key(1), (3, 28, 28, 1))
    # At the table's own grid nothing is interpolated: the same outputs as the plain model.
    np.testing.assert_array_equal(resampling.apply({"params": params}, images)[0], model.apply({"params": params}, images)[0])
    scores, embedding = resampling.apply({"params": params}, images[:, :12, :12])
    assert scores.shape == (3, 24) and embedding.shape == (3, 16)
    with pytest.raises(Exception):  # without a table grid the table cannot serve a 3x3 grid
        model.apply({"params": params}, images[:, :12, :12])
