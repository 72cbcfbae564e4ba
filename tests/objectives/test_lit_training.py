"""End to end, LiT through `vitjax train` (in this process): a tiny dual encoder whose image tower is loaded
from a tiny supervised ViT run and locked keeps that tower bit for bit over its steps while the text tower
trains; unlocked, the same tower trains; the run records what was loaded and frozen; a lock without a
source is refused before anything compiles."""
import os

import numpy as np
import pytest
from flax import traverse_util

from tests.paths import ROOT
from vitjax import cli, config as config_lib, data, models, objectives, rundir
from vitjax.checkpoints import locations, reader
from vitjax.interop import lit_init

CAPTIONS = os.path.join(ROOT, "configs", "captions")
STEPS = 6
DATA = ["--config.data.captions.canvas=16", "--config.data.synthetic.num_train=256",
        "--config.data.synthetic.num_test=64", "--config.data.synthetic.image_shape=(8, 8, 1)",
        "--config.eval_batch_size=64", "--config.warmup_steps=1", "--config.checkpoint_every_steps=2"]
SOURCE = ["--config.model.patch_size=8", "--config.model.width=16", "--config.model.depth=1",
          "--config.model.num_heads=2", "--config.model.mlp_dim=32", "--config.data.val_size=0",
          "--config.eval_every_steps=0", "--config.batch_size=32"]
DUAL = ["--config.model.image_size=16", "--config.model.patch_size=8", "--config.model.vision_width=16",
        "--config.model.vision_depth=1", "--config.model.vision_mlp_dim=32", "--config.model.vision_heads=2",
        "--config.model.text_width=16", "--config.model.text_depth=1", "--config.model.text_mlp_dim=32",
        "--config.model.text_heads=2", "--config.batch_size=32", "--config.evals.zero_shot.every_steps=0",
        "--config.model.vision_pool=tok", "--config.model.activation=gelu"]


def _train(config, workdir, flags):
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VITJAX_XLA_CPU_DEFAULTS", "0")  # no CPU device split in a process whose JAX has started
        cli.main(["train", "--config", config, "--workdir", str(workdir), *DATA, *flags])
    return rundir.read_results(str(workdir))


def _flat(path, tower):
    return traverse_util.flatten_dict(reader.read_params(path)[tower], sep="/")


def _at_step(workdir, step, tower):
    return _flat(str(locations.step_dir(locations.checkpoint_dir(str(workdir)), step)), tower)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("encoder_vit")
    _train(os.path.join(CAPTIONS, "encoder.py") + ":kind=vit,base=synthetic", workdir, [*SOURCE, "--steps", "2"])
    return str(workdir)


def _lit(workdir, source, lock: bool):
    return _train(os.path.join(CAPTIONS, f"dual_encoder.py") + f":base=synthetic,steps={STEPS}", workdir,
                  [*DUAL, f"--config.init_from={source}", f"--config.contrastive.lock_image={lock}"])


def test_a_locked_tower_stays_the_sources_to_the_bit_while_the_text_tower_trains(source, tmp_path):
    results = _lit(tmp_path, source, lock=True)
    wanted = {k: v for k, v in traverse_util.flatten_dict(reader.read_params(source), sep="/").items()
              if not k.startswith("head/")}
    for step in (2, STEPS):
        image = _at_step(tmp_path, step, lit_init.TOWER)
        assert image.keys() == wanted.keys()
        for key, value in image.items():
            np.testing.assert_array_equal(np.asarray(value), np.asarray(wanted[key]), err_msg=f"{key} at {step}")
    early, late = _at_step(tmp_path, 2, "text"), _at_step(tmp_path, STEPS, "text")
    assert any(not np.array_equal(np.asarray(early[k]), np.asarray(late[k])) for k in early)
    assert results["frozen"] == [lit_init.TOWER]
    record = rundir.read_json(str(tmp_path), lit_init.RECORD)
    assert record["init_from"] == source and record["kind"] == "vit" and record["locked"] is True
    assert record["left_out_of_source"] == ["head"] and "embedding/kernel" in record["loaded"]


def test_an_unlocked_tower_starts_from_the_source_and_trains(source, tmp_path):
    results = _lit(tmp_path, source, lock=False)
    wanted = traverse_util.flatten_dict(reader.read_params(source), sep="/")
    image = _at_step(tmp_path, STEPS, lit_init.TOWER)
    assert not np.array_equal(np.asarray(image["embedding/kernel"]), np.asarray(wanted["embedding/kernel"]))
    assert "frozen" not in results
    assert rundir.read_json(str(tmp_path), lit_init.RECORD)["locked"] is False


def test_a_lock_without_a_source_is_refused_naming_init_from():
    config = config_lib.load_config(os.path.join(CAPTIONS, "dual_encoder.py") + ":base=synthetic")
    config.contrastive.lock_image = True
    info = data.get_info(config.data)
    model = models.build(config.model_name, info.num_classes, **config.model)
    with pytest.raises(ValueError, match="contrastive.lock_image=True locks an image tower loaded by init_from: "
                                         "set --config.init_from="):
        objectives.build(config, model, info)
