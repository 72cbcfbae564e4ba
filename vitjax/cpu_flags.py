"""XLA:CPU settings that vitjax applies when it is imported, before JAX starts its CPU backend.

    --xla_cpu_experimental_ynn_fusion_type=reduce

jaxlib 0.10 hands matmuls, reductions and elementwise chains to its YNNPACK library by default. On the
project's 2-core machines a ViT-Ti train step (28x28, patch 4, batch 128) ran 10-13% faster with
YNNPACK kept for reductions only, so that matmuls go to XLA's Eigen kernels and elementwise chains to
XLA's own fusions (measured side by side in one process with per-compilation options, 8 alternating
rounds, on one pinned core and on two; `vitjax bench` compares the settings end to end). The YNNPACK
elementwise fusions also materialised every LayerNorm scale broadcast to the activations' shape.

The flag only exists in recent jaxlibs (an unknown flag makes XLA abort), so it is set for the
jaxlib versions it was measured on. It is left alone when XLA_FLAGS already names it (your choice
wins), with VITJAX_XLA_CPU_DEFAULTS=0, and has no effect once a backend has started. Accelerators ignore
xla_cpu_* flags.
"""
import os

YNN_FLAG = "--xla_cpu_experimental_ynn_fusion_type"
MEASURED_JAXLIB = ("0.10.",)  # re-measure before adding versions


def _jaxlib_version() -> str:
    try:
        from jaxlib import version
    except ImportError:
        return ""
    return getattr(version, "__version__", "")


def apply() -> bool:
    """Adds the flag to XLA_FLAGS when it applies; returns whether it did."""
    if os.environ.get("VITJAX_XLA_CPU_DEFAULTS", "1") == "0":
        return False
    flags = os.environ.get("XLA_FLAGS", "")
    if YNN_FLAG in flags or not _jaxlib_version().startswith(MEASURED_JAXLIB):
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {YNN_FLAG}=reduce".strip()
    return True
