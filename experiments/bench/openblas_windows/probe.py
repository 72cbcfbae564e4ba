r"""How fast OpenBLAS (numpy's own copy) runs Swin-T's batched window products, one sgemm per window and
head over 2 OpenMP threads: a feasibility figure for a custom kernel (issue 41), not a vitjax code path.

    D=experiments/bench/openblas_windows; OB=$(ls .venv/lib/python3*/site-packages/numpy.libs/libscipy_openblas64_*.so)
    gcc -O2 -fPIC -shared -fopenmp $D/batched_sgemm.c -o /tmp/libbatched.so "$OB" -Wl,-rpath,$(dirname $OB)
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=2 .venv/bin/python $D/probe.py /tmp/libbatched.so

Prints GFLOP/s per stage and product (the shapes of experiments/bench/window_products.py) and the
largest difference from numpy's einsum.
"""
import ctypes
import sys

import numpy as np

from vitjax.bench import timing

STAGES = (1536, 768, 384, 192)  # windows x heads of Swin-T's stages at 224, batch 8


def main(library: str) -> int:
    batched = ctypes.CDLL(library).batched
    batched.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 4 + [ctypes.c_int]
    rng = np.random.RandomState(0)
    for batch in STAGES:
        q, k = (rng.standard_normal((batch, 49, 32)).astype(np.float32) for _ in range(2))
        a = rng.standard_normal((batch, 49, 49)).astype(np.float32)
        scores, values = np.empty((batch, 49, 49), np.float32), np.empty((batch, 49, 32), np.float32)
        products = {"scores": (lambda: batched(q.ctypes.data, k.ctypes.data, scores.ctypes.data, batch, 49, 49, 32, 112),
                               scores, np.einsum("bnd,bmd->bnm", q, k)),
                    "values": (lambda: batched(a.ctypes.data, k.ctypes.data, values.ctypes.data, batch, 49, 32, 49, 111),
                               values, np.einsum("bnm,bmd->bnd", a, k))}
        for name, (call, out, expected) in products.items():
            call()
            error = float(np.abs(out - expected).max())
            workload = timing.Workload(name, call, flops=2.0 * batch * 49 * 49 * 32)
            timing.calibrate(workload, 0.3)
            timing.alternate([workload], rounds=7)
            print(f"{batch:5d} x {name}: {timing.median(workload.per_second('flops')) / 1e9:6.1f} GFLOP/s "
                  f"(max difference from einsum {error:.1e})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
