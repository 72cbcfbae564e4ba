"""vitjax/xla_cpu.py: the CPU runtime choices happen only when the CLI asks, only on the CPU, and say so."""
import json
import os
import re
import shutil
import subprocess
import sys

import jax
import ml_collections
import numpy as np
import pytest

from tests.train import tiny_config
from vitjax import models, rundir, xla_cpu
from vitjax.checkpoints import reader

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARY = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
CPU = {"JAX_PLATFORMS": "cpu"}
TINY = os.path.join(ROOT, "tests", "train", "tiny_config.py")


def _clean_env(**extra):
    drop = ("LD_PRELOAD", "VITJAX_TCMALLOC_ACTIVE", "XLA_FLAGS", "JAX_NUM_CPU_DEVICES", "VITJAX_CPU_DEVICES",
            "VITJAX_XLA_CPU_DEFAULTS", "VITJAX_TCMALLOC")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def test_importing_vitjax_and_its_models_changes_no_environment_variable():
    script = ("import os, json; before = dict(os.environ); import vitjax, vitjax.models, vitjax.xla_cpu, "
              "vitjax.cli; print(json.dumps(dict(os.environ) == before))")
    out = subprocess.run([sys.executable, "-c", script], env=_clean_env(), capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out.strip().splitlines()[-1] == "true"


def test_no_model_module_asks_for_the_backend():
    models_dir = os.path.join(ROOT, "vitjax", "models")
    for name in sorted(os.listdir(models_dir)):
        if name.endswith(".py"):
            with open(os.path.join(models_dir, name)) as f:
                assert "default_backend" not in f.read(), name


@pytest.mark.parametrize("environ, expected", [
    ({"JAX_PLATFORMS": "cpu"}, True),
    ({"JAX_PLATFORMS": "cuda,cpu"}, False),
    ({"JAX_PLATFORMS": "tpu"}, False),
])
def test_backend_prediction_follows_jax_platforms(environ, expected):
    assert xla_cpu.backend_will_be_cpu(environ) is expected


def test_preload_env_names_the_library_and_marks_the_process():
    env = xla_cpu.preload_env({"PATH": "/bin", **CPU}, LIBRARY)
    assert env["LD_PRELOAD"] == LIBRARY and env["PATH"] == "/bin"
    assert xla_cpu.preload_env(env, LIBRARY) is None  # the re-executed process does not do it again


@pytest.mark.parametrize("environ, library", [
    ({"VITJAX_TCMALLOC": "0", **CPU}, LIBRARY),
    ({"LD_PRELOAD": "/opt/my/libjemalloc.so", **CPU}, LIBRARY),  # the user's own allocator wins
    ({"LD_PRELOAD": "/opt/shim.so:/usr/lib/libmimalloc.so.2", **CPU}, LIBRARY),
    ({"JAX_PLATFORMS": "cuda"}, LIBRARY),  # accelerator hosts keep their allocator
    (CPU, None),  # no tcmalloc on this system
])
def test_preload_env_leaves_the_process_alone(environ, library):
    assert xla_cpu.preload_env(environ, library) is None


@pytest.mark.skipif(xla_cpu.find_tcmalloc() is None, reason="no tcmalloc here (Debian: libtcmalloc-minimal4)")
def test_reexec_runs_under_tcmalloc_and_children_do_not_inherit_it():
    script = ("import os, sys; from vitjax import xla_cpu; xla_cpu.reexec_under_tcmalloc(); "
              "print(xla_cpu.tcmalloc_loaded(), 'LD_PRELOAD' in os.environ, sys.argv[1:])")
    env = _clean_env(**CPU)
    out = subprocess.run([sys.executable, "-c", script, "a", "--b=1"], env=env, capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out.strip() == "True False ['a', '--b=1']"
    off = subprocess.run([sys.executable, "-c", script], env={**env, "VITJAX_TCMALLOC": "0"},
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert off.strip() == "False False []"


def _loaded_library(name: str) -> str:
    import zlib  # noqa: F401 (loads libz)
    with open("/proc/self/maps") as maps:
        return next(line.split()[-1] for line in maps if os.path.basename(line.split()[-1]).startswith(name))


def test_preload_env_keeps_a_users_other_preloads_beside_tcmalloc():
    env = xla_cpu.preload_env({"LD_PRELOAD": "/opt/shim.so", **CPU}, LIBRARY)
    assert env["LD_PRELOAD"] == f"{LIBRARY} /opt/shim.so"


@pytest.mark.skipif(xla_cpu.find_tcmalloc() is None, reason="no tcmalloc here (Debian: libtcmalloc-minimal4)")
def test_a_users_own_preload_keeps_tcmalloc_and_goes_to_children_as_it_was(tmp_path):
    """A preloaded library that is not an allocator (e.g. a profiler's shim) used to cost the step tcmalloc
    silently (Swin-T's train step 27% slower, experiments/results/bench/README.md)."""
    other = str(tmp_path / "libuser.so")  # the user's own: a copy of zlib, which any Python here has loaded
    shutil.copy(_loaded_library("libz.so"), other)
    script = ("import os; from vitjax import xla_cpu; xla_cpu.reexec_under_tcmalloc(); "
              "maps = open('/proc/self/maps').read(); print('libuser.so' in maps, xla_cpu.tcmalloc_loaded(), "
              "os.environ.get('LD_PRELOAD'))")
    out = subprocess.run([sys.executable, "-c", script], env=_clean_env(LD_PRELOAD=other, **CPU),
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.split() == ["True", "True", other]


def _config(batch=128, eval_batch=500, accum=1):
    config = tiny_config.get_config()
    config.batch_size, config.eval_batch_size, config.grad_accum_steps = batch, eval_batch, accum
    return config


@pytest.mark.parametrize("batch, eval_batch, accum, wanted, count", [
    (128, 500, 1, 4, 4),
    (128, 500, 16, 4, 4),   # micro-batch 8
    (128, 500, 64, 4, 2),   # micro-batch 2
    (6, 500, 1, 4, 2),
    (128, 250, 1, 4, 2),    # the eval batch must split too
    (3, 500, 1, 4, 1),
    (96, 96, 1, 6, 6),
    (32, 32, 1, 6, 1),      # 6, then 3, then 1
    (1, 1, 1, 1, 1),
])
def test_device_count_divides_every_batch(batch, eval_batch, accum, wanted, count):
    assert xla_cpu.device_count_for(_config(batch, eval_batch, accum), wanted) == count


@pytest.mark.parametrize("environ, wanted", [
    ({}, xla_cpu.DEFAULT_DEVICES),
    ({"VITJAX_CPU_DEVICES": "1"}, 1),
    ({"VITJAX_CPU_DEVICES": " 8 "}, 8),
    ({"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}, None),  # the user's own count wins
    ({"JAX_NUM_CPU_DEVICES": "2"}, None),
])
def test_requested_device_count(environ, wanted):
    assert xla_cpu.requested_devices(environ) == wanted


@pytest.mark.parametrize("batch, accum, default", [
    (128, 1, xla_cpu.DEFAULT_DEVICES),  # the configs' batch: 32 examples a device
    (32, 1, xla_cpu.DEFAULT_DEVICES),   # exactly MIN_DEVICE_BATCH a device
    (16, 1, 1),
    (8, 1, 1),                          # Swin-T's bench batch: 2 a device, 1.18x faster on one
    (128, 8, 1),                        # the micro-batch is what a device gets
])
def test_the_default_count_leaves_each_device_enough_examples(batch, accum, default):
    assert xla_cpu.default_devices(_config(batch, 500, accum)) == default
    assert xla_cpu.requested_devices({}, default) == default
    assert xla_cpu.requested_devices({"VITJAX_CPU_DEVICES": "4"}, default) == 4  # the user's count wins


@pytest.mark.parametrize("value", ["0", "four", "-2"])
def test_bad_device_request_names_the_variable(value):
    with pytest.raises(ValueError, match="VITJAX_CPU_DEVICES"):
        xla_cpu.requested_devices({"VITJAX_CPU_DEVICES": value})


_CHOOSE = """
import json, os, sys
from tests.train import tiny_config
from vitjax import xla_cpu
from vitjax.checkpoints import reader
config = tiny_config.get_config()
for arg in sys.argv[1:]:
    exec(arg)
config.lock()
choices = xla_cpu.choose(config)
import jax
print(json.dumps({"devices": jax.device_count(), "kernels": list(choices.model_args(config).get("kernels", ["<absent>"])),
                  "options": choices.options_for(config), "xla_flags": os.environ.get("XLA_FLAGS", ""),
                  "config_untouched": "kernels" not in config.model or sys.argv[1:] != []}))
"""


def _choose(*statements, **env):
    run = subprocess.run([sys.executable, "-c", _CHOOSE, *statements], env=_clean_env(**CPU, **env),
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.strip().splitlines()
    return lines[:-1], json.loads(lines[-1])


def test_choose_applies_the_cpu_defaults_and_says_so_once():
    printed, chosen = _choose()
    assert chosen["devices"] == 4
    assert tuple(chosen["kernels"]) == xla_cpu.MODEL_KERNELS
    assert chosen["options"] == xla_cpu.COMPILER_OPTIONS
    assert chosen["config_untouched"]  # the choices are runtime: the config stays as the user wrote it
    assert len(printed) == 1 and printed[0].startswith("CPU: 4 XLA devices") and "VITJAX_CPU_DEVICES=1" in printed[0]


def test_the_config_and_the_environment_win():
    printed, chosen = _choose("config.model.kernels = ()",
                              "config.compiler_options = {'xla_cpu_enable_fast_math': False}")
    assert chosen["kernels"] == ["<absent>"] and chosen["options"] == {"xla_cpu_enable_fast_math": False}
    assert "model kernels" not in printed[0] and "XLA options" not in printed[0]
    printed, chosen = _choose(VITJAX_CPU_DEVICES="1", VITJAX_XLA_CPU_DEFAULTS="0")
    assert chosen == {"devices": 1, "kernels": ["<absent>"], "options": {}, "xla_flags": "", "config_untouched": True}
    assert printed == ["CPU: 1 XLA device (off: VITJAX_TCMALLOC=0, VITJAX_CPU_DEVICES=1, "
                       "VITJAX_XLA_CPU_DEFAULTS=0; why: vitjax/xla_cpu.py)"]


def test_choose_keeps_one_device_for_a_small_batch():
    printed, chosen = _choose("config.batch_size = 16")
    assert chosen["devices"] == 1 and printed[0].startswith("CPU: 1 XLA device,")
    _, chosen = _choose("config.batch_size = 16", VITJAX_CPU_DEVICES="4")
    assert chosen["devices"] == 4


def test_an_explicit_mesh_keeps_jax_single_device():
    _, chosen = _choose("config.mesh.fsdp = -1", "config.mesh.data = 1")
    assert chosen["devices"] == 1


def test_nothing_is_chosen_for_an_accelerator_backend(monkeypatch):
    monkeypatch.setenv("JAX_PLATFORMS", "tpu")  # predicted without starting JAX, so nothing is touched
    config = ml_collections.ConfigDict({"mesh": dict(xla_cpu.DEFAULT_MESH)})
    assert xla_cpu.choose(config) == xla_cpu.Choices(tcmalloc=xla_cpu.tcmalloc_loaded())


def _vitjax(*args, **env):
    return subprocess.run([sys.executable, "-m", "vitjax", *args], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env=_clean_env(**env))


def test_train_on_four_devices_then_restore_elsewhere(tmp_path):
    workdir = str(tmp_path / "w")
    run = _vitjax("train", "--config", f"{TINY}:steps=10", "--workdir", workdir)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.count("CPU: ") == 1 and "4 XLA devices" in run.stdout
    assert "mesh data=4 fsdp=1 model=1" in run.stdout
    recorded = rundir.load_config(workdir)  # the choices are the run's runtime, not its config
    assert "kernels" not in recorded.model and not recorded.compiler_options
    runtime = rundir.read_results(workdir)["runtime"]
    assert runtime["devices"] == 4 and tuple(runtime["kernels"]) == xla_cpu.MODEL_KERNELS
    assert runtime["compiler_options"] == xla_cpu.COMPILER_OPTIONS
    # The same command without the CPU defaults is the same config: the finished run only reports.
    again = _vitjax("train", "--config", f"{TINY}:steps=10", "--workdir", workdir, VITJAX_XLA_CPU_DEFAULTS="0")
    assert again.returncode == 0 and "is finished" in again.stdout, again.stderr[-3000:]
    # Fine-tuning, few-shot and analysis read the parameters in this process (one CPU device).
    params = reader.read_params(workdir)
    assert all(isinstance(leaf, np.ndarray) for leaf in jax.tree.leaves(params))
    assert params["head"]["kernel"].shape == (32, 4)
    # `vitjax eval` restores the train state in a process of its own, here with two devices.
    evaluated = _vitjax("eval", "--workdir", workdir, "--fewshot", "--shots", "1", JAX_NUM_CPU_DEVICES="2")
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    assert re.search(r"step=10 test_accuracy=\S+ .*1shot=", evaluated.stdout)


def test_collective_patience_is_added_unless_the_user_set_it():
    flag = f"{xla_cpu.COLLECTIVE_TIMEOUT_FLAG}={xla_cpu.COLLECTIVE_PATIENCE_S}"
    assert xla_cpu.with_collective_patience("") == flag
    assert xla_cpu.with_collective_patience("--xla_dump_to=/tmp/d") == f"--xla_dump_to=/tmp/d {flag}"
    mine = f"{xla_cpu.COLLECTIVE_TIMEOUT_FLAG}=5"
    assert xla_cpu.with_collective_patience(mine) == mine


def test_choose_gives_several_devices_collective_patience():
    _, chosen = _choose()
    assert chosen["devices"] == 4
    assert chosen["xla_flags"] == f"{xla_cpu.COLLECTIVE_TIMEOUT_FLAG}={xla_cpu.COLLECTIVE_PATIENCE_S}"
    _, chosen = _choose(VITJAX_CPU_DEVICES="1")  # no collectives: XLA_FLAGS as the user left it
    assert chosen["devices"] == 1 and chosen["xla_flags"] == ""


_LATE_DEVICE = """
import sys, time
import jax, jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec as P
jax.config.update("jax_num_cpu_devices", 2)

def late(index):
    if int(index) == 0:
        time.sleep(float(sys.argv[1]))  # device 0 arrives late at the all-reduce
    return index

def step(x):
    index = jax.pure_callback(late, jax.ShapeDtypeStruct((), jnp.int32), jax.lax.axis_index("d"))
    return jax.lax.psum(x + index, "d")

mesh = Mesh(jax.devices(), ("d",))
print(jax.jit(jax.shard_map(step, mesh=mesh, in_specs=P("d"), out_specs=P()))(jnp.ones(2)), flush=True)
"""


@pytest.mark.parametrize("terminate_s, aborts", [(1, True), (30, False)])
def test_this_jaxlib_honours_the_collective_timeout_flag(terminate_s, aborts):
    # The warning comes first (1 s here, 20 s by default); the termination timeout counts from it.
    flags = f"--xla_cpu_collective_call_warn_stuck_timeout_seconds=1 {xla_cpu.COLLECTIVE_TIMEOUT_FLAG}={terminate_s}"
    run = subprocess.run([sys.executable, "-c", _LATE_DEVICE, "4"], env=_clean_env(**CPU, XLA_FLAGS=flags),
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert (run.returncode != 0) == aborts, run.stderr[-2000:]
    assert ("Termination timeout" in run.stderr) == aborts, run.stderr[-2000:]
