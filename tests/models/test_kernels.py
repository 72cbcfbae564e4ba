"""The optional kernels of vitjax/models/kernels.py: LayerNorm's hand-written backward pass gives flax's
values and gradients, and the heads-major attention layout the same outputs and gradients as jax.nn's.

Every comparison is jitted, as the kernels run in training: one compilation per side instead of one per
operation run eagerly (eagerly, these few tests took about a minute of the suite's compile time)."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax.models import ViT, attention, kernels
from vitjax.models.layernorm import LayerNorm


def _close(a, b, tol=1e-5):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


def _perturbed_init(module, scale, *inputs):
    """`module`'s initial variables (key 1) plus `scale` x normal noise (key 2), in one program,
    so no zero bias or unit scale can hide a term."""
    def init(*inputs):
        params = module.init(jax.random.key(1), *inputs)
        return jax.tree.map(lambda p: p + scale * jax.random.normal(jax.random.key(2), p.shape), params)
    return jax.jit(init)(*inputs)


def _outputs_and_grads(module, loss, params, *inputs):
    """Jitted: (module.apply(params, *inputs), the gradients of loss(module, params, *inputs) with respect to
    the parameters and every input)."""
    argnums = tuple(range(1, len(inputs) + 2))
    return jax.jit(lambda p, *a: (module.apply(p, *a), jax.grad(loss, argnums=argnums)(module, p, *a)))(
        params, *inputs)


def test_layernorm_matches_flax_layernorm_with_gradients():
    x = 3.0 + 2.0 * jax.random.normal(jax.random.key(0), (4, 7, 16))
    ours, theirs = LayerNorm(epsilon=1e-6, hand_vjp=True), nn.LayerNorm(epsilon=1e-6)
    params = _perturbed_init(theirs, 0.3, x)
    assert jax.tree.structure(jax.eval_shape(ours.init, jax.random.key(1), x)) == jax.tree.structure(params)

    def loss(module, params, x):
        return jnp.sum(jnp.cos(module.apply(params, x)) * jnp.arange(16.0))

    (y_ours, g_ours), (y_theirs, g_theirs) = (_outputs_and_grads(m, loss, params, x) for m in (ours, theirs))
    _close(y_ours, y_theirs)
    _close(g_ours, g_theirs, tol=1e-4)


@pytest.mark.parametrize("cross", [False, True])
def test_heads_major_fused_attention_equals_the_jax_nn_layout(cross):
    """heads_major=True takes the heads-major einsum path with fused projections; the default takes
    jax.nn's [batch, length, heads, head_dim] path with the same weights."""
    q = jax.random.normal(jax.random.key(0), (2, 9, 32))
    kv = jax.random.normal(jax.random.key(1), (2, 5, 32)) if cross else q
    fast = attention.MultiHeadAttention(num_heads=4, heads_major=True)
    plain = attention.MultiHeadAttention(num_heads=4)
    params = _perturbed_init(fast, 0.1, q, kv)

    def loss(module, params, q, kv):
        return jnp.sum(jnp.sin(module.apply(params, q, kv)))

    (y_fast, g_fast), (y_plain, g_plain) = (_outputs_and_grads(m, loss, params, q, kv) for m in (fast, plain))
    _close(y_fast, y_plain)
    _close(g_fast, g_plain, tol=1e-4)


@pytest.mark.parametrize("kernel", kernels.KERNELS)
def test_each_model_kernel_gives_the_same_loss_and_gradients(kernel):
    """A ViT with one hand-written kernel switched on computes what the default computes."""
    x = jax.random.normal(jax.random.key(0), (3, 8, 8, 2))
    labels = jax.nn.one_hot(jnp.arange(3), 5)

    def loss_and_grads(kernels_on):
        model = ViT(num_classes=5, patch_size=4, width=16, depth=2, mlp_dim=24, num_heads=2, head_zero_init=False,
                    kernels=kernels_on)

        @jax.jit
        def run(x, labels):
            params = model.init(jax.random.key(1), x)["params"]
            loss = lambda p: -jnp.mean(jnp.sum(jax.nn.log_softmax(model.apply({"params": p}, x)) * labels, -1))
            return jax.value_and_grad(loss)(params)
        return run(x, labels)

    _close(loss_and_grads((kernel,)), loss_and_grads(()), tol=1e-5)


def test_unknown_kernel_names_the_known_ones():
    model = ViT(num_classes=5, patch_size=4, width=16, depth=1, mlp_dim=24, num_heads=2, kernels=("fast",))
    with pytest.raises(ValueError, match="unknown model kernels.*layernorm_vjp"):
        model.init(jax.random.key(0), jnp.zeros((1, 8, 8, 1)))
