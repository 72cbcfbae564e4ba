"""vitjax.parallel on its own: mesh sizes, rule parsing, which parameters get split, the arithmetic
of per-device bytes, and the multi-host switch. Shapes are abstract (eval_shape) and most meshes that
need 8 devices are jax.sharding.AbstractMesh; what needs real devices (a mesh taking "the rest" of
them, the batch check, where a batch's rows land) runs once in a subprocess with 8 fake CPU devices."""
import math

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
import pytest
from jax.sharding import AbstractMesh, PartitionSpec as P

from tests.parallel import fake_devices
from vitjax import models, parallel


def _mesh(data=1, fsdp=1, model=1):
    return AbstractMesh((data, fsdp, model), parallel.MESH_AXES)


def _boxed_params(model, image=(32, 32, 3)):
    return jax.eval_shape(lambda: model.init(jax.random.key(0), jnp.zeros((1, *image)), train=False))["params"]


def _boxed_state(model, image):
    """Parameters and Adam's two moments, boxed like the trainer's TrainState."""
    params = _boxed_params(model, image)
    return jax.eval_shape(lambda p: (p, optax.adamw(1e-3).init(p)), params)


# --- mesh --------------------------------------------------------------------------------------

ON_EIGHT_DEVICES = """
import json
import jax
import numpy as np
from vitjax import parallel

def mesh(sizes):
    try:
        m = parallel.make_mesh(sizes)
    except ValueError as error:
        return {"error": str(error)}
    return {"shape": dict(m.shape), "distinct_devices": len({d.id for d in m.devices.flat}),
            "auto": all(t == jax.sharding.AxisType.Auto for t in m.axis_types)}

def batch_check(sizes, batch):
    try:
        parallel.check_batch_size(batch, parallel.make_mesh(sizes))
    except ValueError as error:
        return str(error)
    return None

def rows_per_device(sizes, batch):
    # Row i of the batch holds the value i: each device's shard names the rows it holds.
    x = jax.device_put(np.arange(batch * 3.0).reshape(batch, 3), parallel.batch_sharding(parallel.make_mesh(sizes)))
    return sorted(sorted(int(v) for v in np.asarray(s.data)[:, 0] // 3) for s in x.addressable_shards)

print(json.dumps({
    "devices": jax.device_count(),
    "meshes": {name: mesh(sizes) for name, sizes in {
        "rest_to_data": {"data": -1}, "rest_to_data_fsdp2": {"data": -1, "fsdp": 2},
        "rest_to_fsdp": {"data": 2, "fsdp": -1, "model": 2}, "not_dividing": {"fsdp": 3, "data": -1},
        "too_few": {"data": 2, "fsdp": 2}}.items()},
    "batch_checks": {"32_over_data8": batch_check({"data": -1}, 32), "36_over_data8": batch_check({"data": -1}, 36),
                     "36_over_2x2x2": batch_check({"data": 2, "fsdp": 2, "model": 2}, 36),
                     "30_over_2x2x2": batch_check({"data": 2, "fsdp": 2, "model": 2}, 30)},
    "rows_data8": rows_per_device({"data": -1}, 16),
    "rows_2x2x2": rows_per_device({"data": 2, "fsdp": 2, "model": 2}, 16),
}))
"""


@pytest.fixture(scope="module")
def on_eight_devices():
    return fake_devices.run(ON_EIGHT_DEVICES, devices=8)


def test_mesh_takes_the_rest_of_the_devices(on_eight_devices):
    meshes = on_eight_devices["meshes"]
    assert meshes["rest_to_data"] == {"shape": {"data": 8, "fsdp": 1, "model": 1}, "distinct_devices": 8, "auto": True}
    assert meshes["rest_to_data_fsdp2"]["shape"] == {"data": 4, "fsdp": 2, "model": 1}
    assert meshes["rest_to_fsdp"]["shape"] == {"data": 2, "fsdp": 2, "model": 2}
    assert meshes["rest_to_fsdp"]["distinct_devices"] == 8
    assert "(product 3) do not divide the 8 devices" in meshes["not_dividing"]["error"]
    assert "needs 4 devices but 8 are available" in meshes["too_few"]["error"]


def test_batch_check_counts_data_and_fsdp_but_not_model(on_eight_devices):
    checks = on_eight_devices["batch_checks"]
    assert checks["32_over_data8"] is None and checks["36_over_2x2x2"] is None  # data x fsdp = 4
    assert "not divisible by the data-parallel size 8" in checks["36_over_data8"] and "e.g. 40" in checks["36_over_data8"]
    assert "not divisible by the data-parallel size 4" in checks["30_over_2x2x2"] and "e.g. 32" in checks["30_over_2x2x2"]


