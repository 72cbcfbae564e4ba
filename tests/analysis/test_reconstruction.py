"""MAE reconstructions (vitjax/analysis/reconstruction.py): the visible patches of the pasted
reconstruction are the input's exactly, norm_pix predictions are un-normalised with each patch's own
mean and variance, and `vitjax analyze`'s section draws the figure for an MAE and its init control."""
import json
import os

import jax.numpy as jnp
import numpy as np
import pytest

from tests.analysis import tiny
from vitjax.analysis import reconstruction, run
from vitjax.models import build
from vitjax.models.mae import normalized_patches, patchify

PATCH = 4


def _mae(norm_pix_loss=True):
    model = build("mae", 1, variant=None, patch_size=PATCH, width=16, depth=1, num_heads=2, mlp_dim=32,
                  decoder_width=8, decoder_depth=1, decoder_heads=2, decoder_mlp_dim=16, mask_ratio=0.75,
                  norm_pix_loss=norm_pix_loss)
    return model, tiny.random_params(model)


def _patches(images):
    return np.asarray(patchify(jnp.asarray(images), PATCH))


@pytest.mark.parametrize("norm_pix_loss", [True, False])
def test_visible_patches_are_the_inputs_and_masked_ones_the_models(norm_pix_loss):
    model, params = _mae(norm_pix_loss)
    images = tiny.images(3)
    made = reconstruction.reconstruct(model, params, images)
    visible = made["mask"].reshape(3, -1) == 0
    assert visible.sum(axis=1).tolist() == [4, 4, 4]  # round(0.25 * 16) of a 4x4 grid
    np.testing.assert_array_equal(made["original"], images)
    pasted, predicted, original = _patches(made["pasted"]), _patches(made["prediction"]), _patches(images)
    np.testing.assert_array_equal(pasted[visible], original[visible])  # exactly the input
    np.testing.assert_array_equal(pasted[~visible], predicted[~visible])
    masked = _patches(made["masked"])
    assert np.isnan(masked[~visible]).all() and (masked[visible] == original[visible]).all()
    assert made["loss"] > 0


def test_unnormalizing_a_perfect_norm_pix_prediction_gives_the_image_back():
    images = tiny.images(2)
    perfect = normalized_patches(patchify(jnp.asarray(images), PATCH))
    np.testing.assert_allclose(reconstruction.unnormalized(perfect, images, PATCH), _patches(images), atol=1e-5)


def test_analyze_draws_the_reconstructions_of_an_mae_and_its_init_control(tmp_path):
    model, params = _mae()
    result = run.analyze(model, params, tiny.images(3), str(tmp_path), init_params=tiny.random_params(model, seed=1),
                         num_show=2)
    assert result["written"]["mae_reconstructions"] == [str(tmp_path / "mae_reconstructions.png"),
                                                        str(tmp_path / "mae_reconstructions.json")]
    with open(tmp_path / "mae_reconstructions.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with open(tmp_path / "mae_reconstructions.json") as f:
        table = json.load(f)
    assert np.shape(table["masks"]) == (2, 4, 4) and set(table["loss"]) == {"trained", "init"}
    assert table["loss"]["trained"] != table["loss"]["init"]
    assert set(result["numbers"]["mae_reconstructions"]) == {"trained", "init", "note"}
    assert "filter_pca" in result["written"]  # the patch embedding's filters apply to an MAE too
    for name in ("posemb_similarity", "attention_distance", "attention_maps"):
        assert name in result["skipped"], name
    assert os.path.getsize(tmp_path / "mae_reconstructions.png") > 0


def test_a_vit_lists_no_reconstruction_figure(tmp_path):
    model, params = tiny.vit()
    with pytest.raises(run.NotApplicable, match="reconstructions are drawn for MAE runs"):
        run.reconstruction_section(model, [run.Variant("trained", "Trained", params)], tiny.images(1), str(tmp_path))
