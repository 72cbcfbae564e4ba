"""vitjax: Vision Transformers and BiT baselines in JAX/Flax."""
from vitjax import cpu_flags as _cpu_flags

# Before anything starts JAX's CPU backend, which reads XLA_FLAGS once (see vitjax/cpu_flags.py).
_cpu_flags.apply()
