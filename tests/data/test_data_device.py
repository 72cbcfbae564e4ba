"""to_global and prefetch on the local device(s)."""

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from vitjax import data


def test_to_global_and_prefetch_keep_values_and_order():
    mesh = Mesh(np.array(jax.devices()), ("data",))
    sharding = NamedSharding(mesh, P("data"))
    cfg = dict(
        name="synthetic",
        pp_eval="value_range(-1, 1)",
        pp_train="value_range(-1, 1)",
        synthetic=dict(num_test=50, image_shape=(4, 4, 1)),
    )
    batches = data.eval_batches(cfg, "test", global_batch_size=8 * jax.device_count())
    host = list(batches)
    on_device = list(data.prefetch(iter(batches), sharding, size=3))
    assert len(on_device) == len(host)
    for h, d in zip(host, on_device):
        assert isinstance(d["image"], jax.Array) and d["image"].sharding == sharding
        for key in h:
            np.testing.assert_array_equal(np.asarray(d[key]), h[key])
    single = data.to_global(host[0], {"image": sharding, "label": sharding, "mask": sharding})
    np.testing.assert_array_equal(np.asarray(single["label"]), host[0]["label"])
