"""End to end: a tiny MAE pre-trains through `vitjax train` (the CLI's main, in this process), keeps
its best checkpoint by the lowest validation reconstruction loss, resumes bit-exactly after an
interruption, fine-tunes into a ViT classifier through `init_from`, and `vitjax analyze` draws its
reconstructions."""
import json
import os
import shutil

import numpy as np
import pytest
from flax import traverse_util

from tests.train import tiny_config
from vitjax import cli, models, rundir
from vitjax.interop import pretrained
from vitjax.models import posemb
from vitjax.train import trainer
from vitjax.checkpoints import locations, reader
from vitjax import metrics_log

from tests.paths import TINY
STEPS = 20
FLAGS = ("--config.data.val_size=64", "--config.eval_every_steps=5", "--config.log_every_steps=1",
         "--config.checkpoint_every_steps=5")


def _train(workdir):
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VITJAX_XLA_CPU_DEFAULTS", "0")  # no CPU device split in a process whose JAX has started
        cli.main(["train", "--config", f"{TINY}:model=mae,steps={STEPS}", "--workdir", str(workdir), *FLAGS])
    return rundir.read_results(str(workdir))


@pytest.fixture(scope="module")
def mae_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("mae")
    return str(workdir), _train(workdir)


def _flat(tree):
    return {"/".join(path): np.asarray(leaf) for path, leaf in traverse_util.flatten_dict(tree).items()}


def _rows(workdir, key):
    return [(r["step"], r[key]) for r in metrics_log.read_metrics(workdir) if key in r]


def test_the_loss_falls_and_the_best_checkpoint_has_the_lowest_validation_loss(mae_run):
    workdir, results = mae_run
    losses = [loss for _, loss in _rows(workdir, "loss")]
    assert len(losses) == STEPS and np.mean(losses[-3:]) < 0.9 * np.mean(losses[:3]), losses
    assert len(_rows(workdir, "loss_visible")) == STEPS
    curve = _rows(workdir, "val_loss")
    assert [s for s, _ in curve] == [5, 10, 15, 20]
    lowest = min(v for _, v in curve)
    assert results["best_step"] == next(s for s, v in curve if v == lowest)
    assert results["best_val_loss"] == lowest
    assert locations.checkpoint_steps(locations.best_checkpoint_dir(workdir)) == [results["best_step"]]
    assert {"test_loss", "test_loss_at_best", "best_val_loss", "best_step", "val_size"} <= results.keys()
    assert not [k for k in results if "accuracy" in k], results  # an MAE classifies nothing
    assert _rows(workdir, "val_accuracy") == [] and results["val_size"] == 64


def test_an_interrupted_mae_run_resumes_bit_exactly(mae_run, tmp_path):
    workdir, results = mae_run
    copy = str(tmp_path / "copy")
    shutil.copytree(workdir, copy)
    os.remove(rundir.file_path(copy, rundir.RESULTS))
    for step in (15, 20):  # the run stopped after step 10's checkpoint
        shutil.rmtree(locations.step_dir(locations.checkpoint_dir(copy), step))
    resumed = _train(copy)
    assert _rows(copy, "loss") == _rows(workdir, "loss")  # the same masks and dropout, step by step
    assert _rows(copy, "val_loss") == _rows(workdir, "val_loss")  # evaluation's masks are fixed too
    assert resumed == {**results, "wall_seconds": resumed["wall_seconds"], "core_hours": resumed["core_hours"],
                       "trained_on": resumed["trained_on"]}
    assert [a["from_step"] for a in resumed["trained_on"]] == [0, 10]  # two attempts, the second from step 10
    before, after = _flat(reader.read_params(workdir)), _flat(reader.read_params(copy))
    assert before.keys() == after.keys()
    for key, value in before.items():
        np.testing.assert_array_equal(after[key], value, err_msg=key)


def test_init_from_an_mae_run_loads_its_encoder_into_a_vit_classifier(mae_run, tmp_path):
    workdir, _ = mae_run
    encoder = _flat(reader.read_params(workdir))
    config = tiny_config.get_config("steps=1")  # the MAE's encoder dimensions, a learned posemb, token pooling
    config.init_from = workdir
    config.warmup_steps = 1  # the one step's learning rate is 0: the checkpoint holds what init_from gave
    trainer.train(config, str(tmp_path / "vit"))
    vit = _flat(reader.read_params(str(tmp_path / "vit")))
    shared = sorted(k for k in vit if k.startswith(("embedding/", "cls", "Transformer/encoder")))
    assert shared and set(shared) <= set(encoder)
    for key in shared:
        np.testing.assert_array_equal(vit[key], encoder[key], err_msg=key)
    # The learned position embedding starts from MAE's fixed table (zero for CLS); the head is new.
    table = vit["Transformer/posembed_input/pos_embedding"][0]
    np.testing.assert_array_equal(table[0], 0.0)
    np.testing.assert_allclose(table[1:], posemb.sincos_2d_mae((4, 4), 32), rtol=0, atol=1e-7)
    np.testing.assert_array_equal(vit["head/kernel"], 0.0)
    assert not [k for k in vit if k.startswith(("decoder", "mask_token"))]


def test_an_exported_mae_run_loads_its_encoder_as_the_run_does(mae_run, tmp_path, capsys):
    """`vitjax export` of an MAE run keeps its decoder beside the encoder; init_from takes the encoder
    from that .npz (which outlives the run directory) exactly as from the run."""
    workdir, _ = mae_run
    out = str(tmp_path / "mae.npz")
    cli.main(["export", workdir, "--out", out])
    assert f"--config.init_from={out}" in capsys.readouterr().out
    vit = models.build("vit", 4, patch_size=4, width=32, depth=1, num_heads=2, mlp_dim=64)
    from_run = _flat(pretrained.load(workdir, vit, (16, 16, 3)))
    from_file = _flat(pretrained.load(out, vit, (16, 16, 3)))
    assert from_run.keys() == from_file.keys() and "Transformer/posembed_input/pos_embedding" in from_file
    for key, value in from_run.items():
        np.testing.assert_array_equal(from_file[key], value, err_msg=key)


def test_analyze_draws_the_runs_reconstructions(mae_run, tmp_path, capsys):
    workdir, _ = mae_run
    out = tmp_path / "analysis"
    cli.main(["analyze", "--workdir", workdir, "--out", str(out), "--num_images", "4"])
    assert "mae_reconstructions: " in capsys.readouterr().out
    with open(out / "summary.json") as f:
        summary = json.load(f)
    assert summary["written"]["mae_reconstructions"][0].endswith("mae_reconstructions.png")
    assert set(summary["numbers"]["mae_reconstructions"]) == {"trained", "init", "note"}
    # Trained for 20 steps, the MAE reconstructs the masked patches better than at its initialisation.
    assert summary["numbers"]["mae_reconstructions"]["trained"] < summary["numbers"]["mae_reconstructions"]["init"]


def test_the_few_shot_probe_reads_the_frozen_encoder_of_an_mae_run(mae_run, capsys):
    """An MAE checkpoint has no classifier head: the probe takes the encoder's CLS feature, as the
    k-NN does, rather than refusing the run."""
    workdir, _ = mae_run
    cli.main(["eval", "--workdir", workdir, "--fewshot_only", "--shots", "1,2", "--fewshot_seeds", "1",
              "--fewshot_max_test", "64"])
    with open(os.path.join(workdir, "fewshot.json")) as f:
        result = json.load(f)
    assert result["feature_dim"] == 32 and result["test_examples"] == 64  # the tiny encoder's width
    assert all(0.0 <= result[f"{k}shot"] <= 1.0 for k in (1, 2))