def test_a_batch_is_split_over_data_and_fsdp_and_repeated_over_model(on_eight_devices):
    # 16 rows over 8 data-parallel devices: 2 consecutive rows each, every row once.
    assert on_eight_devices["rows_data8"] == [[2 * i, 2 * i + 1] for i in range(8)]
    # Over data 2 x fsdp 2 x model 2: 4 blocks of 4 rows, each block on the 2 devices of a model pair.
    assert on_eight_devices["rows_2x2x2"] == sorted([list(range(4 * i, 4 * i + 4)) for i in range(4)] * 2)


@pytest.mark.parametrize("sizes, phrase", [
    ({"data": 2, "fsdp": 4}, "needs 8 devices but 1 are available"),
    ({"data": -1, "fsdp": -1}, "at most one mesh axis may be -1"),
    ({"data": 0}, "positive or -1"),
    ({"fsdp": 3, "data": -1}, "do not divide the 1 devices"),
    ({"pipeline": 2}, "unknown mesh axes ['pipeline']"),
])
def test_bad_mesh_names_the_fix(sizes, phrase):
    with pytest.raises(ValueError) as error:
        parallel.make_mesh(sizes)
    assert phrase in str(error.value)


def test_batch_check_names_a_valid_size():
    with pytest.raises(ValueError, match=r"not divisible by the data-parallel size 8 .* e\.g\. 40"):
        parallel.check_batch_size(36, _mesh(data=2, fsdp=4))


# --- rules -------------------------------------------------------------------------------------

def test_presets():
    assert parallel.rules_for("data") == (("batch", ("data", "fsdp")),)
    fsdp = dict(parallel.rules_for("fsdp"))
    assert fsdp["embed"] == "fsdp" and fsdp["conv_out"] == "fsdp" and "mlp" not in fsdp
    tp = dict(parallel.rules_for("fsdp_tp"))
    assert tp["mlp"] == "model" and tp["heads"] == "model"


def test_overrides_and_custom_rules():
    assert dict(parallel.rules_for("fsdp,mlp=model"))["mlp"] == "model"
    assert "heads" not in dict(parallel.rules_for("fsdp_tp,heads="))
    custom = dict(parallel.rules_for("embed=fsdp, batch=data+fsdp"))
    assert custom == {"batch": ("data", "fsdp"), "embed": "fsdp"}
    assert dict(parallel.rules_for("embed=fsdp"))["batch"] == ("data", "fsdp")  # batch split kept


@pytest.mark.parametrize("spec, phrase", [
    ("zero3", "unknown sharding preset 'zero3'"),
    ("fsdp,data", "only the first item may be a preset"),
    ("fsdp,width=fsdp", "unknown logical axis 'width'"),
    ("fsdp,mlp=tensor", "distinct mesh axes"),
    ("fsdp,batch=data+data", "distinct mesh axes"),
    ("", "empty"),
])
def test_bad_rules_name_the_fix(spec, phrase):
    with pytest.raises(ValueError) as error:
        parallel.rules_for(spec)
    assert phrase in str(error.value)


# --- which parameters are split ------------------------------------------------------------------

MODELS = {
    "vit_tok_prelogits": dict(name="vit", variant="Ti/16", representation_size=192),
    "vit_map_scan": dict(name="vit", variant="Ti/16", pool="map", scan=True),
    "hybrid": dict(name="vit", variant="Ti/16", resnet="R50"),
    "bit": dict(name="bit", variant="R26x1"),
    "mae": dict(name="mae", variant="Ti/16", decoder_width=64, decoder_depth=1, decoder_heads=2),
}


@pytest.mark.parametrize("which", sorted(MODELS))
def test_every_matrix_has_logical_names(which):
    """Only vectors (biases, norm scales; stacked under nn.scan) may be left unnamed: replicated."""
    kwargs = dict(MODELS[which])
    scanned = kwargs.get("scan", False)
    model = models.build(kwargs.pop("name"), 10, **kwargs)
    boxed = _boxed_params(model)
    shapes = {jax.tree_util.keystr(k): v.shape for k, v in jax.tree_util.tree_flatten_with_path(nn.unbox(boxed))[0]}
    for path, names in parallel.logical_names(boxed).items():
        vector_dims = 2 if scanned and "encoderblock" in path else 1
        if names is None:
            assert len(shapes[path]) <= vector_dims, f"{path} {shapes[path]} has no logical axis names"
        else:
            assert len(names) == len(shapes[path]), path
            assert set(names) - {None} <= set(parallel.LOGICAL_AXES), (path, names)


