"""Every figure and table, for a tiny ViT; the ones that do not apply are skipped with a reason."""
import argparse
import csv
import json
import os
import re

import ml_collections
import numpy as np
import pytest

from vitjax.analysis import run
from vitjax.checkpoints import locations, reader
from vitjax import config_compare
from tests.analysis import tiny

ALL = {"posemb_similarity", "attention_distance", "attention_maps", "filter_pca", "cls_segmentation"}
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


def _by_model(rows):
    return {name: [r for r in rows if r["model"] == name] for name in {r["model"] for r in rows}}


def test_every_figure_for_a_tiny_vit_and_its_init_control(tmp_path):
    model, params = tiny.vit()
    init = tiny.random_params(model, seed=1)
    result = run.analyze(model, params, tiny.images(3), str(tmp_path), init_params=init, num_show=2)
    assert set(result["written"]) == ALL and result["skipped"] == {}
    _check_files(result)
    posemb_rows = _by_model(_csv(tmp_path / "posemb_similarity.csv"))
    assert {name: len(rows) for name, rows in posemb_rows.items()} == {"trained": 256, "init": 256}  # 4x4 grid
    distance = _by_model(_csv(tmp_path / "attention_distance.csv"))
    for name in ("trained", "init"):
        assert [(int(r["layer"]), int(r["head"])) for r in distance[name]] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert [r["mean_distance_px"] for r in distance["trained"]] != [r["mean_distance_px"] for r in distance["init"]]
    with open(tmp_path / "attention_maps.json") as f:
        maps = json.load(f)
    assert [m["model"] for m in maps["maps"]] == ["trained", "init"]
    for m in maps["maps"]:
        assert np.shape(m["rollout"]) == (2, 4, 4) and np.shape(m["cls_attention"]) == (2, 2, 4, 4)
    with open(tmp_path / "filter_pca.json") as f:
        pca = json.load(f)
    assert pca["kernel_shape"] == [4, 4, 3, 16]
    assert [m["model"] for m in pca["models"]] == ["trained", "init"]
    assert np.shape(pca["models"][0]["components"]) == (15, 4, 4, 3)  # 16 centred filters
    assert len(pca["random_gaussian"]["spectrum_mean"]) == 15
    numbers = result["numbers"]
    assert set(numbers) == ALL - {"attention_maps"}
    for key in ("trained", "init", "random_mean", "random_min", "random_max"):
        assert len(numbers["filter_pca"][key]) == 3, key  # k = 1, 4, 8
    assert len(numbers["attention_distance"]["trained"]) == len(numbers["attention_distance"]["init"]) == 2
    assert set(numbers["posemb_similarity"]["init"]) == {"neighbour", "same_row", "same_column", "other"}
    assert result["meta"]["num_images"] == 3 and result["meta"]["grid"] == [4, 4]


def test_every_imshow_is_nearest_neighbour(tmp_path, monkeypatch):
    """No figure smooths a token map or a filter into detail it does not have."""
    import matplotlib.axes
    calls = []
    original = matplotlib.axes.Axes.imshow

    def recording(self, *args, **kwargs):
        calls.append(kwargs.get("interpolation"))
        return original(self, *args, **kwargs)
    monkeypatch.setattr(matplotlib.axes.Axes, "imshow", recording)
    model, params = tiny.vit()
    run.analyze(model, params, tiny.images(2), str(tmp_path), init_params=tiny.random_params(model, seed=1),
                num_show=1)
    assert calls and set(calls) == {"nearest"}, calls


def test_sincos_gap_vit_skips_the_posemb_similarity_and_the_cls_segmentation(tmp_path):
    model, params = tiny.vit(posemb="sincos2d", pool="gap")
    result = run.analyze(model, params, tiny.images(3), str(tmp_path))
    assert set(result["written"]) == ALL - {"posemb_similarity", "cls_segmentation"}
    assert "no CLS token" in result["skipped"]["cls_segmentation"]
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


def test_swin_gets_its_patch_filters_and_a_clear_message_for_the_vit_analyses(tmp_path):
    model, params = tiny.swin()
    result = run.analyze(model, params, tiny.images(3), str(tmp_path))
    assert set(result["written"]) == {"filter_pca"}
    for name in ALL - {"filter_pca"}:
        assert "is written for the ViT" in result["skipped"][name], result["skipped"]
        assert "Swin has neither" in result["skipped"][name], result["skipped"]
    _check_files(result)


