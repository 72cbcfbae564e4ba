"""The optional kernels of vitjax/models/kernels.py: LayerNorm's hand-written backward pass gives flax's
values and gradients, and the heads-major attention layout the same outputs and gradients as jax.nn's."""
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


def test_layernorm_matches_flax_layernorm_with_gradients():
    x = 3.0 + 2.0 * jax.random.normal(jax.random.key(0), (4, 7, 16))
    ours, theirs = LayerNorm(epsilon=1e-6, hand_vjp=True), nn.LayerNorm(epsilon=1e-6)
    params = theirs.init(jax.random.key(1), x)
    params = jax.tree.map(lambda p: p + 0.3 * jax.random.normal(jax.random.key(2), p.shape), params)
    assert jax.tree.structure(ours.init(jax.random.key(1), x)) == jax.tree.structure(params)

    def loss(module, params, x):
        return jnp.sum(jnp.cos(module.apply(params, x)) * jnp.arange(16.0))

    _close(ours.apply(params, x), theirs.apply(params, x))
    _close(jax.grad(loss, argnums=(1, 2))(ours, params, x), jax.grad(loss, argnums=(1, 2))(theirs, params, x),
           tol=1e-4)


@pytest.mark.parametrize("cross", [False, True])
def test_heads_major_fused_attention_equals_the_jax_nn_layout(cross):
    """heads_major=True takes the heads-major einsum path with fused projections; the default takes
    jax.nn's [batch, length, heads, head_dim] path with the same weights."""
    q = jax.random.normal(jax.random.key(0), (2, 9, 32))
    kv = jax.random.normal(jax.random.key(1), (2, 5, 32)) if cross else q
    fast = attention.MultiHeadAttention(num_heads=4, heads_major=True)
    plain = attention.MultiHeadAttention(num_heads=4)
    params = fast.init(jax.random.key(2), q, kv)
    params = jax.tree.map(lambda p: p + 0.1 * jax.random.normal(jax.random.key(3), p.shape), params)

    def loss(module, params, q, kv):
        return jnp.sum(jnp.sin(module.apply(params, q, kv)))

    _close(fast.apply(params, q, kv), plain.apply(params, q, kv))
    _close(jax.grad(loss, argnums=(1, 2, 3))(fast, params, q, kv),
           jax.grad(loss, argnums=(1, 2, 3))(plain, params, q, kv), tol=1e-4)


@pytest.mark.parametrize("kernel", kernels.KERNELS)
def test_each_model_kernel_gives_the_same_loss_and_gradients(kernel):
    """A ViT with one hand-written kernel switched on computes what the default computes."""
    x = jax.random.normal(jax.random.key(0), (3, 8, 8, 2))
    labels = jax.nn.one_hot(jnp.arange(3), 5)

    def loss_and_grads(kernels_on):
        model = ViT(num_classes=5, patch_size=4, width=16, depth=2, mlp_dim=24, num_heads=2, head_zero_init=False,
                    kernels=kernels_on)
        params = model.init(jax.random.key(1), x)["params"]
        loss = lambda p: -jnp.mean(jnp.sum(jax.nn.log_softmax(model.apply({"params": p}, x)) * labels, -1))
        return jax.value_and_grad(loss)(params)

    _close(loss_and_grads((kernel,)), loss_and_grads(()), tol=1e-5)


def test_unknown_kernel_names_the_known_ones():
    model = ViT(num_classes=5, patch_size=4, width=16, depth=1, mlp_dim=24, num_heads=2, kernels=("fast",))
    with pytest.raises(ValueError, match="unknown model kernels.*layernorm_vjp"):
        model.init(jax.random.key(0), jnp.zeros((1, 8, 8, 1)))
