"""Each family's name and label in the sweep tables and plots, read from the configs as a run records them."""
import os

import pytest

from vitjax.config import load_config
from vitjax.sweep import table

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


@pytest.mark.parametrize("config,family,label,patch", [
    ("vit.py", "vit", "ViT w64 d6 p4", 4),
    ("bit.py", "bit", "BiT-R26x1 w8 small stem", None),
    ("vit_distilled.py", "deit", "DeiT w64 d6 p4", 4),
    ("deit.py", "deit", "DeiT w64 d6 p4", 4),
    ("swin.py", "swin", "Swin w32 d2-4 p2 win7", 2),
])
def test_families_and_labels_of_the_fashion_mnist_configs(config, family, label, patch):
    recorded = load_config(os.path.join(ROOT, "configs", "fashion_mnist", config)).to_dict()
    assert table.model_description(recorded) == (family, label, patch)


def test_published_variants_keep_the_papers_names():
    assert table.model_description({"model_name": "swin", "model": {"variant": "T"}}) == ("swin", "Swin-T", 4)
    assert table.model_description({"model_name": "vit", "model": {"variant": "Ti/16", "distillation_token": True}}) \
        == ("deit", "DeiT-Ti/16", 16)
