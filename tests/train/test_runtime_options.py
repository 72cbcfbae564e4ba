"""Options that change how a run executes, not what it computes (config_compare.RUNTIME_KEYS): JAX's
persistent compilation cache (config.compilation_cache_dir, $VITJAX_COMPILATION_CACHE) and a
profiler window (config.profile_steps). Each test runs `vitjax train` on the tiny config.

    nice -n 19 python -m pytest tests/train/test_runtime_options.py -x -q
"""
import os
import re
import subprocess
import sys

import pytest

from tests.paths import ROOT, TINY
from vitjax.config import load_config
from vitjax.train import trainer


def _train(workdir, *extra, env=None):
    run = subprocess.run([sys.executable, "-m", "vitjax", "train", "--config", f"{TINY}:steps=6", "--workdir",
                          str(workdir), *extra], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env=dict(os.environ, **(env or {})))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    return run.stdout


def _entries(directory):
    return sorted(name for name in os.listdir(directory) if not name.startswith("."))


def test_a_second_process_loads_its_programs_from_the_compilation_cache(tmp_path):
    cache = tmp_path / "cache"
    _train(tmp_path / "first", f"--config.compilation_cache_dir={cache}")
    written = _entries(cache)
    assert written, "the first run cached nothing"
    # Another process, the cache from the environment: the same programs, found, none compiled anew.
    _train(tmp_path / "second", env={"VITJAX_COMPILATION_CACHE": str(cache)})
    assert _entries(cache) == written
    # The cache is no part of the run's identity: the finished run, asked again without it, reports.
    assert "is finished" in _train(tmp_path / "first")


def test_a_profile_window_writes_a_trace_under_the_workdir(tmp_path):
    out = _train(tmp_path / "run", "--config.profile_steps=2:4")
    assert "profiled steps 3-4 into" in out, out[-2000:]
    traces = list((tmp_path / "run" / "profile").rglob("*.xplane.pb"))  # what TensorBoard/XProf read
    assert traces and traces[0].stat().st_size > 0, list((tmp_path / "run").rglob("*"))


@pytest.mark.parametrize("window, phrase", [("4:2", "0 <= START < STOP"), ("2", "0 <= START < STOP"),
                                           ("2:99", "ends after the run's last step 6")])
def test_a_bad_profile_window_fails_before_training(window, phrase):
    config = load_config(f"{TINY}:steps=6")
    with config.unlocked():
        config.profile_steps = window
    with pytest.raises(ValueError, match=re.escape(phrase)):
        trainer.plan(config)
