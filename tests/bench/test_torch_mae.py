"""The PyTorch MAE that `vitjax bench` times beside vitjax's (vitjax/bench/torch_mae.py) does the MAE's
computation: vitjax's sin-cos table, patch order and loss on the same inputs, a mask that hides exactly
the tokens the encoder did not see, the trainable parameter count of vitjax's MAE, and a bench run that
reports the ratio. Tiny shapes; nothing is timed."""
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("timm")

from vitjax import cli, models  # noqa: E402
from vitjax.bench import timm_nets  # noqa: E402
from vitjax.bench import torch_mae  # noqa: E402
from vitjax.models.mae import mae_loss, patchify  # noqa: E402
from vitjax.models.posemb import sincos_2d_mae  # noqa: E402

from tests.paths import TINY  # noqa: E402

TINY_MAE = dict(variant=None, patch_size=4, width=16, depth=2, mlp_dim=32, num_heads=2, decoder_width=8,
                decoder_depth=1, decoder_heads=2)


def _net(norm_pix_loss=True):
    return torch_mae.build((16, 12, 3), 4, 16, 2, 2, 2.0, 8, 1, 2, 4.0, norm_pix_loss, kept=3)


def test_the_position_table_is_vitjaxs_with_a_zero_row_for_cls():
    table = torch_mae.sincos_table(32, 4, 3)
    np.testing.assert_array_equal(table[0], 0)
    np.testing.assert_allclose(table[1:], sincos_2d_mae((4, 3), 32), atol=1e-7)


@pytest.mark.parametrize("norm_pix_loss", [True, False])
def test_patch_order_and_loss_are_vitjaxs(norm_pix_loss):
    rng = np.random.default_rng(0)
    images = rng.normal(size=(2, 16, 12, 3)).astype(np.float32)
    pred = rng.normal(size=(2, 12, 48)).astype(np.float32)
    mask = (rng.uniform(size=(2, 12)) < 0.75).astype(np.float32)
    net, nchw = _net(norm_pix_loss), torch.from_numpy(images.transpose(0, 3, 1, 2).copy())
    np.testing.assert_allclose(net.patchify(nchw).numpy(), np.asarray(patchify(jnp.asarray(images), 4)), atol=1e-6)
    theirs = float(net.loss(nchw, torch.from_numpy(pred), torch.from_numpy(mask)))
    ours = float(mae_loss(jnp.asarray(images), jnp.asarray(pred), jnp.asarray(mask), 4, norm_pix_loss))
    assert theirs == pytest.approx(ours, rel=1e-5)


def test_the_mask_hides_exactly_the_tokens_the_encoder_did_not_see():
    net = _net()
    torch.manual_seed(3)
    images = torch.randn(4, 3, 16, 12)
    latent, mask, ids_restore = net.encode(images)
    assert latent.shape == (4, 1 + 3, 16) and mask.shape == (4, 12)
    assert mask.sum(dim=1).tolist() == [9.0] * 4
    kept_places = ids_restore < 3  # a token's rank in the shuffled order: the first 3 were kept
    assert torch.equal(mask == 0, kept_places)


def test_its_trainable_parameters_number_vitjaxs_maes():
    model = models.build("mae", 1, **TINY_MAE)
    params = jax.eval_shape(model.init, jax.random.key(0), jnp.zeros((1, 16, 12, 3)))["params"]
    host = jax.tree.map(lambda s: np.zeros(s.shape, s.dtype), params)
    net, info = timm_nets.build(model, (16, 12, 3), 1, params=host)
    assert info["parameter_check"]["parameters"] == sum(p.numel() for p in net.parameters())
    with pytest.raises(ValueError, match="the two networks differ"):
        timm_nets.build(models.build("mae", 1, **{**TINY_MAE, "decoder_depth": 2}), (16, 12, 3), 1, params=host)


def test_the_mae_step_is_timed_beside_the_pytorch_mae(tmp_path):
    out = tmp_path / "bench.json"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VITJAX_XLA_CPU_DEFAULTS", "0")
        cli.main(["bench", "--config", f"{TINY}:model=mae", "--config.batch_size=8", "--no_infer", "--no_pipeline",
                  "--rounds", "1", "--seconds", "0.01", "--peak_size", "64", "--out", str(out)])
    summary = json.loads(out.read_text())
    assert summary["workloads"]["timm train"]["images_per_second"] > 0
    assert summary["ratios"]["train vitjax/timm"] > 0
    assert summary["timm"]["parameter_check"]["parameters"] == summary["timm"]["params"]
