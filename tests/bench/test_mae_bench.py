"""`vitjax bench` times an MAE's train step beside the same ViT's supervised step (--beside): on tiny
shapes only, that it runs, writes the JSON with both workloads and their ratio, and that the bench
configs pair an MAE with the ViT of the same encoder. No speed is checked: a test times nothing."""
import json
import os

import pytest

from vitjax import cli
from vitjax.config import load_config
from vitjax.train import trainer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = os.path.join(ROOT, "tests", "train", "tiny_config.py")


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