def _minimal_workdir(path, posemb="learned"):
    """A workdir as the trainer leaves it: config.json and checkpoints/<step>/state holding {'params', ...}."""
    from vitjax import rundir
    from vitjax.checkpoints.checkpointer import Checkpointer

    model_kwargs = dict(patch_size=4, width=16, depth=2, mlp_dim=32, num_heads=2, posemb=posemb)
    config = ml_collections.ConfigDict(dict(
        model_name="vit", model=model_kwargs, dtype="bfloat16",
        data=dict(name="synthetic", pp_train="value_range(-1, 1)", pp_eval="value_range(-1, 1)",
                  synthetic=dict(image_shape=list(tiny.IMAGE_SHAPE), num_classes=tiny.NUM_CLASSES))))
    os.makedirs(path)
    with open(rundir.file_path(path, rundir.CONFIG), "w") as f:
        json.dump(config_compare.config_to_dict(config), f)
    _, params = tiny.vit(posemb=posemb)
    ckpt = Checkpointer(locations.checkpoint_dir(path), async_save=False)
    ckpt.save(7, {"step": np.int32(7), "params": params}, {})
    ckpt.close()
    return str(path)


def test_workdir_and_command_line(tmp_path, capsys):
    """Checkpoint and config as the trainer writes them; test images from the data package."""
    workdir = _minimal_workdir(tmp_path / "run")
    parser = argparse.ArgumentParser()
    run.main_args(parser)
    run.run(parser.parse_args(["--workdir", workdir, "--num_images", "3", "--no_init_control"]))
    out = os.path.join(workdir, "analysis")
    printed = capsys.readouterr().out
    for name in ALL:
        assert f"{name}: {out}" in printed, printed
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    assert set(summary["written"]) == ALL and summary["meta"]["num_images"] == 3
    assert summary["meta"]["models"] == ["trained"] and summary["meta"]["init_control"] == {"skipped": "--no_init_control"}
    assert {r["model"] for r in _csv(os.path.join(out, "attention_distance.csv"))} == {"trained"}
    assert "init" not in summary["numbers"]["filter_pca"]


def test_without_images_the_other_figures_are_still_made(tmp_path, monkeypatch):
    workdir = _minimal_workdir(tmp_path / "run")

    def no_images(config, num_images):
        raise FileNotFoundError("fashion_mnist is not prepared")
    monkeypatch.setattr(run, "load_images", no_images)
    result = run.analyze_workdir(workdir, out=str(tmp_path / "figs"), num_images=4, init_control=False)
    assert set(result["written"]) == {"posemb_similarity", "filter_pca"}
    assert "fashion_mnist is not prepared" in result["skipped"]["attention_maps"]
    assert os.path.exists(tmp_path / "figs" / "summary.json")


def test_a_workdir_the_trainer_wrote(trained_tiny_run, tmp_path):
    """The whole route: a checkpoint the trainer wrote (a real TrainState), test images, the analysis of
    it and of its initialised control, every figure and both models' rows in every table.

    The run is the session's shared 2-step tiny run (tests/conftest.py), so this costs the analysis only."""
    result = run.analyze_workdir(trained_tiny_run, out=str(tmp_path / "analysis"), num_images=5)
    assert set(result["written"]) == ALL, result["skipped"]
    assert result["meta"]["num_images"] == 5 and result["meta"]["grid"] == [4, 4]
    assert result["meta"]["models"] == ["trained", "init"] and result["meta"]["init_control"]["seed"] == 0
    _check_files(result)
    assert {name: len(rows) for name, rows in _by_model(_csv(tmp_path / "analysis" / "posemb_similarity.csv")).items()} \
        == {"trained": 256, "init": 256}
    distance = _by_model(_csv(tmp_path / "analysis" / "attention_distance.csv"))
    for name in ("trained", "init"):
        assert [(int(r["layer"]), int(r["head"])) for r in distance[name]] == [(1, 1), (1, 2)]  # depth 1, 2 heads
    with open(tmp_path / "analysis" / "summary.json") as f:
        numbers = json.load(f)["numbers"]
    assert set(numbers["filter_pca"]) >= {"trained", "init", "random_mean", "random_min", "random_max"}
    assert set(numbers["attention_distance"]) >= {"trained", "init", "uniform"}
    assert set(numbers["posemb_similarity"]) >= {"trained", "init"}


def test_a_run_on_a_disk_this_user_cannot_write_is_analysed_only_into_another_out(trained_tiny_run, tmp_path,
                                                                                   monkeypatch, capsys):
    """E.g. a finished run on a read-only mount: its default out (WORKDIR/analysis) is refused, naming
    the fix, before anything is read or computed; --out elsewhere works."""
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if str(path).startswith(str(trained_tiny_run))
                        else real_access(path, mode))
    monkeypatch.setattr(reader, "read_params", lambda *a, **k: pytest.fail("read before the refusal"))
    args = argparse.Namespace(workdir=trained_tiny_run, checkpoint=None, out=None, num_images=2, init_control=False,
                              beside=())
    with pytest.raises(SystemExit, match=re.escape(f"vitjax analyze: error: the figures go to "
                                                   f"{os.path.join(trained_tiny_run, 'analysis')}, and this user "
                                                   f"cannot write in {trained_tiny_run}; pass --out")):
        run.run(args)
    monkeypatch.undo()
    run.run(argparse.Namespace(**{**vars(args), "out": str(tmp_path / "elsewhere")}))
    assert "summary: " + str(tmp_path / "elsewhere" / "summary.json") in capsys.readouterr().out


