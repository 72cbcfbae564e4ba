"""to_global and prefetch: each device gets its own rows of the batch, in order, values intact.

On the test process's single device a sharded and a replicated array look the same, so the check runs
in a subprocess with 8 fake CPU devices (tests/parallel/fake_devices.py).
"""
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from tests.parallel import fake_devices
from vitjax import data

CFG = dict(name="synthetic", pp_eval="value_range(-1, 1)", pp_train="value_range(-1, 1)",
           synthetic=dict(num_test=50, image_shape=(4, 4, 1)))

ON_EIGHT_DEVICES = """
import json
import jax
import numpy as np
from vitjax import data, parallel

CFG = %r

def held(array):
    # {device id: [first row, end row) of the global batch it holds} for a batch-sharded array.
    return {str(s.device.id): [s.index[0].start or 0, s.index[0].stop or array.shape[0]] for s in array.addressable_shards}

def values_match(host, array):
    return all(np.array_equal(np.asarray(s.data), host[s.index]) for s in array.addressable_shards)

out = {"devices": jax.device_count()}
for name, sizes in {"data8": {"data": -1}, "data2_fsdp2_model2": {"data": 2, "fsdp": 2, "model": 2}}.items():
    sharding = parallel.batch_sharding(parallel.make_mesh(sizes))
    host = list(data.eval_batches(CFG, "test", global_batch_size=16))
    on_device = list(data.prefetch(iter(host), sharding, size=3))
    out[name] = {
        "batches": [len(host), len(on_device)],
        "rows": [held(d["image"]) for d in on_device],
        "values_match": all(values_match(h[k], d[k]) for h, d in zip(host, on_device) for k in h),
        "shardings_match": all(d[k].sharding == sharding for d in on_device for k in d),
        "single": values_match(host[1]["label"], data.to_global(host[1], {"image": sharding, "label": sharding,
                                                                        "mask": sharding})["label"]),
    }
print(json.dumps(out))
""" % (CFG,)


def test_to_global_and_prefetch_give_each_device_its_own_rows():
    result = fake_devices.run(ON_EIGHT_DEVICES, devices=8)
    # 16 rows over 8 data-parallel devices: rows 2i, 2i+1 on device i, for each of the 4 batches (50 padded to 64).
    data8 = result["data8"]
    assert data8["batches"] == [4, 4] and data8["values_match"] and data8["shardings_match"] and data8["single"]
    assert data8["rows"] == [{str(i): [2 * i, 2 * i + 2] for i in range(8)}] * 4
    # data 2 x fsdp 2 x model 2: blocks of 4 rows, each on the two devices that differ only in `model`.
    mixed = result["data2_fsdp2_model2"]
    assert mixed["values_match"] and mixed["shardings_match"] and mixed["single"]
    for rows in mixed["rows"]:
        assert sorted(map(tuple, rows.values())) == sorted([(4 * i, 4 * i + 4) for i in range(4)] * 2)


def test_to_global_and_prefetch_keep_values_and_order_on_this_process():
    mesh = Mesh(np.array(jax.devices()), ("data",))
    sharding = NamedSharding(mesh, P("data"))
    batches = data.eval_batches(CFG, "test", global_batch_size=8 * jax.device_count())
    host = list(batches)
    on_device = list(data.prefetch(iter(batches), sharding, size=3))
    assert len(on_device) == len(host)
    for h, d in zip(host, on_device):
        assert isinstance(d["image"], jax.Array) and d["image"].sharding == sharding
        for key in h:
            np.testing.assert_array_equal(np.asarray(d[key]), h[key])
