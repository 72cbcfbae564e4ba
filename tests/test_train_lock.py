"""One trainer per run: train.lock names its holder and dies with it."""
import os
import socket
import subprocess
import sys

import pytest

from vitjax import train_lock


def test_a_second_lock_is_refused_naming_the_holder(tmp_path):
    run_dir = str(tmp_path / "run")
    held = train_lock.lock(run_dir)
    with pytest.raises(train_lock.WorkdirInUse, match=rf"{run_dir} is in use by another vitjax train "
                                                  rf"\(pid {os.getpid()} on host {socket.gethostname()}, since"):
        train_lock.lock(run_dir)
    held.release()
    train_lock.lock(run_dir).release()


def test_a_lock_dies_with_its_process(tmp_path):
    """However the holder ends (here SIGKILL), the OS drops its lock: nothing stale is left."""
    run_dir = str(tmp_path / "run")
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import time; from vitjax import train_lock; train_lock.lock({run_dir!r}); "
                               f"print('locked', flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(train_lock.WorkdirInUse, match=f"pid {holder.pid} "):
            train_lock.lock(run_dir)
    finally:
        holder.kill()
        holder.wait()
    train_lock.lock(run_dir).release()


