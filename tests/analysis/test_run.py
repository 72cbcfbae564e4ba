"""Every figure and table, for a tiny ViT; the ones that do not apply are skipped with a reason."""
import argparse
import csv
import json
import os

import ml_collections
import numpy as np

from vitjax.analysis import run
from tests.analysis import tiny

ALL = {"posemb_similarity", "attention_distance", "attention_maps", "filter_pca"}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _check_files(result):
    for paths in result["written"].values():
        for path in paths:
            assert os.path.getsize(path) > 0, path
            if path.endswith(".png"):
                with open(path, "rb") as f:
                    assert f.read(8) == PNG_MAGIC, path


def _csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_every_figure_for_a_tiny_vit(tmp_path):
    model, params = tiny.vit()
    result = run.analyze(model, params, tiny.images(3), str(tmp_path), num_show=2)
    assert set(result["written"]) == ALL and result["skipped"] == {}
    _check_files(result)
    assert len(_csv(tmp_path / "posemb_similarity.csv")) == 16 * 16  # 4x4 grid, every pair
    distance = _csv(tmp_path / "attention_distance.csv")
    assert [(int(r["layer"]), int(r["head"])) for r in distance] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    with open(tmp_path / "attention_maps.json") as f:
        maps = json.load(f)
    assert np.shape(maps["rollout"]) == (2, 4, 4) and np.shape(maps["cls_attention"]) == (2, 2, 4, 4)
    with open(tmp_path / "filter_pca.json") as f:
        pca = json.load(f)
    assert pca["kernel_shape"] == [4, 4, 3, 16] and np.shape(pca["components"]) == (15, 4, 4, 3)  # 16 centred filters
    assert result["meta"]["num_images"] == 3 and result["meta"]["grid"] == [4, 4]


def test_sincos_vit_skips_only_the_posemb_similarity(tmp_path):
    model, params = tiny.vit(posemb="sincos2d", pool="gap")
    result = run.analyze(model, params, tiny.images(3), str(tmp_path))
    assert set(result["written"]) == ALL - {"posemb_similarity"}
    assert "posemb='sincos2d'" in result["skipped"]["posemb_similarity"]
    assert "not a learned position embedding" in result["skipped"]["posemb_similarity"]
    assert not os.path.exists(tmp_path / "posemb_similarity.png")
    _check_files(result)


def test_bit_gets_a_clear_message_and_its_root_filters(tmp_path):
    model, params = tiny.bit()
    result = run.analyze(model, params, tiny.images(3), str(tmp_path))
    assert set(result["written"]) == {"filter_pca"}
    for name in ALL - {"filter_pca"}:
        assert "BiT is a ResNet with no attention layers" in result["skipped"][name], result["skipped"]
    _check_files(result)


def _minimal_workdir(path, posemb="learned"):
    """A workdir as the trainer leaves it: config.json and checkpoints/<step>/state holding {'params', ...}."""
    from vitjax import rundir
    from vitjax.train.checkpoint import Checkpointer

    model_kwargs = dict(patch_size=4, width=16, depth=2, mlp_dim=32, num_heads=2, posemb=posemb)
    config = ml_collections.ConfigDict(dict(
        model_name="vit", model=model_kwargs, dtype="bfloat16",
        data=dict(name="synthetic", pp_train="value_range(-1, 1)", pp_eval="value_range(-1, 1)",
                  synthetic=dict(image_shape=list(tiny.IMAGE_SHAPE), num_classes=tiny.NUM_CLASSES))))
    os.makedirs(path)
    with open(rundir.file_path(path, rundir.CONFIG), "w") as f:
        json.dump(rundir.config_to_dict(config), f)
    _, params = tiny.vit(posemb=posemb)
    ckpt = Checkpointer(rundir.checkpoint_dir(path), async_save=False)
    ckpt.save(7, {"step": np.int32(7), "params": params}, {})
    ckpt.close()
    return str(path)


def test_workdir_and_command_line(tmp_path, capsys):
    """Checkpoint and config as the trainer writes them; test images from the data package."""
    workdir = _minimal_workdir(tmp_path / "run")
    parser = argparse.ArgumentParser()
    run.main_args(parser)
    run.run(parser.parse_args(["--workdir", workdir, "--num_images", "3"]))
    out = os.path.join(workdir, "analysis")
    printed = capsys.readouterr().out
    for name in ALL:
        assert f"{name}: {out}" in printed, printed
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    assert set(summary["written"]) == ALL and summary["meta"]["num_images"] == 3


def test_without_images_the_other_figures_are_still_made(tmp_path, monkeypatch):
    workdir = _minimal_workdir(tmp_path / "run")

    def no_images(config, num_images):
        raise FileNotFoundError("fashion_mnist is not prepared")
    monkeypatch.setattr(run, "load_images", no_images)
    result = run.analyze_workdir(workdir, out=str(tmp_path / "figs"), num_images=4)
    assert set(result["written"]) == {"posemb_similarity", "filter_pca"}
    assert "fashion_mnist is not prepared" in result["skipped"]["attention_maps"]
    assert os.path.exists(tmp_path / "figs" / "summary.json")


def test_a_workdir_the_trainer_wrote(trained_tiny_run, tmp_path):
    """The whole route: a checkpoint the trainer wrote (a real TrainState), test images, the analysis.

    The run is the session's shared 2-step tiny run (tests/conftest.py), so this costs the analysis only."""
    result = run.analyze_workdir(trained_tiny_run, out=str(tmp_path / "analysis"), num_images=5)
    assert set(result["written"]) == ALL, result["skipped"]
    assert result["meta"]["num_images"] == 5 and result["meta"]["grid"] == [4, 4]
    _check_files(result)
    assert len(_csv(tmp_path / "analysis" / "posemb_similarity.csv")) == 16 * 16
    distance = _csv(tmp_path / "analysis" / "attention_distance.csv")
    assert [(int(r["layer"]), int(r["head"])) for r in distance] == [(1, 1), (1, 2)]  # depth 1, 2 heads
