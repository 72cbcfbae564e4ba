"""The `vitjax` command re-executes itself under tcmalloc when it can, and only then."""
import os
import subprocess
import sys

import pytest

from vitjax import allocator

LIBRARY = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"


def test_preload_env_names_the_library_and_marks_the_process():
    env = allocator.preload_env({"PATH": "/bin"}, LIBRARY)
    assert env["LD_PRELOAD"] == LIBRARY and env["PATH"] == "/bin"
    assert allocator.preload_env(env, LIBRARY) is None  # the re-executed process does not do it again


@pytest.mark.parametrize("environ, library", [
    ({"VITJAX_TCMALLOC": "0"}, LIBRARY),
    ({"LD_PRELOAD": "/opt/my/libjemalloc.so"}, LIBRARY),  # the user's own preload wins
    ({}, None),  # no tcmalloc on this system
])
def test_preload_env_leaves_the_process_alone(environ, library):
    assert allocator.preload_env(environ, library) is None


@pytest.mark.skipif(allocator.find_tcmalloc() is None, reason="no tcmalloc here (Debian: libtcmalloc-minimal4)")
def test_the_process_really_runs_under_tcmalloc_after_reexec():
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "VITJAX_TCMALLOC_ACTIVE")}
    script = ("import sys; from vitjax import allocator; allocator.reexec_under_tcmalloc(); "
              "maps = open('/proc/self/maps').read(); print('tcmalloc' in maps, sys.argv[1:])")
    out = subprocess.run([sys.executable, "-c", script, "a", "--b=1"], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "True ['a', '--b=1']"
    off = subprocess.run([sys.executable, "-c", script], env={**env, "VITJAX_TCMALLOC": "0"}, capture_output=True,
                         text=True, check=True).stdout
    assert off.strip() == "False []"
