"""End to end: a tiny SAM trains through `vitjax train` (the CLI's main, in this process) on synthetic
canvases with finite losses, reports its mIoU after clicks and for a box on seen and unseen classes,
resumes bit-exactly after an interruption, starts its encoder from an MAE run (init_from), and is drawn
answering prompts by `vitjax analyze`; and configs
pairing SAM's objective with another model (or the reverse), SAM with data that has no masks, or an
init_from source that does not fit, are refused before anything compiles."""
import json
import math
import os
import shutil

import numpy as np
import pytest

from tests.objectives import sam_tiny_config
from tests.paths import TINY
from vitjax import cli, config_compare, metrics_log, models, rundir
from vitjax.analysis import run as analysis_run, sam_prompts
from vitjax.checkpoints import locations, reader
from vitjax.objectives import sam
from vitjax.train import checks, trainer

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sam_tiny_config.py")
PROMPTS = ("1click", "2click", "box")


def _train(workdir):
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VITJAX_XLA_CPU_DEFAULTS", "0")  # no CPU device split in a process whose JAX has started
        cli.main(["train", "--config", CONFIG, "--workdir", str(workdir)])
    return rundir.read_results(str(workdir))


def _rows(workdir, key):
    return {row["step"]: row[key] for row in metrics_log.read_metrics(str(workdir)) if key in row}


@pytest.fixture(scope="module")
def sam_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("sam")
    return workdir, _train(workdir)


def test_a_tiny_sam_trains_with_finite_losses_and_reports_miou_by_prompt_and_class_group(sam_run):
    workdir, results = sam_run
    losses = _rows(workdir, "loss")
    assert sorted(losses) == list(range(1, 7)) and all(math.isfinite(v) for v in losses.values())
    assert all(math.isfinite(v) for v in _rows(workdir, "iou_loss").values())
    for group in ("seen", "unseen"):
        for prompt in PROMPTS:
            assert 0.0 <= results[f"test_miou_{group}_{prompt}"] <= 1.0


def test_an_interrupted_sam_run_resumes_bit_exactly(sam_run, tmp_path):
    workdir, results = sam_run
    copy = tmp_path / "copy"
    shutil.copytree(workdir, copy)
    os.remove(rundir.file_path(str(copy), rundir.RESULTS))
    for step in (4, 6):  # the run stopped after step 2's checkpoint
        shutil.rmtree(locations.step_dir(locations.checkpoint_dir(str(copy)), step))
    resumed = _train(copy)
    assert _rows(copy, "loss") == _rows(workdir, "loss")  # the same prompts and clicks, step by step
    assert {k: v for k, v in resumed.items() if k.startswith("test_")} == {
        k: v for k, v in results.items() if k.startswith("test_")}
    before, after = (config_compare.flatten(reader.read_params(str(w))) for w in (workdir, copy))
    assert before.keys() == after.keys()
    for key, value in before.items():
        np.testing.assert_array_equal(np.asarray(after[key]), np.asarray(value), err_msg=key)


def test_analyze_draws_a_sam_runs_answers_beside_its_init_and_another_checkpoint(sam_run, tmp_path, capsys):
    """sam_prompts.png / .json: seen and unseen canvases, every model given the same first point and box,
    later clicks its own; the ViT's figures skipped with the reason."""
    workdir, _ = sam_run
    earlier = locations.step_dir(locations.checkpoint_dir(str(workdir)), 2)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VITJAX_XLA_CPU_DEFAULTS", "0")
        cli.main(["analyze", "--workdir", str(workdir), "--out", str(tmp_path), "--num_images", "4",
                  "--beside", earlier])
    assert "sam_prompts: " in capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["meta"]["models"] == ["trained", "init", "beside"] and summary["meta"]["beside"] == [earlier]
    assert "attention_maps" in summary["skipped"] and (tmp_path / "sam_prompts.png").stat().st_size > 0
    drawn = json.loads((tmp_path / "sam_prompts.json").read_text())
    assert [row.split(":")[0] for row in drawn["rows"]] == ["seen", "seen", "unseen", "unseen"]
    assert drawn["labels"]["beside"].endswith(", step 2") and len(set(drawn["labels"].values())) == 3
    panels = drawn["panels"]
    assert set(panels["trained"]) == {"1click", "2click", "box"}  # the config's eval_clicks, then the box
    for model in ("init", "beside"):
        for row in range(4):
            assert panels[model]["1click"][row]["clicks"] == panels["trained"]["1click"][row]["clicks"]
            assert panels[model]["box"][row]["box"] == panels["trained"]["box"][row]["box"]
    for model, means in summary["numbers"]["sam_prompts"].items():
        if model != "note":
            assert means["box"] == pytest.approx(np.mean([p["iou"] for p in panels[model]["box"]]), abs=1e-4)


