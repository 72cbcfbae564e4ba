"""The cpu string that results and bench JSON record beside their times."""
import subprocess

import jax
import jaxlib

from vitjax import host

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC
flags\t\t: fpu sse2 avx2 avx512f avx512bw

processor\t: 1
model name\t: another block, not read
"""


def test_cpu_names_model_generation_and_avx512(tmp_path, monkeypatch):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    real_open = open
    monkeypatch.setattr("builtins.open", lambda f, *a, **k: real_open(path if f == "/proc/cpuinfo" else f, *a, **k))
    assert host.cpu() == "AMD EPYC (family 25, model 17, avx512f)"
    path.write_text(CPUINFO.replace(" avx512f avx512bw", ""))
    assert host.cpu() == "AMD EPYC (family 25, model 17)"


def test_without_cpuinfo_the_platform_names_the_processor(monkeypatch):
    real_open = open

    def missing(path, *args, **kwargs):
        if path == "/proc/cpuinfo":
            raise FileNotFoundError(path)
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr("builtins.open", missing)
    assert host.cpu() and "family" not in host.cpu()


def test_isa_lists_the_extensions_the_cpu_has(tmp_path, monkeypatch):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    real_open = open
    monkeypatch.setattr("builtins.open", lambda f, *a, **k: real_open(path if f == "/proc/cpuinfo" else f, *a, **k))
    assert host.isa() == ["avx2", "avx512f"]
    assert host.describe()["isa"] == ["avx2", "avx512f"]


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_code_records_the_commit_whether_tracked_files_changed_and_a_source_digest(tmp_path, monkeypatch):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "first")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    monkeypatch.setattr(host, "_PACKAGE", package)
    host.code.cache_clear()
    clean = host.code()
    assert clean["commit"] == head.strip() and clean["dirty"] is False
    assert clean["libraries"]["jax"] == jax.__version__ and clean["libraries"]["jaxlib"] == jaxlib.__version__
    assert set(clean["libraries"]) == {"jax", "jaxlib", "flax", "optax", "numpy", "tensorflow"}
    assert clean["libraries"]["tensorflow"] is not None  # tensorflow-cpu's distribution name found

    (tmp_path / "notes.txt").write_text("untracked files are not the code that ran\n")
    host.code.cache_clear()
    assert host.code() == clean
    (package / "a.py").write_text("x = 2\n")
    host.code.cache_clear()
    edited = host.code()
    assert edited["dirty"] is True and edited["commit"] == clean["commit"]
    assert edited["source_sha256"] != clean["source_sha256"]
    host.code.cache_clear()


def test_code_outside_a_checkout_has_no_commit_but_a_digest(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(host, "_PACKAGE", tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    host.code.cache_clear()
    found = host.code()
    assert found["commit"] is None and found["dirty"] is None and len(found["source_sha256"]) == 64
    host.code.cache_clear()
