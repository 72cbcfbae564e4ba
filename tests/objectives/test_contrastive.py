"""CLIP's softmax and SigLIP's sigmoid losses against their formulas, recomputed in numpy on hand-made
embeddings; SigLIP's chunked form on 8 devices equals the loss of the gathered batch, with its gradients."""
import math

import jax.numpy as jnp
import numpy as np
import pytest

from tests.parallel import fake_devices
from vitjax.models.dual_encoder import pairwise_logits
from vitjax.objectives.contrastive import sigmoid_loss, softmax_loss


def _embeddings(n=6, m=None, width=5, seed=0):
    rng = np.random.RandomState(seed)
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)
    return (unit(rng.standard_normal((n, width))).astype(np.float32),
            unit(rng.standard_normal((m or n, width))).astype(np.float32))


def _numpy_softmax_loss(image, text, scale):
    logits = np.exp(scale) * image.astype(np.float64) @ text.T.astype(np.float64)
    terms = []
    for scores in (logits, logits.T):  # each image against the texts, then each text against the images
        for i, row in enumerate(scores):
            terms.append(-(row[i] - np.log(np.sum(np.exp(row)))) / (2 * len(scores)))
    return sum(terms)


def _numpy_sigmoid_loss(image, text, scale, bias):
    total = 0.0
    for i, x in enumerate(image.astype(np.float64)):
        for j, y in enumerate(text.astype(np.float64)):
            z = 1.0 if i == j else -1.0
            total -= math.log(1.0 / (1.0 + math.exp(-z * (math.exp(scale) * x @ y + bias))))
    return total / len(image)


@pytest.mark.parametrize("scale", [0.0, math.log(1 / 0.07)])
def test_softmax_loss_is_the_mean_of_both_cross_entropies(scale):
    image, text = _embeddings()
    loss = softmax_loss(pairwise_logits(jnp.asarray(image), jnp.asarray(text), scale))
    assert float(loss) == pytest.approx(_numpy_softmax_loss(image, text, scale), rel=1e-5)


def test_softmax_loss_by_hand():
    # Two pairs, cosines 1 on the diagonal and 0 off it: each of the four terms is log(1 + e^-1).
    logits = jnp.array([[1.0, 0.0], [0.0, 1.0]])
    assert float(softmax_loss(logits)) == pytest.approx(math.log(1 + math.exp(-1)), rel=1e-6)
    # Asymmetric: only the text -> image direction sees column 0's two large entries.
    logits = jnp.array([[2.0, 0.0], [2.0, 0.0]])
    rows = (-(2 - math.log(math.exp(2) + 1)) - (0 - math.log(math.exp(2) + 1))) / 2
    columns = (-(2 - math.log(2 * math.exp(2))) - (0 - math.log(2))) / 2
    assert float(softmax_loss(logits)) == pytest.approx((rows + columns) / 2, rel=1e-6)


@pytest.mark.parametrize("scale,bias", [(math.log(10), -10.0), (1.3, 0.7)])
def test_sigmoid_loss_sums_every_pair_and_averages_over_images(scale, bias):
    image, text = _embeddings(n=7)
    loss = sigmoid_loss(pairwise_logits(jnp.asarray(image), jnp.asarray(text), scale, bias))
    assert float(loss) == pytest.approx(_numpy_sigmoid_loss(image, text, scale, bias), rel=1e-5)


def test_sigmoid_loss_by_hand():
    # 2 x 2 logits: positives 3 and -1 on the diagonal, negatives 0 and 2 off it.
    logits = jnp.array([[3.0, 0.0], [2.0, -1.0]])
    softplus = lambda x: math.log1p(math.exp(x))  # -log sigmoid(-x)
    expected = (softplus(-3.0) + softplus(0.0) + softplus(2.0) + softplus(1.0)) / 2
    assert float(sigmoid_loss(logits)) == pytest.approx(expected, rel=1e-6)


CHUNKED_CHECK = """
import functools, json
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, PartitionSpec as P
from vitjax.models.dual_encoder import pairwise_logits
from vitjax.objectives.contrastive import sigmoid_loss, sigmoid_loss_chunked

rng = np.random.RandomState(0)
n, width = 8 * 3, 16  # 3 pairs per device
image, text = (rng.standard_normal((n, width)).astype(np.float32) for _ in range(2))
image, text = (x / np.linalg.norm(x, axis=-1, keepdims=True) for x in (image, text))
scale, bias = np.float32(np.log(10.0)), np.float32(-2.5)  # a bias that keeps the positives' share visible

def gathered(image, text, scale, bias):
    return sigmoid_loss(pairwise_logits(image, text, scale, bias))

mesh = Mesh(np.array(jax.devices()), ("data",))
chunked = jax.shard_map(functools.partial(sigmoid_loss_chunked, axis_name="data"), mesh=mesh,
                        in_specs=(P("data"), P("data"), P(), P()), out_specs=P())
results = {}
for name, fn in (("gathered", gathered), ("chunked", chunked)):
    value, grads = jax.jit(jax.value_and_grad(fn, argnums=(0, 1, 2, 3)))(image, text, scale, bias)
    results[name] = (float(value), [np.asarray(g, np.float64) for g in grads])
(value_g, grads_g), (value_c, grads_c) = results["gathered"], results["chunked"]
rel = lambda a, b: float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
print(json.dumps({"devices": len(jax.devices()), "loss_gathered": value_g, "loss_chunked": value_c,
                  "loss_rel": abs(value_c - value_g) / abs(value_g),
                  "grad_rel": [rel(c, g) for c, g in zip(grads_c, grads_g)],
                  "grad_norms": [float(np.linalg.norm(g)) for g in grads_g]}))
"""


def test_chunked_sigmoid_loss_equals_the_gathered_one_on_8_devices():
    result = fake_devices.run(CHUNKED_CHECK, devices=8)
    print(result)  # the measured differences, for the record (pytest -s)
    assert result["loss_rel"] < 1e-6, result
    assert max(result["grad_rel"]) < 1e-5, result  # images, texts, logit scale, logit bias
    assert min(result["grad_norms"]) > 1e-3, result  # every gradient is there to compare