def test_the_drawn_prompts_and_ious_are_those_of_the_target(sam_run):
    """The first click lies on its item, the box is the item's bounding box, the second click is on the
    first answer's error, and each IoU is the shown mask's against the item's visible mask."""
    workdir, _ = sam_run
    config = rundir.load_config(str(workdir))
    images, _ = analysis_run.load_examples(config, 4)
    model = models.build("sam", 1, **config.model.to_dict())
    found = sam_prompts.answers(model, reader.read_params(str(workdir)), images, 2, (1, 2))
    targets = found["targets"]
    ids = np.round(images[..., 1])
    for i, target in enumerate(targets):
        np.testing.assert_array_equal(target, ids[i] == i % 2 + 1)  # canvas i's item i mod items
        assert target.any()
        (x, y), = found["prompts"]["1click"]["points"][i]
        assert found["prompts"]["1click"]["labels"][i, 0] == 1 and target[int(y), int(x)]
        rows, cols = np.nonzero(target)
        np.testing.assert_array_equal(found["prompts"]["box"]["box"][i],
                                      [cols.min(), rows.min(), cols.max(), rows.max()])
        (x2, y2), label2 = found["prompts"]["2click"]["points"][i, 1], found["prompts"]["2click"]["labels"][i, 1]
        first = found["prompts"]["1click"]["mask"][i]
        if label2 >= 0:  # a click where the first answer was wrong: missed (positive) or spilled over (negative)
            assert first[int(y2), int(x2)] != target[int(y2), int(x2)] and label2 == int(target[int(y2), int(x2)])
        for name in ("1click", "2click", "box"):
            mask = found["prompts"][name]["mask"][i]
            union = np.logical_or(mask, target).sum()
            assert found["prompts"][name]["iou"][i] == pytest.approx(np.logical_and(mask, target).sum() / union,
                                                                     abs=1e-6)


@pytest.mark.parametrize("model_name, objective, message", [
    ("vit", "sam", "objective='sam' trains model_name='sam', got model_name='vit': set --config.model_name=sam "
                   "(with its model settings, e.g. configs/sam/tiny.py)"),
    ("sam", "supervised", "model_name='sam' is trained by objective='sam' only, got objective='supervised': "
                          "set --config.objective=sam"),
])
def test_sams_objective_and_model_go_together_or_are_refused(model_name, objective, message):
    config = sam_tiny_config.get_config()
    config.model_name, config.objective = model_name, objective
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        checks.config(config)
    with pytest.raises(ValueError, match="set --config"):
        trainer.plan(config)  # plan validates first of all


@pytest.mark.parametrize("change, message", [
    (dict(pp_train="value_range(-1, 1)"), "set data.pp_train='' and data.pp_eval=''"),
    (dict(name="synthetic"), "objective='sam' trains on data.name='canvases'"),
])
def test_sam_is_refused_data_without_masks_before_compiling(change, message):
    config = sam_tiny_config.get_config()
    config.data.update(change)
    if "name" in change:
        config.data.synthetic.image_shape = (32, 32, 3)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        trainer.plan(config)


# An MAE of the tiny SAM's encoder (width 16, depth 2, 2 heads, MLP 64, patch 8) on 16x16 RGB images.
MAE_FLAGS = ("--config.model.patch_size=8", "--config.model.width=16", "--config.model.depth=2",
             "--config.model.num_heads=2", "--config.model.mlp_dim=64", "--config.warmup_steps=1",
             "--config.checkpoint_every_steps=2")


@pytest.fixture(scope="module")
def mae_source(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("mae_source"))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VITJAX_XLA_CPU_DEFAULTS", "0")
        cli.main(["train", "--config", f"{TINY}:model=mae,steps=2", "--workdir", workdir, *MAE_FLAGS])
    return workdir


def test_a_tiny_sam_starts_its_encoder_from_an_mae_run_and_trains(mae_source, tmp_path, capsys):
    workdir = tmp_path / "sam_from_mae"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VITJAX_XLA_CPU_DEFAULTS", "0")
        cli.main(["train", "--config", f"{CONFIG}:steps=3", "--workdir", str(workdir),
                  f"--config.init_from={mae_source}"])
    assert "init_from " in capsys.readouterr().out  # the log line: what was loaded, what stayed at init
    losses = _rows(workdir, "loss")
    assert sorted(losses) == [1, 2, 3] and all(math.isfinite(v) for v in losses.values())
    record = rundir.read_json(str(workdir), sam.INIT_RECORD)
    assert record["kind"] == "mae" and "image_encoder/block_1/attention/query/kernel" in record["loaded"]
    assert "image_encoder/neck/conv_0/kernel" in record["at_init"] and "decoder_pred/kernel" in record["unused_source"]


def test_a_sam_whose_encoder_does_not_fit_the_source_is_refused_at_planning(mae_source):
    config = sam_tiny_config.get_config()
    config.init_from = mae_source
    config.model.width = 32
    with pytest.raises(ValueError, match=r"width 16 against SAM's 32.*set --config.model.width=16"):
        trainer.plan(config)
    config.model.width = 16
    config.sam.init_pixel_range = (0.0, 1.0)
    with pytest.raises(ValueError, match=r"saw pixels in \(-1, 1\).*--config.sam.init_pixel_range='\(-1, 1\)'"):
        trainer.plan(config)
