"""Data parallel, FSDP and tensor parallel training on 8 fake CPU devices, and on 2 processes x 4.

Everything that needs several devices runs in subprocesses (tests/parallel/harness.py, and the
`vitjax train` command for the multi-process run), because the device count is fixed when jax
starts. One module-scoped fixture runs them all once; the tests below read what they recorded.

    1 device    the reference: 20 steps; then the others' checkpoints restored (and continued)
    8 devices   data=8, FSDP 2x4, restore onto 4x2, fsdp_tp 2x2x2 with accumulation, bf16 x 3 presets
    2 x 4       `vitjax train` twice on localhost with jax.distributed (Gloo collectives)
"""
import json
import subprocess
import sys

import numpy as np
import pytest


from tests.parallel.processes import CONFIG, env, free_port, max_rel_diff
from tests.paths import ROOT
TIMEOUT = 900


def _start(args, env, log):
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)


def _finish(proc, log_path, what):
    try:
        proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    with open(log_path) as f:
        tail = f.read()[-4000:]
    assert proc.returncode == 0, f"{what} failed (exit {proc.returncode}):\n{tail}"


def _signal(path, word):
    tmp = path.with_suffix(".tmp")
    tmp.write_text(word)
    tmp.rename(path)  # atomic: the reader never sees an empty file


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("scale_out")
    eight, multi, one = out / "eight", out / "multi", out / "one"
    logs = {}

    def log(name):
        logs[name] = open(out / f"{name}.log", "w")
        return logs[name]

    # All four processes start together; the 1-device reference trains, then waits for `go` before
    # reading the checkpoints the others wrote.
    go = out / "go"
    procs = {"eight": _start([sys.executable, "-m", "tests.parallel.harness", "eight", str(eight)],
                             env(), log("eight")),
             "one": _start([sys.executable, "-m", "tests.parallel.harness", "one", str(one), str(go),
                            str(eight / "fsdp_checkpoints"), str(multi / "checkpoints")], env(), log("one"))}
    address = f"localhost:{free_port()}"
    for i in range(2):
        procs[f"process{i}"] = _start(
            [sys.executable, "-m", "vitjax", "train", "--config", CONFIG, "--workdir", str(multi),
             "--coordinator_address", address, "--num_processes", "2", "--process_id", str(i)],
            env(devices=4), log(f"process{i}"))
    try:
        for name in ("eight", "process0", "process1"):
            _finish(procs[name], out / f"{name}.log", name)
        _signal(go, "go")
        _finish(procs["one"], out / "one.log", "one")
    finally:
        if not go.exists():
            _signal(go, "stop")  # a failure above: let the reference exit
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    for f in logs.values():
        f.close()

    def load(directory):
        with open(directory / "results.json") as f:
            return json.load(f)

    return {"eight": load(eight), "one": load(one), "dirs": {"eight": eight, "one": one, "multi": multi},
            "logs": out}


def _npz(path):
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def _params(runs, where, name):
    return _npz(runs["dirs"][where] / f"{name}.npz")


# The attention key bias adds q.b to every score of a query's row, which the softmax cancels: its
# gradient is zero in exact arithmetic, and Adam turns the rounding noise left in it (~1e-9) into
# learning-rate-sized steps of random sign. It cannot change the model's outputs, so the parameter
# comparisons leave it out; every other parameter agrees to about 1e-6.
NO_GRADIENT = "['key']['bias']"


def _max_abs_diff(a, b):
    assert sorted(a) == sorted(b)
    return max(float(np.max(np.abs(a[k].astype(np.float64) - b[k].astype(np.float64)), initial=0.0))
               for k in a if not k.endswith(NO_GRADIENT))


def test_data_parallel_and_fsdp_match_one_device(runs):
    base = runs["one"]["base"]["losses"]
    reference = _params(runs, "one", "base")
    assert len(base) == 20 and base[-1] < 0.8 * base[0], base  # it learns
    for name in ("dp", "fsdp"):
        losses = runs["eight"][name]["losses"]
        assert max_rel_diff(losses, base) <= 1e-5, (name, losses, base)
        assert _max_abs_diff(_params(runs, "eight", name), reference) <= 1e-4, name


