"""Every shipped config builds, validates its keys, and says how to run it."""
import glob
import re
import os

import pytest

from vitjax.train import optimizer
from vitjax.train.config import base

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "configs", "**", "*.py"), recursive=True))


def _load(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("config_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: os.path.relpath(p, ROOT))
def test_config_documents_its_command_and_has_only_known_keys(path):
    module = _load(path)
    assert re.search(r"vitjax (train|bench) --config configs/", module.__doc__) and "Expected" in module.__doc__
    config = module.get_config()
    assert set(config.keys()) == set(base().keys())
    durations = [config[f"total_{u}"] for u in optimizer.DURATION_UNITS]
    assert sum(bool(d) for d in durations) == 1, durations


def test_an_unknown_preset_is_rejected():
    module = _load(os.path.join(ROOT, "configs", "fashion_mnist", "vit.py"))
    with pytest.raises(ValueError, match="unknown config preset 'longer'"):
        module.get_config("longer")
