"""`vitjax bench` where TensorFlow is not installed (a GPU image that has none): the trainer's modules load
without it, the model's step is timed on synthetic batches, and what does need it is refused before
anything compiles.

TensorFlow's absence is simulated in a subprocess by a sitecustomize that blocks its import.
"""
import json
import os
import subprocess
import sys

import pytest

from vitjax import data
from vitjax.bench import jax_model
from vitjax.config import load_config

from tests.paths import ROOT, TINY


@pytest.fixture(scope="module")
def without_tensorflow(tmp_path_factory):
    """An environment whose Python processes cannot import tensorflow or tensorflow_datasets."""
    site = tmp_path_factory.mktemp("no_tensorflow")
    (site / "sitecustomize.py").write_text(
        "import sys\nsys.modules['tensorflow'] = None\nsys.modules['tensorflow_datasets'] = None\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), ROOT]), "VITJAX_CPU_DEVICES": "1"}


def _python(code, env):
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT)


def test_the_trainer_and_the_bench_import_without_tensorflow():
    code = ("import sys, vitjax.train.trainer, vitjax.bench.jax_model, vitjax.bench.run\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'tensorflow_datasets')))")
    result = _python(code, {**os.environ, "PYTHONPATH": ROOT})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_data_names_that_need_tensorflow_say_so(without_tensorflow):
    result = _python("from vitjax import data\nprint(data.tensorflow_installed())\ndata.get_info", without_tensorflow)
    assert result.stdout.strip() == "False"
    assert result.returncode != 0 and "tensorflow" in result.stderr


def _bench(env, tmp_path, *extra):
    out = tmp_path / "bench.json"
    command = [sys.executable, "-m", "vitjax", "bench", "--config", TINY, "--config.batch_size=8", "--rounds", "2",
               "--seconds", "0.02", "--no_timm", "--out", str(out), *extra]
    return subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT, timeout=600), out


def test_bench_times_the_step_without_tensorflow(without_tensorflow, tmp_path):
    result, out = _bench(without_tensorflow, tmp_path, "--no_pipeline", "--no_infer")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(out.read_text())
    assert summary["jax"]["image_shape"] == [16, 16, 3]
    assert "vitjax train" in summary["workloads"] and "vitjax infer" not in summary["workloads"]


@pytest.mark.parametrize("extra", [(), ("--no_pipeline", "--profile", "unused_dir")])
def test_what_needs_tensorflow_is_refused_before_compiling(without_tensorflow, tmp_path, extra):
    result, out = _bench(without_tensorflow, tmp_path, *extra)
    assert result.returncode != 0 and not out.exists()
    assert "need" in result.stderr and "TensorFlow, which is not installed" in result.stderr
    assert "compiling" not in result.stderr + result.stdout


def test_synthetic_data_info_without_tensorflow_matches_get_info(monkeypatch):
    cfg = load_config(TINY).data
    read = data.get_info(cfg)
    monkeypatch.setattr(data, "tensorflow_installed", lambda: False)
    assert jax_model.data_info(cfg) == read


@pytest.mark.parametrize("change, named", [({"pp_train": "value_range(0, 1)|resize(8)"}, "data.pp_train"),
                                           ({"name": "fashion_mnist"}, "synthetic data"),
                                           ({"val_size": 16}, "val_size")])
def test_data_the_bench_cannot_shape_without_tensorflow_is_refused(monkeypatch, change, named):
    cfg = load_config(TINY).data
    cfg.update(change)
    monkeypatch.setattr(data, "tensorflow_installed", lambda: False)
    with pytest.raises(ValueError, match=named):
        jax_model.data_info(cfg)
