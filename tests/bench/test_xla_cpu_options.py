"""experiments/bench/xla_cpu_options.py on a tiny model: option sets compiled, run and compared."""
import argparse
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from tests.paths import ROOT, TINY

SCRIPT = os.path.join(ROOT, "experiments", "bench", "xla_cpu_options.py")


def _load_script():
    spec = importlib.util.spec_from_file_location("xla_cpu_options", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_each_option_set_is_compiled_run_and_checked(tmp_path, monkeypatch):
    script = _load_script()
    out = tmp_path / "options.json"
    # In this process: the re-exec under tcmalloc would replace pytest itself.
    monkeypatch.setattr(script.xla_cpu, "reexec_under_tcmalloc", lambda: None)
    monkeypatch.setattr(sys, "argv", [
        SCRIPT, "--config", TINY, "--config.batch_size=8", "--rounds", "1", "--seconds", "0.01", "--out", str(out),
        "--option_set", 'no ynn={"xla_cpu_experimental_ynn_fusion_type": ""}'])
    script.main()
    rows = {row["name"]: row for row in json.loads(out.read_text())["rows"]}

    assert list(rows) == ["vitjax default", "no ynn"]
    assert rows["no ynn"]["compiler_options"] == {"xla_cpu_experimental_ynn_fusion_type": ""}
    # The options reach the compiler: vitjax's default hands reductions to YNNPACK, the set takes them back.
    assert rows["vitjax default"]["library_mentions_in_hlo"].get("YNNPACK", 0) > 0
    assert rows["no ynn"]["library_mentions_in_hlo"].get("YNNPACK", 0) == 0
    for row in rows.values():
        assert row["img_per_sec"] > 0 and row["max_param_difference_after_2_steps"] < 1e-5


def test_an_option_set_must_be_a_name_and_a_json_object():
    script = _load_script()

    assert script.option_set('wide={"xla_cpu_prefer_vector_width": 512}') == (
        "wide", {"xla_cpu_prefer_vector_width": 512})
    for bad in ("wide", "wide=512", "wide={512", '={"a": 1}'):
        with pytest.raises(argparse.ArgumentTypeError, match="JSON"):
            script.option_set(bad)


def test_device_counts_are_compiled_side_by_side_in_a_fresh_process(tmp_path):
    out = tmp_path / "devices.json"
    environ = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    run = subprocess.run([sys.executable, SCRIPT, "--config", TINY, "--config.batch_size=8", "--devices", "1,4",
                          "--rounds", "1", "--seconds", "0.01", "--out", str(out)],
                         capture_output=True, text=True, timeout=300, cwd=ROOT, env=environ)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert [(row["name"], row["cpu_devices"]) for row in rows] == [
        ("vitjax default, 1 devices", 1), ("vitjax default, 4 devices", 4)]
    # Four devices take the same two steps as one, up to the order of the gradient sums.
    assert rows[1]["max_param_difference_after_2_steps"] < 1e-5


def test_device_counts_must_be_positive_integers():
    script = _load_script()

    assert script.device_counts("1,2,4") == [1, 2, 4]
    for bad in ("", "1,,2", "0,2", "four"):
        with pytest.raises(argparse.ArgumentTypeError, match="device counts"):
            script.device_counts(bad)
