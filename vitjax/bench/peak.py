"""The machine's peak: a large jitted matmul measured in the same run, and datasheet figures.

MFU (model FLOP utilisation) = achieved FLOP/s / peak FLOP/s. On a CPU there is no trustworthy
datasheet figure (clock, vector units and load vary), so the peak is what a large jitted matmul reaches
here, now, alternating with the models. On accelerators the dense bf16 datasheet peak is reported too.
"""
import jax
import jax.numpy as jnp
import numpy as np

from vitjax.bench.timing import Workload

# Dense bf16 peaks (FLOP/s, no sparsity) by a substring of jax's device_kind.
DATASHEET_BF16 = {
    "H200": 989e12,
    "H100": 989e12,
    "A100": 312e12,
    "TPU v4": 275e12,
    "TPU v5 lite": 197e12,
    "TPU v5e": 197e12,
}


def datasheet_peak(device_kind: str) -> float | None:
    for name, flops in DATASHEET_BF16.items():
        if name.lower() in device_kind.lower():
            return flops
    return None


def default_size_and_dtype(backend: str) -> tuple[int, str]:
    # Large enough to be compute-bound: 2048 on CPUs (~17 GFLOP per call), 8192 bf16 on accelerators.
    return (2048, "float32") if backend == "cpu" else (8192, "bfloat16")


def matmul_workload(size: int, dtype: str, compiler_options: dict | None = None) -> Workload:
    """[size, size] @ [size, size] as a jitted JAX call; flops = 2 size^3."""
    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.standard_normal((size, size)), dtype)
    b = jnp.asarray(rng.standard_normal((size, size)), dtype)
    compiled = jax.jit(jnp.matmul).lower(a, b).compile(compiler_options=compiler_options or None)
    return Workload(f"matmul {size}x{size} {dtype} (jax)", lambda: compiled(a, b).block_until_ready(),
                    flops=2.0 * size ** 3)


def torch_matmul_workload(size: int, dtype: str, device: str) -> Workload:
    """The same product in PyTorch, for reference: whichever library is faster sets the bar."""
    import torch

    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=gen).to(device=device, dtype=torch_dtype)
    b = torch.randn(size, size, generator=gen).to(device=device, dtype=torch_dtype)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def call():
        out = a @ b
        sync()
        return out

    return Workload(f"matmul {size}x{size} {dtype} (torch)", call, flops=2.0 * size ** 3)
