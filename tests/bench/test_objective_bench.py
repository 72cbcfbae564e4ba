"""`vitjax bench` times an MAE's or a DINO's train step beside the same ViT's supervised step (--beside):
on tiny shapes only, that it runs, writes the JSON with both workloads and their ratio, and that the
configs the benches pair (configs/bench, configs/fashion_mnist) hold the same encoder. No speed is
checked: a test times nothing."""
import json
import os

import pytest

from vitjax import cli
from vitjax.config import load_config
from vitjax.train import trainer

from tests.paths import ROOT, TINY


def test_the_mae_step_is_timed_beside_the_vits(tmp_path):
    out = tmp_path / "bench.json"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VITJAX_XLA_CPU_DEFAULTS", "0")
        cli.main(["bench", "--config", f"{TINY}:model=mae", "--beside", TINY, "--config.batch_size=8", "--no_timm",
                  "--no_pipeline", "--rounds", "1", "--seconds", "0.01", "--peak_size", "64", "--out", str(out)])
    summary = json.loads(out.read_text())
    beside = f"vitjax train [{TINY}]"
    assert {"vitjax train", "vitjax infer", beside} <= set(summary["workloads"])
    assert summary["workloads"]["vitjax train"]["images_per_second"] > 0
    assert summary["workloads"][beside]["images_per_second"] > 0
    assert summary["ratios"][f"train vitjax/vitjax[{TINY}]"] > 0
    assert summary["model"]["description"].startswith("MAE encoder width 32 depth 1")
    assert summary["beside"][TINY]["description"].startswith("ViT width 32 depth 1")
    assert summary["beside"][TINY]["batch_size"] == 32  # as written: the --config overrides are the MAE's


def test_a_typo_in_a_beside_config_fails_before_compiling(tmp_path):
    with pytest.raises(SystemExit, match="nosuch"):
        cli.main(["bench", "--config", f"{TINY}:model=mae", "--beside", f"{TINY}:nosuch=1", "--no_timm",
                  "--out", str(tmp_path / "b.json")])


def test_the_bench_configs_pair_an_mae_with_the_vit_of_its_encoder():
    arg = "variant=B/16,batch=8"
    mae = trainer.plan(load_config(os.path.join(ROOT, "configs", "bench", f"mae.py:{arg}")))
    vit = trainer.plan(load_config(os.path.join(ROOT, "configs", "bench", f"vit.py:{arg}")))
    assert mae.model.dims() == vit.model.dims() and mae.info.image_shape == vit.info.image_shape
    assert (mae.model.decoder_width, mae.model.decoder_depth, mae.model.decoder_heads) == (512, 8, 16)
    assert type(mae.objective).__name__ == "MAE" and type(vit.objective).__name__ == "Supervised"


def test_the_dino_step_is_timed_beside_the_vits(tmp_path):
    out = tmp_path / "bench.json"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VITJAX_XLA_CPU_DEFAULTS", "0")
        cli.main(["bench", "--config", f"{TINY}:model=dino", "--beside", TINY, "--config.batch_size=8", "--no_timm",
                  "--no_infer", "--no_pipeline", "--rounds", "1", "--seconds", "0.01", "--peak_size", "64",
                  "--out", str(out)])
    summary = json.loads(out.read_text())
    beside = f"vitjax train [{TINY}]"
    assert {"vitjax train", beside} <= set(summary["workloads"])
    assert summary["ratios"][f"train vitjax/vitjax[{TINY}]"] > 0
    # tiny_config's DINO: 2 local crops of 8 px beside the 16 px global ones
    assert summary["model"]["description"].startswith("DINO backbone width 32 depth 1")
    assert "2 global crops of 16 px and 2 local of 8 px" in summary["model"]["description"]


@pytest.mark.parametrize("objective", ["mae", "dino"])
def test_the_fashion_mnist_label_free_configs_train_the_default_vits_backbone(objective):
    """experiments/bench/cpu.sh times configs/fashion_mnist/{mae,dino}.py beside vit.py: one backbone."""
    configs = os.path.join(ROOT, "configs", "fashion_mnist")
    label_free = trainer.plan(load_config(os.path.join(configs, f"{objective}.py")))
    vit = trainer.plan(load_config(os.path.join(configs, "vit.py")))
    assert label_free.model.dims() == vit.model.dims()
    assert label_free.info.image_shape == vit.info.image_shape
    assert type(label_free.objective).__name__ == objective.upper()
