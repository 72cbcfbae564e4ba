"""Ctrl-C in a `vitjax` command that does not answer it itself (eval, analyze, bench, export, plot,
data): one line and the shell's status for it, no traceback."""
import signal
import subprocess
import sys

from tests.paths import ROOT

# `vitjax eval` whose evaluation waits, so that the test's Ctrl-C lands inside the command.
_WAITING_EVAL = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, whatever this test inherited
from vitjax import cli
from vitjax.train import reevaluate

def waits(*args, **kwargs):
    print("evaluating", flush=True)
    time.sleep(120)

reevaluate.evaluate_workdir = waits
cli.main(["eval", "--workdir", sys.argv[1]])
"""


def test_ctrl_c_in_eval_is_one_line_and_status_130(tmp_path):
    from vitjax.train.preemption import INTERRUPTED_EXIT_CODE

    proc = subprocess.Popen([sys.executable, "-c", _WAITING_EVAL, str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stdout.readline() == "evaluating\n", proc.stderr.read()[-2000:]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == INTERRUPTED_EXIT_CODE == 130, err[-2000:]
    assert err.strip().splitlines()[-1] == "vitjax eval: stopped by Ctrl-C" and "Traceback" not in err, err[-2000:]
