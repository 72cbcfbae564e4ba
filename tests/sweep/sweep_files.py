"""What the sweep tests share: writing a sweep file that knows TINY (the tiny training config), running
`vitjax` as a user would (a subprocess from the repository's root), and running a sweep file that way."""
import subprocess
import sys
import textwrap

from tests.paths import ROOT, TINY


def write_sweep_file(tmp_path, body, name="sweep.py"):
    path = tmp_path / name
    path.write_text(f"TINY = {TINY!r}\n" + textwrap.dedent(body))
    return str(path)


def run_vitjax(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "vitjax", *args], capture_output=True, text=True, check=False,
                          timeout=timeout, cwd=ROOT)


def run_sweep_file(base, body, arg=""):
    """Writes `body` as BASE/tiny_sweep.py and runs it into BASE/out, two runs at a time (exercises
    --parallel, and subprocess start-up overlaps on the two cores); returns (file, out, process)."""
    sweep_file, out = base / "tiny_sweep.py", base / "out"
    sweep_file.write_text(body)
    run = run_vitjax("sweep", f"{sweep_file}{arg}", "--workdir", str(out), "--parallel", "2")
    return sweep_file, out, run
