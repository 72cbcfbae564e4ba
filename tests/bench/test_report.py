"""vitjax/bench/report.py's table from summaries written by hand (no benchmark runs)."""
import json
import os

import pytest

from tests.paths import ROOT
from vitjax.bench import report


def _summary(backend: str, matmul_ratio: float | None) -> dict:
    machine = {"device_kind": "cpu", "devices": 1, "backend": backend, "cpu_count": 2,
               "load_average_start": [0.1], "load_average_end": [0.2]}
    return {"config": "configs/bench/swin.py", "machine": machine, "workloads": {},
            "ratios": {"train vitjax/timm": 1.66, "matmul jax/torch": matmul_ratio}}


@pytest.mark.parametrize("backend, matmul_ratio, warned", [
    ("cpu", 2.25, True),   # the AMD host's generic oneMKL path (experiments/results/bench/swin_mkl)
    ("cpu", 0.97, False),  # the same host with oneMKL on its AVX-512 path
    ("gpu", 2.25, False),  # a GPU's matmul ratio is not about the CPU's BLAS
    ("cpu", None, False),  # --no_timm
])
def test_the_table_warns_when_torchs_blas_rather_than_the_model_sets_the_ratio(backend, matmul_ratio, warned):
    text = report.table(_summary(backend, matmul_ratio))
    assert ("torch_mkl_avx512.sh" in text) is warned
    if warned:
        assert "torch's matmul ran at 0.44x of jax's" in text


def test_the_warning_names_a_script_that_exists_and_a_measurement_that_shows_it():
    assert os.access(os.path.join(ROOT, "experiments", "bench", "torch_mkl_avx512.sh"), os.X_OK)
    generic = json.load(open(os.path.join(ROOT, "experiments", "results", "bench", "swin_mkl", "generic_3.json")))
    fast = json.load(open(os.path.join(ROOT, "experiments", "results", "bench", "swin_mkl", "avx512_3.json")))
    assert generic["ratios"]["matmul jax/torch"] >= report.SLOW_TORCH_BLAS > fast["ratios"]["matmul jax/torch"]
