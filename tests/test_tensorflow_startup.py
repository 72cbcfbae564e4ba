"""TensorFlow without Keras (vitjax/tensorflow_startup.py): what a vitjax process imports and writes."""
import os
import subprocess
import sys

from vitjax import tensorflow_startup

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A fresh process, so that nothing imported before it can hide what it loads.
_LOG_A_RUN = """
import json, sys
from vitjax import rundir, tensorflow_startup
assert tensorflow_startup.skip_keras()
import vitjax.data
from vitjax import metrics_log
log = metrics_log.MetricsLog(sys.argv[1])
log.write(3, {"loss": 1.5})
log.close()
print(json.dumps({"keras": sorted(m for m in sys.modules if m.split(".")[0] == "keras")}))
"""


def test_a_run_logs_to_tensorboard_without_loading_keras(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != tensorflow_startup.ENV_LEGACY_KERAS}
    run = subprocess.run([sys.executable, "-c", _LOG_A_RUN, str(tmp_path)], capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == '{"keras": []}'
    assert "tf_keras" not in run.stderr  # TensorFlow warns when something reaches for tf.keras
    assert [name for name in os.listdir(tmp_path) if name.startswith("events.out.tfevents")]


def test_the_variable_is_set_only_where_the_caller_has_not_chosen():
    environ = {}
    assert tensorflow_startup.skip_keras(environ) and environ == {"TF_USE_LEGACY_KERAS": "1"}
    chosen = {"TF_USE_LEGACY_KERAS": "0"}
    assert not tensorflow_startup.skip_keras(chosen) and chosen == {"TF_USE_LEGACY_KERAS": "0"}
