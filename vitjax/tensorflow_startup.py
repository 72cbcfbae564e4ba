"""How vitjax's processes import TensorFlow: without Keras, which they never use.

vitjax uses TensorFlow for tf.data and for TensorBoard's summary writer (tf.summary), neither of
which needs Keras. Yet TensorFlow's own import eagerly loads Keras 3's optimisers (and through
Keras, matplotlib's pyplot), because tensorflow-cpu requires Keras and registers its optimisers at
start-up: with it, `import vitjax.train.trainer` and TensorBoard's writer cost 9.6 s of CPU, without
it 8.3 s (a 2-vCPU host, paired 3 times beside a running sweep, 2026-12-02). TensorFlow skips that
load when TF_USE_LEGACY_KERAS is set and the legacy tf_keras package is absent, its import error
being expected and ignored. Every `vitjax` command pays TensorFlow's import, a sweep once per run.

The price: `tf.keras` raises ImportError in such a process (so does anything built on it, such as
TensorBoard's hparams plugin). The `vitjax` command sets the variable before anything imports
TensorFlow, and its subprocesses inherit it; a caller who sets it, or who has tf_keras installed,
keeps TensorFlow's ordinary behaviour.
"""
import importlib.util
import os

ENV_LEGACY_KERAS = "TF_USE_LEGACY_KERAS"


def skip_keras(environ=None) -> bool:
    """Sets TF_USE_LEGACY_KERAS=1 in `environ` (default os.environ) so that a TensorFlow imported
    afterwards skips Keras; True when it did. Must run before TensorFlow's first import."""
    environ = os.environ if environ is None else environ
    if ENV_LEGACY_KERAS in environ or importlib.util.find_spec("tf_keras") is not None:
        return False
    environ[ENV_LEGACY_KERAS] = "1"
    return True
