"""Optional hand-written kernels a transformer can be asked to use: their names and what each changes.

    ViT(num_classes=10, variant="Ti/4", kernels=("layernorm_vjp", "heads_major"))

Every kernel computes what the default computes (same parameters, same values up to float rounding);
only how XLA is asked to compute it differs. None is on by default: the models take no decision from
the backend they run on. `vitjax train` and `vitjax bench` switch on the set measured to pay on CPU
(`vitjax.xla_cpu.MODEL_KERNELS`) when the backend is the CPU and the config does not name its own
`model.kernels`. Each was kept only for a measured gain of at least 5% on the default Fashion-MNIST
config's train step, measured side by side in one process (experiments/results/bench/README.md has
the figures and the command; hand-written Dense and GELU backward passes gained 1-3% and were removed).

  layernorm_vjp  LayerNorm's backward pass in closed form (two row reductions, one elementwise pass)
                 instead of the dozen passes autodiff left to XLA:CPU.
  heads_major    attention in [batch, heads, length, head_dim] layout through explicit einsums, so the
                 projections produce that layout directly and no transpose of q, k, v or the output
                 is needed; the default hands [batch, length, heads, head_dim] to
                 `jax.nn.dot_product_attention` (`attention_implementation="cudnn"`: cuDNN on GPU).
"""
KERNELS = ("layernorm_vjp", "heads_major")


def check(kernels) -> None:
    """Raises ValueError naming any unknown kernel."""
    unknown = [k for k in kernels if k not in KERNELS]
    if unknown or isinstance(kernels, str):
        raise ValueError(f"unknown model kernels {unknown or kernels!r}: `kernels` is a tuple of names from "
                         f"{KERNELS} (or () for none)")