def test_head_and_pre_logits_are_split_under_fsdp():
    model = models.build("vit", 1000, variant="Ti/16", representation_size=192)
    shardings = parallel.shardings_of(_boxed_params(model), _mesh(fsdp=8), parallel.rules_for("fsdp"))
    assert shardings["head"]["kernel"].spec == P("fsdp", None)
    assert shardings["pre_logits"]["kernel"].spec == P("fsdp", None)
    assert shardings["head"]["bias"].spec == P()


def test_uneven_dimension_is_replicated_not_padded():
    # ViT-Ti has 3 heads; over model=2 they stay whole, while its MLP (768) splits.
    model = models.build("vit", 10, variant="Ti/16")
    shardings = parallel.shardings_of(_boxed_params(model), _mesh(fsdp=2, model=2), parallel.rules_for("fsdp_tp"))
    block = shardings["Transformer"]["encoderblock_0"]
    assert block["MultiHeadDotProductAttention_0"]["query"]["kernel"].spec == P("fsdp", None, None)
    assert block["MlpBlock_0"]["Dense_0"]["kernel"].spec == P("fsdp", "model")


@pytest.mark.parametrize("preset, mesh, share, rel", [
    ("data", _mesh(data=8), 1.0, 1e-9),
    ("fsdp", _mesh(fsdp=8), 1 / 8, 0.01),  # norms and biases, 0.1% of the parameters, stay whole
    ("fsdp", _mesh(data=2, fsdp=4), 1 / 4, 0.01),
    # The patch embedding, position embedding and head have no heads/MLP axis: split 4 ways, not 8.
    ("fsdp_tp", _mesh(fsdp=4, model=2), 1 / 8, 0.03),
])
def test_vit_b16_state_per_device(preset, mesh, share, rel):
    """Parameters + Adam moments of ViT-B/16 (86.6M parameters): what each device keeps."""
    model = models.build("vit", 1000, variant="B/16")
    boxed = _boxed_state(model, (224, 224, 3))
    shardings = parallel.shardings_of(boxed, mesh, parallel.rules_for(preset))
    abstract = jax.tree.map(lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), nn.unbox(boxed),
                            shardings)
    sizes = parallel.bytes_per_device(abstract)
    params = sum(math.prod(x.shape) for x in jax.tree.leaves(nn.unbox(boxed)[0]))
    assert 86_000_000 < params < 87_000_000
    assert sizes["total"] == pytest.approx(3 * 4 * params, rel=1e-6)  # fp32 params, mu, nu
    assert sizes["per_device"] / sizes["total"] == pytest.approx(share, rel=rel)


# --- multi-host switch ---------------------------------------------------------------------------

@pytest.fixture
def no_cluster(monkeypatch):
    for env in (parallel.ENV_COORDINATOR, parallel.ENV_NUM_PROCESSES, parallel.ENV_PROCESS_ID):
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setattr(parallel, "on_cloud_tpu_vm", lambda: False)
    calls = []
    monkeypatch.setattr(jax.distributed, "initialize", lambda **kw: calls.append(kw))
    return calls


def test_single_process_is_left_alone(no_cluster):
    assert parallel.initialize_distributed() is False
    assert parallel.initialize_distributed(num_processes=1) is False
    assert parallel.initialize_distributed("h:1", 2, 0, mode="off") is False
    assert no_cluster == []


def test_flags_or_environment_start_a_multi_process_run(no_cluster, monkeypatch):
    parallel.initialize_distributed("localhost:1234", 2, 1)
    monkeypatch.setenv(parallel.ENV_COORDINATOR, "10.0.0.1:8476")
    monkeypatch.setenv(parallel.ENV_NUM_PROCESSES, "4")
    monkeypatch.setenv(parallel.ENV_PROCESS_ID, "3")
    parallel.initialize_distributed()
    assert no_cluster == [dict(coordinator_address="localhost:1234", num_processes=2, process_id=1),
                          dict(coordinator_address="10.0.0.1:8476", num_processes=4, process_id=3)]


def test_tpu_vm_and_on_mode_let_jax_detect_the_cluster(no_cluster, monkeypatch):
    parallel.initialize_distributed(mode="on")
    monkeypatch.setattr(parallel, "on_cloud_tpu_vm", lambda: True)
    parallel.initialize_distributed()
    assert no_cluster == [dict(coordinator_address=None, num_processes=None, process_id=None)] * 2


@pytest.mark.parametrize("args, phrase", [
    (dict(num_processes=2, process_id=0), "missing ['--coordinator_address']"),
    (dict(coordinator_address="h:1", num_processes=2, process_id=2), "process_id must be in [0, num_processes=2)"),
    (dict(mode="sometimes"), "'auto', 'on' or 'off'"),
])
def test_incomplete_multi_process_settings_name_the_fix(no_cluster, args, phrase):
    with pytest.raises(ValueError) as error:
        parallel.initialize_distributed(**args)
    assert phrase in str(error.value)
    assert no_cluster == []
