"""Session-wide test setup."""
import importlib.util
import os
import shutil
import tempfile

import pytest

from tests import fast_compile
from vitjax import tensorflow_startup

# Before any JAX backend starts (timm's import below can start one): see tests/fast_compile.py.
os.environ["XLA_FLAGS"] = fast_compile.with_fast_compile(os.environ.get("XLA_FLAGS", ""))
# As the `vitjax` command does, before anything imports TensorFlow (its subprocesses inherit it too).
tensorflow_startup.skip_keras()

# torch's triton (pulled in by timm through torchvision) crashes the process with a segmentation
# fault when its LLVM library loads after TensorFlow's; loaded first, both work. The peer
# cross-checks need timm in the same process as vitjax.data's TensorFlow, so load it up front.
if importlib.util.find_spec("timm") is not None:
    import timm  # noqa: F401

import jax  # noqa: E402  (after timm, as above)

# The tests in this process share one JAX backend with JAX's single CPU device. Started here, so that
# the order of tests cannot change it: a `vitjax bench` run in-process first would otherwise give the
# whole session 4 devices (vitjax/xla_cpu.py). Subprocesses still get vitjax's own default.
jax.devices()

# One persistent compilation cache for the session, this process and every `vitjax` subprocess it starts
# (they inherit the variable): the many tiny runs compile the same programs again at each start-up and
# resume, and load them instead (~25% less CPU time for tests/train/test_faults.py, measured 2026-12-01).
# Fresh per session unless the caller names one; tests/models/compile_guard.py counts a program served
# from it as compiled, so "nothing compiles before the error" stays a real check.
from vitjax import cli  # noqa: E402

_SESSION_CACHE = None
if not os.environ.get(cli.ENV_COMPILATION_CACHE):
    _SESSION_CACHE = tempfile.mkdtemp(prefix="vitjax-tests-compilation-cache-")
    os.environ[cli.ENV_COMPILATION_CACHE] = _SESSION_CACHE
cli.use_compilation_cache()


# `make test` splits the suite over 2 processes by file, in collection order (pytest-xdist, --dist loadfile
# --no-loadscope-reorder). Started first, the longest files overlap each other and the many short ones
# fill the end, rather than one long file running alone at the end. Which files are longest is measured:
# every run adds each file's seconds (setup, call and teardown of its tests) to pytest's cache, and the
# next run orders by them. Files never measured (new ones; all of them in a fresh clone) go first.
_FILE_SECONDS = "vitjax/file_seconds"
_measured: dict[str, float] = {}


def pytest_collection_modifyitems(config, items):
    cache = getattr(config, "cache", None)  # absent under -p no:cacheprovider
    seconds = cache.get(_FILE_SECONDS, {}) if cache is not None else {}
    items.sort(key=lambda item: -seconds.get(item.nodeid.split("::")[0], float("inf")))  # stable


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    _measured[path] = _measured.get(path, 0.0) + report.duration


def _record_file_seconds(config) -> None:
    """Into pytest's cache, from the process that saw every file's reports (the xdist controller, or
    the only process); files this run did not touch keep their earlier measurement."""
    if getattr(config, "cache", None) is None or hasattr(config, "workerinput") or not _measured:
        return
    config.cache.set(_FILE_SECONDS, {**config.cache.get(_FILE_SECONDS, {}), **_measured})


def pytest_sessionfinish(session, exitstatus):
    _record_file_seconds(session.config)
    if _SESSION_CACHE:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


@pytest.fixture(scope="session")
def trained_tiny_run(tmp_path_factory):
    """A workdir the trainer wrote: tests/train/tiny_config.py (ViT width 32, depth 1, 16x16x3 synthetic
    images, 4 classes) for 2 steps. Shared by the tests that need a real run's files; they must not
    write into it."""
    from tests.train import tiny_config
    from vitjax.train import trainer

    config = tiny_config.get_config("steps=2")
    config.warmup_steps = 1
    workdir = str(tmp_path_factory.mktemp("trained_tiny_run"))
    trainer.train(config, workdir)
    return workdir


@pytest.fixture(scope="session")
def uninterrupted_faults_run(tmp_path_factory):
    """The reference of the kill-and-resume tests (tests/train/test_faults.py, tests/gcs): its tiny run of
    STEPS steps through `vitjax train` in a subprocess, uninterrupted, in a local workdir. One for the session:
    both modules compared against the same command's run, trained twice. They must not write into it."""
    from tests.train import kill_and_resume

    workdir = tmp_path_factory.mktemp("uninterrupted")
    run = kill_and_resume.run_vitjax_train(workdir)
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir


@pytest.fixture(scope="session")
def trained_tiny_dino_run(tmp_path_factory):
    """A DINO run of tests/objectives/test_dino_training.py's settings (the tiny ViT, 4 steps, a checkpoint
    every 2, logs every step) through `vitjax train`; shared by that module and the k-NN evaluation tests,
    which must not write into it."""
    from tests.objectives import dino_tiny

    workdir = str(tmp_path_factory.mktemp("trained_tiny_dino_run") / "run")
    dino_tiny.train(workdir)
    return workdir
