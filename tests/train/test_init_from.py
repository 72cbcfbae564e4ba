"""Fine-tuning end to end: `init_from` a trained run into a model with another head and image size.

The second run trains one step, the first of its warmup, whose learning rate is 0 (a learning rate of 0
for the whole run is refused at start-up), so the parameters in its checkpoint are exactly the ones
`init_from` gave it: the head re-initialised for the new classes, the position embeddings resized to
the new grid, and every other parameter bit-equal to the first run's.
"""
import jax
import numpy as np
import torch

from tests.train import tiny_config
from vitjax.train import trainer
from vitjax.checkpoints import reader

POSEMB = "Transformer/posembed_input/pos_embedding"


def _flat(tree):
    return {"/".join(str(k.key) for k in path): np.asarray(leaf)
            for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]}


def test_init_from_a_run_replaces_the_head_resizes_posemb_and_keeps_the_rest(trained_tiny_run, tmp_path):
    before = _flat(reader.read_params(trained_tiny_run))  # 16x16 images: a 4x4 grid, 4 classes

    config = tiny_config.get_config("steps=1")
    config.init_from = trained_tiny_run
    config.data.synthetic.num_classes = 6
    config.data.synthetic.image_shape = (24, 24, 3)  # a 6x6 grid of 4x4 patches
    config.warmup_steps = 1  # the one step, at the warmup's lr of 0, leaves the parameters as init_from made them
    trainer.train(config, str(tmp_path / "finetuned"))
    after = _flat(reader.read_params(str(tmp_path / "finetuned")))

    assert sorted(after) == sorted(before)
    # The head: new shape, and this model's own initialisation (zeros) rather than the trained weights.
    assert np.abs(before["head/kernel"]).max() > 0
    np.testing.assert_array_equal(after["head/kernel"], np.zeros((32, 6), np.float32))
    np.testing.assert_array_equal(after["head/bias"], np.zeros(6, np.float32))
    # Position embeddings: CLS entry kept, the 4x4 grid resized bilinearly to 6x6 (half-pixel centres,
    # no antialiasing, as the ViT paper's fine-tuning does); torch's interpolate is the reference.
    assert before[POSEMB].shape == (1, 17, 32) and after[POSEMB].shape == (1, 37, 32)
    np.testing.assert_array_equal(after[POSEMB][:, 0], before[POSEMB][:, 0])
    grid = torch.from_numpy(before[POSEMB][0, 1:].reshape(4, 4, 32)).permute(2, 0, 1)[None]
    resized = torch.nn.functional.interpolate(grid, size=(6, 6), mode="bilinear", align_corners=False,
                                              antialias=False)[0].permute(1, 2, 0).reshape(36, 32).numpy()
    np.testing.assert_allclose(after[POSEMB][0, 1:], resized, rtol=0, atol=1e-6)
    # Everything else is the trained run's, bit for bit.
    for key in sorted(set(before) - {"head/kernel", "head/bias", POSEMB}):
        np.testing.assert_array_equal(after[key], before[key], err_msg=key)


def test_a_wrong_init_from_is_refused_before_the_workdir_records_it(trained_tiny_run, tmp_path):
    import pytest
    workdir = str(tmp_path / "w")
    config = tiny_config.get_config("steps=6")
    config.init_from = str(tmp_path / "no_such_run")
    with pytest.raises(FileNotFoundError, match="init_from=.*does not exist"):
        trainer.train(config, workdir)
    assert not (tmp_path / "w").exists()  # so the corrected command is not "another config"
    config.init_from = trained_tiny_run
    trainer.train(config, workdir)


def test_a_damaged_npz_is_named_not_a_zip_traceback(trained_tiny_run, tmp_path):
    import pytest
    from vitjax.interop import npz, pretrained
    good = npz.save(str(tmp_path / "good.npz"), reader.read_params(trained_tiny_run))
    data = bytearray(open(good, "rb").read())
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="cut.npz' is not a readable .npz archive.*export or download it again"):
        pretrained.check(str(tmp_path / "cut.npz"))
    # One flipped byte inside the first array's data: the archive opens, its CRC fails when read.
    offset = data.index(b"\x93NUMPY") + 200
    data[offset] ^= 0xFF
    (tmp_path / "flipped.npz").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="flipped.npz' is not a readable .npz archive"):
        npz.read(str(tmp_path / "flipped.npz"))
