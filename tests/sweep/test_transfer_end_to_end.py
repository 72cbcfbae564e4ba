"""End to end, the transfer probe (experiments/transfer.py in miniature): `vitjax sweep` trains a tiny ViT
on 2 of 4 synthetic classes (data.classes, 8 steps), then probes it twice: in-domain (FEWSHOT, the 2
trained classes) and transfer (FEWSHOT_TRANSFER, the other 2).

Run: nice -n 19 python -m pytest tests/sweep/test_transfer_end_to_end.py -q (three subprocesses, about a
minute on 2 busy cores). It should reach: a 2-way head; each probe's file with mean and std over its 3
draws, its own classes, and exactly those classes' test images (all of them); the table's
fewshot_<k>shot and transfer_<k>shot columns with their stds, carried into summary.csv.
"""
import csv
import json

import numpy as np
import pytest

from tests.paths import TINY
from tests.sweep.sweep_files import run_sweep_file
from vitjax.data import sources
from vitjax.sweep import table

SWEEP = f'''
TINY = {TINY!r}
FEWSHOT = dict(shots=(1, 5), seeds=3)
FEWSHOT_TRANSFER = dict(shots=(1, 5), seeds=3, data={{"classes": (3, 2)}})


def get_runs(arg=None):
    return [("vit_ab", TINY, {{"total_steps": 8, "warmup_steps": 1, "log_every_steps": 4,
                              "checkpoint_every_steps": 8, "data.classes": (0, 1), "data.val_size": 16}})]
'''


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VITJAX_CPU_DEVICES", "1")  # one XLA device: compiles and starts in half the time
        _, out, run = run_sweep_file(tmp_path_factory.mktemp("transfer"), SWEEP)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return out


def _test_labels():
    """The tiny config's synthetic test labels (512 train, 128 test, 16x16x3, 4 classes, seed 0)."""
    return sources.make_synthetic("test", 512, 128, (16, 16, 3), 4, 0)[1]


def test_the_model_trains_on_its_two_classes_and_each_probe_on_its_own(swept):
    run_dir = swept / "vit_ab"
    results = json.loads((run_dir / "results.json").read_text())
    assert results["num_classes"] == 2 and results["num_train"] == 2 * 128 - 16  # classes 0, 1 less validation
    counts = np.bincount(_test_labels(), minlength=4)
    for name, classes in (("fewshot.json", [0, 1]), ("transfer.json", [3, 2])):
        probe = json.loads((run_dir / name).read_text())
        assert probe["classes"] == classes and probe["seeds"] == 3 and probe["shots"] == [1, 5]
        assert probe["test_per_class"] == counts[classes].tolist()  # all of those classes' test images, no other
        assert probe["test_examples"] == counts[classes].sum()
        for k in (1, 5):
            assert 0 <= probe[f"{k}shot"] <= 1 and 0 <= probe[f"{k}shot_std"] <= 0.5


def test_the_table_and_summary_have_both_probes(swept):
    with open(swept / table.CSV) as f:
        row = next(csv.DictReader(f))
    transfer = json.loads((swept / "vit_ab" / "transfer.json").read_text())
    assert row["status"] == "finished"
    assert float(row["transfer_5shot"]) == pytest.approx(transfer["5shot"])
    assert float(row["transfer_5shot_std"]) == pytest.approx(transfer["5shot_std"])
    assert row["fewshot_5shot"] and row["fewshot_5shot_std"]
    with open(swept / table.SUMMARY_CSV) as f:
        group = next(csv.DictReader(f))
    assert float(group["transfer_5shot_mean"]) == pytest.approx(transfer["5shot"])
    assert float(group["transfer_5shot_draws_std"]) == pytest.approx(transfer["5shot_std"])
    assert group["fewshot_1shot_mean"] and group["n"] == "1"