def test_the_init_control_is_the_trainers_initialisation_of_the_runs_architecture(trained_tiny_run):
    """Same architecture (every shape), different numbers from the trained ones, equal to the trainer's
    own initial state for the config's seed."""
    import jax
    from vitjax import rundir
    from vitjax.analysis import control
    from vitjax.train import trainer

    config = rundir.load_config(trained_tiny_run)
    trained = reader.read_params(trained_tiny_run)
    model = run.model_from_config(config, trained)
    init = control.initial_params(model, control.seed_of(config), tuple(config.data.synthetic.image_shape))
    assert jax.tree.map(np.shape, init) == jax.tree.map(np.shape, trained)
    control.check_same_shapes(trained, init)
    differs = jax.tree.leaves(jax.tree.map(lambda a, b: not np.allclose(a, b), trained, init))
    assert any(differs)  # two steps of training moved the parameters
    plan = trainer.plan(config)
    state = trainer.init_state(trainer.state_spec(config, plan), trainer.run_keys(config.seed)[0])
    jax.tree.map(lambda a, b: np.testing.assert_allclose(np.asarray(a), b, rtol=1e-6, atol=1e-7),
                 state.params, init)
    with pytest.raises(ValueError, match="do not match"):
        control.check_same_shapes(trained, control.initial_params(model, 0, (32, 32, 3)))


def test_a_dino_run_beside_a_supervised_run_and_its_init(trained_tiny_dino_run, trained_tiny_run, tmp_path, capsys):
    """DINO's emergent-segmentation figure as the issue asks it: the DINO run's (teacher's) CLS attention,
    the supervised ViT's beside it (--beside), and the initialised control, each scored by the Jaccard
    read-out against its random placement."""
    out = tmp_path / "analysis"
    parser = argparse.ArgumentParser()
    run.main_args(parser)
    run.run(parser.parse_args(["--workdir", trained_tiny_dino_run, "--out", str(out), "--num_images", "6",
                               "--beside", trained_tiny_run]))
    assert f"cls_segmentation: {out}" in capsys.readouterr().out
    with open(out / "summary.json") as f:
        summary = json.load(f)
    assert summary["meta"]["beside"] == [trained_tiny_run] and summary["written"].keys() >= {"cls_segmentation"}
    with open(out / "cls_segmentation.json") as f:
        scores = json.load(f)
    assert set(scores) == {"trained", "init", "beside", "note"}
    for name in ("trained", "init", "beside"):
        assert len(scores[name]["per_head"]) == len(scores[name]["per_head_permuted"]) == 2  # 2 heads
        assert 0 <= scores[name]["mean"] <= 1 and 0 < scores[name]["mask_share"] <= 1
    distance = _by_model(_csv(out / "attention_distance.csv"))
    assert set(distance) == {"trained", "init", "beside"}
    assert "beside" not in summary["numbers"]["filter_pca"]  # other runs enter the attention analyses only


def test_beside_needs_the_same_patch_grid(trained_tiny_run, tmp_path):
    model, params = tiny.vit()  # patch 4 on 16x16; the tiny run's too: make it another patch size
    other = run.Variant("beside", "other", params, model.clone(patch_size=8))
    with pytest.raises(ValueError, match="one patch grid"):
        run.analyze(model, params, tiny.images(2), str(tmp_path), beside=[other])


def test_beside_refuses_a_run_trained_on_other_images_before_drawing(trained_tiny_run):
    with pytest.raises(ValueError, match=re.escape("its parameters do not fit the analysed run's images of shape "
                                                   "(16, 16, 1)")):
        run._beside_variant(trained_tiny_run, (16, 16, 1))
    assert run._beside_variant(trained_tiny_run, (16, 16, 3)).name == run.BESIDE


def test_a_dual_encoder_is_sent_to_its_own_evaluation_before_any_checkpoint_is_read(tmp_path):
    """A contrastive run has no classifier head: the error names what scores it, not the missing head."""
    with open(tmp_path / "config.json", "w") as f:
        json.dump({"objective": "contrastive", "model_name": "dual_encoder"}, f)
    with pytest.raises(ValueError, match=re.escape(f"`vitjax eval --workdir {tmp_path} --captions`")):
        run.analyze_workdir(str(tmp_path), out=str(tmp_path / "figures"))
    with pytest.raises(ValueError, match=re.escape(f"--beside {tmp_path} is a dual encoder")):
        run._beside_variant(str(tmp_path), (16, 16, 1))