def test_fsdp_keeps_an_eighth_of_the_state_on_each_device(runs):
    dp, fsdp8 = runs["eight"]["dp"], runs["eight"]["bf16_accum_fsdp8"]  # fsdp=8: parameters split 8 ways
    assert set(dp["elements_per_device"].values()) == {dp["total_elements"]}  # a full copy everywhere
    sharded = fsdp8["total_elements"] - fsdp8["replicated_elements"]
    # Every leaf is split evenly or replicated on purpose (norms and biases: a few % of this tiny model).
    assert set(fsdp8["elements_per_device"].values()) == {sharded // 8 + fsdp8["replicated_elements"]}
    assert fsdp8["replicated_elements"] < 0.1 * fsdp8["total_elements"]
    # XLA's own figure: the step's arguments are the state's shard plus 1/8 of the batch and the key.
    memory_dp, memory_fsdp = dp["memory"], fsdp8["memory"]
    assert memory_fsdp["state_per_device"] * 8 < 1.3 * memory_fsdp["state_total"]
    batch_share = (32 * 16 * 16 * 3 + 32 * 4) * 4 // 8
    assert memory_fsdp["arguments"] <= memory_fsdp["state_per_device"] + batch_share + 64
    assert memory_fsdp["arguments"] < 0.3 * memory_dp["arguments"]
    # The donated state comes back in the same buffers.
    assert memory_fsdp["aliased"] == memory_fsdp["state_per_device"]
    # FSDP on 2x4: split 4 ways along the width, never along the data axis.
    specs = runs["eight"]["fsdp"]["param_specs"]
    assert specs["['Transformer']['encoderblock_0']['MlpBlock_0']['Dense_0']['kernel']"] == "P('fsdp', None)"
    assert specs["['head']['kernel']"] == "P('fsdp', None)"
    assert specs["['Transformer']['encoder_norm']['scale']"] == "P()"
    assert not any("data" in spec for spec in specs.values())


def test_fsdp_checkpoint_restores_onto_other_meshes_and_training_continues(runs):
    saved = _npz(runs["dirs"]["eight"] / "fsdp_saved.npz")
    # Onto a 4x2 mesh (in the 8-device process): bit-identical, resharded 2 ways.
    moved = runs["eight"]["restore_4x2"]
    assert moved["same_keys"] and moved["max_abs_diff"] == 0.0
    assert "P(None, 'fsdp')" in moved["specs"]
    assert max_rel_diff(moved["losses"], runs["eight"]["fsdp"]["losses"][10:]) <= 1e-5
    # Onto one device: bit-identical, and the last 10 steps repeat the uninterrupted run's.
    restored = _npz(runs["dirs"]["one"] / "restore_1_state.npz")
    assert sorted(restored) == sorted(saved)
    for key, value in saved.items():
        np.testing.assert_array_equal(restored[key], value, err_msg=key)
    assert max_rel_diff(runs["one"]["restore_1"]["losses"], runs["one"]["base"]["losses"][10:]) <= 1e-5


def test_two_processes_match_one_process_with_eight_devices(runs):
    multi = runs["dirs"]["multi"]
    with open(multi / "metrics.jsonl") as f:
        rows = [json.loads(line) for line in f]
    losses = [r["loss"] for r in rows if "loss" in r]
    assert [r["step"] for r in rows if "loss" in r] == list(range(1, 21))  # written once, by process 0
    assert max_rel_diff(losses, runs["eight"]["dp"]["losses"]) <= 1e-5
    assert _max_abs_diff(_params(runs, "one", "multiprocess"), _params(runs, "eight", "dp")) <= 1e-4
    assert (multi / "results.json").exists()
    for i in range(2):
        with open(runs["logs"] / f"process{i}.log") as f:
            log = f.read()
        assert ("finished:" in log) == (i == 0)  # summaries and progress lines from process 0 only
        assert ("step 20/20" in log) == (i == 0)


def test_tensor_parallel_matches_one_device(runs):
    assert max_rel_diff(runs["eight"]["tp"]["losses"], runs["one"]["base"]["losses"]) <= 1e-5
    assert _max_abs_diff(_params(runs, "eight", "tp"), _params(runs, "one", "base")) <= 1e-4


# Loose: bf16 rounds activations, and each accumulated micro-batch draws its own dropout masks.
@pytest.mark.parametrize("name", ["bf16_accum_data", "bf16_accum_fsdp8", "bf16_accum_tp"])
def test_accumulation_and_bf16_under_every_preset(runs, name):
    base = runs["one"]["base"]["losses"]
    losses = runs["eight"][name]["losses"]
    assert max_rel_diff(losses, base) <= 5e-2, (name, losses, base)  # measured: 2.5e-2
    assert _max_abs_diff(_params(runs, "eight", name), _params(runs, "one", "base")) <= 0.1  # measured: 0.04


@pytest.mark.parametrize("case, phrase", [
    ("mesh_size", "needs 3 devices but 8 are available"),
    ("mesh_fixed_axes", "do not divide the 8 devices"),
    ("batch", "global batch size 36 is not divisible by the data-parallel size 8"),
    ("micro_batch", "micro-batch size"),
    ("preset", "unknown sharding preset 'zero3'")])
def test_bad_mesh_or_batch_fails_before_compiling(runs, case, phrase):
    # The harness ran trainer.train with compilation forbidden; the error came first and no
    # workdir was written.
    message = runs["eight"]["bad_inputs"][case]
    assert message is not None and phrase in message, message
    assert not message.startswith("wrote ")
