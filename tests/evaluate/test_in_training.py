"""k-NN and few-shot accuracy during training (config.evals): logged on their schedule, on the validation
split where there is one, equal to what `vitjax eval` reports for the same checkpoint, and no part of what
makes a run another config."""
import json
import os

import pytest

from tests.objectives.dino_tiny import ARGS, TINY
from vitjax import cli, metrics_log, rundir

EVALS = ["--config.evals.knn.every_steps=2", "--config.evals.knn.max_train=200", "--config.evals.knn.max_test=100",
         "--config.evals.fewshot.every_steps=4", "--config.evals.fewshot.shots=(1, 5)",
         "--config.evals.fewshot.max_test=100"]


def test_a_dino_run_logs_knn_and_fewshot_on_validation_as_it_trains(tmp_path, capsys):
    workdir = str(tmp_path / "dino")  # ARGS hold out a validation split: the evaluations score it, not test
    cli.main(["train", "--config", TINY, "--workdir", workdir, *ARGS, *EVALS])
    rows = metrics_log.read_metrics(workdir)
    assert [row["step"] for row in rows if "val_knn_20_top1" in row] == [2, 4]
    fewshot = [row for row in rows if "val_fewshot_5shot" in row]
    assert [row["step"] for row in fewshot] == [4] and 0 <= fewshot[0]["val_fewshot_1shot"] <= 1
    assert not any(key.startswith(("test_knn", "test_fewshot", "val_knn_20_top5")) for row in rows for key in row)
    # Switching them off (or on, or to another schedule) does not make the run another config.
    capsys.readouterr()
    cli.main(["train", "--config", TINY, "--workdir", workdir, *ARGS])
    assert "is finished" in capsys.readouterr().out


def test_without_a_validation_split_they_score_test_images_as_vitjax_eval_does(tmp_path):
    workdir = str(tmp_path / "vit")
    cli.main(["train", "--config", "tests/train/tiny_config.py:steps=4", "--workdir", workdir,
              "--config.warmup_steps=1", *EVALS[:3]])
    logged = [row for row in metrics_log.read_metrics(workdir) if "test_knn_20_top1" in row]
    cli.main(["eval", "--workdir", workdir, "--knn_only", "--knn_max_train", "200", "--knn_max_test", "100"])
    reported = json.loads(open(os.path.join(workdir, rundir.KNN)).read())
    assert [row["step"] for row in logged] == [2, 4] and logged[-1]["test_knn_20_top1"] == reported["knn_20_top1"]


def test_a_bad_evaluation_setting_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(SystemExit, match=r"evals.knn.k=0: use k >= 1 neighbours"):
        cli.main(["train", "--config", TINY, "--workdir", str(tmp_path / "run"), "--config.evals.knn.k=0"])
    assert not (tmp_path / "run").exists()
