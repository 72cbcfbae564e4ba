"""Checksums keyed by path verify whatever restores them, and steps saved before (a list) still verify."""
import json
import os

import jax
import numpy as np
import optax
import pytest

from vitjax.train import step as steps
from vitjax.checkpoints import checkpointer, integrity, locations, reader


def _state():
    params = {"dense": {"kernel": np.arange(6, dtype=np.float32).reshape(2, 3), "bias": np.ones(3, np.float32)}}
    return steps.create_state(params, optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3)))


def _save(directory, state):
    ckpt = checkpointer.Checkpointer(directory, async_save=False)
    ckpt.save(4, state, {})
    ckpt.close()
    return os.path.join(locations.step_dir(directory, 4), locations.META, "metadata")  # orbax's JSON item file


def _rewrite_checksums(meta_file, change):
    with open(meta_file) as f:
        meta = json.load(f)
    meta["checksums"] = change(meta["checksums"])
    with open(meta_file, "w") as f:
        json.dump(meta, f)


def _abstract(state):
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype), state)


def test_a_step_recording_a_list_of_checksums_still_verifies(tmp_path):
    """Saved before checksums were keyed by path: a list in the train state's leaf order (step first,
    then params, then the optimiser), which the readers' sorted trees do not follow."""
    directory, state = str(tmp_path / "checkpoints"), _state()
    meta_file = _save(directory, state)
    _rewrite_checksums(meta_file, lambda by_path: [by_path[path] for path in integrity.layout_of(state)])
    step_dir = locations.step_dir(directory, 4)
    np.testing.assert_array_equal(reader.read_params(step_dir)["dense"]["kernel"],
                                  state.params["dense"]["kernel"])
    ckpt = checkpointer.Checkpointer(directory, read_only=True)
    restored, _ = ckpt.restore(4, _abstract(state))
    assert int(restored.step) == 0

    _rewrite_checksums(meta_file, lambda listed: listed[:1] + [listed[1] + 1] + listed[2:])
    with pytest.raises(integrity.CorruptCheckpointError, match="step 4 .*fails its checksums in params/dense/bias"):
        reader.read_params(step_dir)
    with pytest.raises(integrity.CorruptCheckpointError, match="fails its checksums in params/dense/bias"):
        ckpt.restore(4, _abstract(state))
    ckpt.close()


def test_layout_differences_name_each_leaf_once():
    saved = {"a": ((2, 3), "float32"), "b": ((4,), "float32"), "c": ((), "int32")}
    new = {"a": ((2, 5), "float32"), "c": ((), "int64"), "d": ((1,), "float32")}
    assert integrity.layout_differences(saved, new) == [
        "a: saved float32[2, 3] -> new float32[2, 5]", "c: saved int32[] -> new int64[]",
        "d: new float32[1], not in the checkpoint", "b: saved float32[4], not in the new state"]
    assert integrity.layout_differences(saved, new, most=2)[-1] == "... and 2 more leaves"
