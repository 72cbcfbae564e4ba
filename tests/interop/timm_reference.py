"""Helpers of the timm cross-checks (tests/interop/test_*timm*.py): random parameters on a vitjax model's
exact tree, jittered timm weights, test images, timm's logits, and the relative error they are compared by."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

torch = pytest.importorskip("torch")


def rel_err(ours, theirs):
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    return float(np.linalg.norm(ours - theirs) / np.linalg.norm(theirs))


def random_params(model, image_size, seed=0):
    """Random parameters for `model`'s exact tree (shapes from jax.eval_shape: nothing to compile).

    Every leaf is drawn, including those the model initialises to zero or one (head, biases, norm
    scales, the hybrid's zero-init last GroupNorm), so a dropped, swapped or mis-transposed parameter
    shows in the logits. Scales follow the usual fan-in rule so activations stay O(1).
    """
    images = jax.ShapeDtypeStruct((1, image_size, image_size, 3), jnp.float32)
    shapes = nn.meta.unbox(jax.eval_shape(lambda x: model.init(jax.random.key(0), x), images)["params"])
    rng = np.random.RandomState(seed)

    def draw(path, leaf):
        names = [getattr(p, "key", "") for p in path]
        noise = rng.standard_normal(leaf.shape).astype(np.float32)
        shape = leaf.shape[1:] if "encoderblock" in names else leaf.shape  # scanned: leading layer axis
        if names[-1] == "scale":
            return 1.0 + 0.1 * noise
        if names[-1] == "bias":
            return 0.1 * noise
        if names[-1] == "kernel":
            if len(names) > 1 and names[-2] in ("query", "key", "value"):
                fan_in = shape[0]
            elif len(names) > 1 and names[-2] == "out":
                fan_in = shape[0] * shape[1]
            else:
                fan_in = int(np.prod(shape[:-1]))
            return noise / np.sqrt(fan_in)
        return 0.2 * noise  # position embeddings, CLS token, MAP probe

    return jax.tree_util.tree_map_with_path(draw, shapes)


def jitter_timm(model, seed=0, scale=0.05):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn(p.shape, generator=gen))
    return model.eval()


def images(image_size, batch=2, seed=0):
    return np.random.RandomState(seed).randn(batch, image_size, image_size, 3).astype(np.float32)


def timm_logits(model, x, pre_logits=False):
    with torch.no_grad():
        t = torch.from_numpy(x.transpose(0, 3, 1, 2))
        if pre_logits:
            return model.forward_head(model.forward_features(t), pre_logits=True).numpy()
        return model(t).numpy()
