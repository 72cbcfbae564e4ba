"""The cpu string that results and bench JSON record beside their times."""
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
