"""experiments/bench/device_split.py's table, from bench JSONs written by hand (no benchmark runs)."""
import json
import os

import pytest

from tests.paths import ROOT
from vitjax.config import load_module

SCRIPT = os.path.join(ROOT, "experiments", "bench", "device_split.py")


def _bench_json(images_per_second, matmul_tflops):
    return {"workloads": {"vitjax train": {"images_per_second": images_per_second},
                          "matmul 2048x2048 float32 (jax)": {"flops_per_second": matmul_tflops * 1e12}},
            "ratios": {"train vitjax / timm": None}}


def test_the_table_divides_by_each_process_matmul_and_only_adds_rows(tmp_path):
    script = load_module(SCRIPT)
    name = "fashion_mnist_vit_b8"
    # Rep 0: the 1-device process ran 600 img/s on a 0.2 TFLOP/s matmul, the 4-device one 300 on 0.15.
    for devices, rep, speed, tflops in [(1, 0, 600, 0.2), (4, 0, 300, 0.15), (1, 1, 500, 0.25), (4, 1, 400, 0.2)]:
        (tmp_path / f"{name}_{devices}dev_{rep}.json").write_text(json.dumps(_bench_json(speed, tflops)))
    earlier = {"swin_t_224_b8": {"one_over_four_per_matmul": 1.18}}
    (tmp_path / "device_split.json").write_text(json.dumps(earlier))
    script.main(["--out", str(tmp_path), "--only", name, "--summarise_only"])
    table = json.loads((tmp_path / "device_split.json").read_text())
    assert table["swin_t_224_b8"] == earlier["swin_t_224_b8"]  # --only keeps the rows it did not rerun
    row = table[name]
    assert row["by_devices"]["1"]["per_matmul_tflops_per_rep"] == pytest.approx([3000, 2000])
    assert row["by_devices"]["4"]["per_matmul_tflops_per_rep"] == pytest.approx([2000, 2000])
    assert row["one_over_four_per_matmul"] == pytest.approx(2500 / 2000)
    assert row["one_over_four_img_s"] == pytest.approx(550 / 350)


def test_an_unknown_workload_is_named(tmp_path, capsys):
    with pytest.raises(SystemExit):
        load_module(SCRIPT).main(["--out", str(tmp_path), "--only", "vit_b8"])
    assert "unknown workload(s) ['vit_b8']" in capsys.readouterr().err
