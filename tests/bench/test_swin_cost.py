"""experiments/bench/swin_cost.py at tiny sizes: a Swin's FLOPs grow with the pixels, a ViT's faster.

A Swin (patch 2, window 4, two stages) and a ViT (patch 4, width 32) at 32, 64 and 128: the Swin's
windows stay 4x4 at every size, so its lowered forward pass's FLOPs go x4 and x16 with the pixels
(the head's constant share is all that differs); the ViT's 65, 257 and 1,025 tokens attend to each
other, so its FLOPs go up faster. One point is timed, the rest skipped with the reason recorded.
"""
import importlib.util
import json
import os

import pytest

from tests.paths import ROOT

SCRIPT = os.path.join(ROOT, "experiments", "bench", "swin_cost.py")
TINY = {
    "tiny Swin": ("swin", {"variant": None, "patch_size": 2, "window_size": 4, "embed_dim": 32, "depths": (2, 2),
                           "num_heads": (2, 4)}, 3, 10),
    "tiny ViT": ("vit", {"variant": None, "patch_size": 4, "width": 32, "depth": 2, "num_heads": 2, "mlp_dim": 64,
                         "cls_only_last_block": False}, 3, 10),
}


def _load_script():
    spec = importlib.util.spec_from_file_location("swin_cost", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    script = _load_script()
    out = tmp_path_factory.mktemp("cost") / "cost.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(script, "MODELS", TINY)
        # In this process: the re-exec under tcmalloc would replace pytest itself.
        patch.setattr(script.xla_cpu, "reexec_under_tcmalloc", lambda: None)
        script.main(["--sizes", "32,64,128,36", "--rounds", "1", "--seconds", "0.01", "--max_timed_gflops", "0.004",
                     "--out", str(out)])
    return json.loads(out.read_text()), (out.parent / "cost.md").read_text()


def _rows(summary, model):
    return {row["size"]: row for row in summary["rows"] if row["model"] == model}


def test_swin_flops_grow_with_the_pixels_and_the_vits_faster(summary):
    result, _ = summary
    swin, vit = _rows(result, "tiny Swin"), _rows(result, "tiny ViT")
    for size, pixels in ((64, 4), (128, 16)):
        assert swin[size]["pixels_ratio"] == vit[size]["pixels_ratio"] == pixels
        assert swin[size]["flops_ratio"] == pytest.approx(pixels, rel=0.1)
        assert vit[size]["flops_ratio"] > 1.5 * pixels  # attention over (size / 4)^2 + 1 tokens, squared
    assert swin[128]["tokens"] == 64 ** 2 and vit[128]["tokens"] == 32 ** 2 + 1


def test_points_are_timed_or_skipped_with_a_reason(summary):
    result, table = summary
    swin, vit = _rows(result, "tiny Swin"), _rows(result, "tiny ViT")
    # 36 / 2 = 18 tokens a side, which 4x4 windows do not tile: not counted, and the sizes that work named.
    assert "not counted" in swin[36]["skipped"] and "Valid sizes" in swin[36]["skipped"]
    assert "forward_flops_per_image" not in swin[36]
    assert vit[36]["forward_flops_per_image"] > 0
    for row in result["rows"]:
        timed = row["images_per_second"] is not None
        assert timed != ("skipped" in row), row
        if timed:
            assert row["forward_flops_per_image"] <= 0.004e9 and len(row["images_per_second_rounds"]) == 1
        elif "forward_flops_per_image" in row:
            assert "--max_timed_gflops" in row["skipped"]
    assert vit[32]["images_per_second"] > 0 and swin[128]["images_per_second"] is None
    assert len(table.strip().splitlines()) == 2 + len(result["rows"]) and "not timed" in table
