"""experiments/schedule_check.py: each plain 1x rung (WSD) beside the 8-epoch cosine run of the same
family, size, seed and steps; nothing else pairs."""
import os

import pytest

from vitjax.config import load_module
from tests.paths import ROOT

check = load_module(os.path.join(ROOT, "experiments", "schedule_check.py"))


def _row(name, family, size, seed, steps, val, test):
    return {"name": name, "status": "finished", "family": family, "train_size": size, "seed": seed,
            "steps": steps, "best_val_accuracy": val, "accuracy": test}


def test_only_plain_one_x_rungs_with_a_twin_of_equal_steps_pair():
    cosine = [_row("vit_n550_s0", "vit", 550, 0, 1_200, 0.70, 0.69), _row("bit_n550_s0", "bit", 550, 0, 1_200, 0.72, 0.71),
              _row("vit_n550_s1", "vit", 550, 1, 1_200, 0.71, 0.70)]
    ladders = [_row("vit_n550_s0_x1", "vit", 550, 0, 1_200, 0.71, 0.695),
               _row("vit_n550_s0_x2", "vit", 550, 0, 2_400, 0.75, 0.74),  # another rung: no twin
               _row("vit_lighter_n550_s0_x1", "vit", 550, 0, 1_200, 0.80, 0.80),  # an arm's ladder
               _row("bit_n550_s0_x1", "bit", 550, 0, 1_200, 0.73, 0.70),
               _row("vit_n550_s1_x1", "vit", 550, 1, 1_000, 0.71, 0.70)]  # other steps
    found = check.pairs(cosine, ladders)
    assert sorted(found) == [("bit", 550, 0), ("vit", 550, 0)]
    text = check.report(found)
    assert "| vit | 550 | 0 | +1.00 | +0.50 |" in text and "| bit | 550 | 0 | +1.00 | -1.00 |" in text
    assert "BiT - ViT of the test differences: -1.50" in text


def test_no_pair_is_an_error_naming_what_pairs(tmp_path, capsys):
    for name in ("cosine", "ladders"):
        os.makedirs(tmp_path / name)
    with pytest.raises(SystemExit):
        check.main([str(tmp_path / "cosine"), str(tmp_path / "ladders")])
    assert "no 1x rung has an 8-epoch twin" in capsys.readouterr().err
