"""experiments/sam_table.py: the SAM study's mIoU table, on hand-made finished runs."""
import csv
import json
import os

import pytest

from vitjax.config import load_module

sam_table = load_module(os.path.join(os.path.dirname(__file__), "..", "..", "experiments", "sam_table.py"))


def _run(sweep_dir, arm, seed, miou):
    run_dir = os.path.join(sweep_dir, f"sam_{arm}_s{seed}")
    os.makedirs(run_dir)
    results = {f"test_miou_{key}_at_best": value for key, value in miou.items()}
    results.update({"host": {"cpu": "cpu A", "isa": []}, "devices": 4, "code": {"source_sha256": "abc"}})
    with open(os.path.join(run_dir, "results.json"), "w") as f:
        json.dump(results, f)


def _runs(sweep_dir, seeds):
    # Every metric of arm a, seed s: base[a] + s / 100 + 0.01 x its column index (0-7).
    base = {"random": 0.40, "mae": 0.50, "vit": 0.45}
    for seed in seeds:
        for arm, value in base.items():
            _run(sweep_dir, arm, seed, {metric: value + seed / 100 + index / 100
                                        for index, metric in enumerate(sam_table.METRICS)})


def test_each_cell_is_the_mean_and_standard_error_over_seeds_in_points(tmp_path):
    _runs(str(tmp_path), seeds=(0, 1, 2))
    table = sam_table.cells(sam_table.readouts.sam_values([str(tmp_path)]))
    cell = table["mae", "unseen_box"]  # column 7: 50 + 7 + seed points
    assert cell["seeds"] == [0, 1, 2] and cell["values"] == pytest.approx([57.0, 58.0, 59.0])
    assert cell["mean"] == pytest.approx(58.0)
    assert cell["se"] == pytest.approx(1.0 / 3 ** 0.5, abs=1e-4)  # stdev(57, 58, 59) = 1; spread rounds to 4 places
    text = sam_table.markdown(table)
    assert "| vitjax MAE | 51.0 ± 0.6 | 52.0 ± 0.6 |" in text and text.rstrip().endswith("| 0, 1, 2 |")
    assert text.splitlines()[0].startswith("| encoder at init | seen, 1 click | seen, 3 clicks | seen, 5 clicks |")


def test_one_seed_has_no_error_bar_and_a_missing_arm_is_a_dash(tmp_path):
    _run(str(tmp_path), "random", 0, {"unseen_1click": 0.4})
    text = sam_table.markdown(sam_table.cells(sam_table.readouts.sam_values([str(tmp_path)])))
    assert "| random init | - | - | - | - | 40.0 | - | - | - | 0 |" in text
    assert "| vitjax MAE | - | - | - | - | - | - | - | - | - |" in text


def test_the_command_writes_csv_and_markdown_and_refuses_a_run_finished_twice(tmp_path, capsys):
    _runs(str(tmp_path / "a"), seeds=(0, 1))
    out = tmp_path / "results" / "miou"
    assert sam_table.main([str(tmp_path / "a"), "--out", str(out)]) == 0
    with open(f"{out}.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3 * 2 * 8 and {r["prompt"] for r in rows} == {"1click", "3click", "5click", "box"}
    assert {"arm": "vit", "seed": "1", "group": "seen", "prompt": "3click", "miou_points": "47.0000"} in rows
    assert open(f"{out}.md").read() == capsys.readouterr().out
    _runs(str(tmp_path / "b"), seeds=(1,))
    with pytest.raises(SystemExit, match="sam_random_s1 finished in .*a and .*b: keep one"):
        sam_table.main([str(tmp_path / "a"), str(tmp_path / "b")])
    with pytest.raises(SystemExit, match="no finished SAM run"):
        sam_table.main([str(tmp_path / "results")])
