"""Scale-out scenarios, run in a subprocess that sets the fake device count before importing jax.

    python -m tests.parallel.harness eight OUT_DIR
    python -m tests.parallel.harness one OUT_DIR GO_FILE FSDP_CHECKPOINTS MULTIPROCESS_CHECKPOINTS

Each scenario trains the tiny ViT of tests/parallel/tiny_config.py with the trainer's own pieces
(plan, state_spec, init_state, compile_train_step, the data pipeline, the Checkpointer) and records
its per-step losses, its final parameters (OUT_DIR/<name>.npz) and facts about its shardings in
OUT_DIR/results.json. The test module compares those across processes. The trainer itself (eval,
logging) is exercised by the multi-process run, which goes through the `vitjax train` command.
"""
import json
import os
import sys
import time

if __name__ == "__main__":
    DEVICES = {"eight": 8, "one": 1}[sys.argv[1]]
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               f" --xla_force_host_platform_device_count={DEVICES}")

import flax.linen as nn  # noqa: E402  (after XLA_FLAGS)
import jax  # noqa: E402
import numpy as np  # noqa: E402

from tests.parallel import tiny_config  # noqa: E402
from vitjax import data, parallel  # noqa: E402
from vitjax.train import trainer  # noqa: E402
from vitjax.checkpoints import checkpointer

STEPS = 20
SAVE_AT = 10


def make_config(mesh=None, sharding="data", **overrides):
    c = tiny_config.get_config(f"steps={STEPS}")
    c.mesh = dict(data=-1, fsdp=1, model=1) if mesh is None else mesh
    c.sharding = sharding
    for key, value in overrides.items():
        setattr(c, key, value)
    return c


class Run:
    """One config's plan, shardings and compiled step; trains from a state for a range of steps."""

    def __init__(self, config):
        self.config = config
        self.plan = trainer.plan(config)
        self.spec = trainer.state_spec(config, self.plan)
        self.init_key, self.dropout_key = jax.random.split(jax.random.key(config.seed))
        self.compiled, self.batch_sharding = trainer.compile_train_step(config, self.plan, self.spec,
                                                                        self.dropout_key)

    def init(self, like=None):
        """The trainer's sharded initial state, or `like` (a host copy of one) put into this run's shards.

        Every run starts from the same seed, so the copy holds the same values; it saves compiling
        each preset's initialiser.
        """
        if like is not None:
            return jax.device_put(like, self.spec.shardings)
        with jax.set_mesh(self.plan.mesh), nn.logical_axis_rules(self.plan.rules):
            return trainer.init_state(self.spec, self.init_key)

    def train(self, state, until, on_step=None):
        """(state, losses) after training from state.step to `until`."""
        start = int(state.step)
        batches = data.prefetch(
            data.train_batches(self.config.data, global_batch_size=self.config.batch_size, start_step=start,
                               seed=self.config.seed, process_index=jax.process_index(),
                               process_count=jax.process_count()),
            self.batch_sharding)
        losses = []
        with jax.set_mesh(self.plan.mesh), nn.logical_axis_rules(self.plan.rules):
            for step in range(start, until):
                state, metrics = self.compiled(state, next(batches), self.dropout_key)
                losses.append(float(metrics["loss"]))
                if on_step is not None:
                    on_step(step + 1, state)
        return state, losses

    def memory(self) -> dict:
        """XLA's per-device figures for the compiled step, and the state's bytes from its shardings."""
        analysis = self.compiled.memory_analysis()
        return {"arguments": analysis.argument_size_in_bytes, "outputs": analysis.output_size_in_bytes,
                "temps": analysis.temp_size_in_bytes, "aliased": analysis.alias_size_in_bytes,
                **{f"state_{k}": v for k, v in parallel.bytes_per_device(self.spec.abstract).items()}}


def host(tree) -> dict:
    """{'path': numpy array} of a (possibly sharded) tree, gathered to this host."""
    leaves = jax.tree_util.tree_flatten_with_path(jax.device_get(tree))[0]
    return {jax.tree_util.keystr(path): np.asarray(leaf) for path, leaf in leaves}


def save_npz(out, name, tree):
    np.savez(os.path.join(out, f"{name}.npz"), **host(tree))


def shard_facts(state) -> dict:
    """For each device: how many parameter and optimiser-state elements it holds, against the total
    and against the elements of leaves that are replicated on purpose."""
    per_device = {}
    total = replicated = 0
    for leaf in jax.tree.leaves((state.params, state.opt_state)):
        total += leaf.size
        replicated += leaf.size if leaf.sharding.is_fully_replicated else 0
        for shard in leaf.addressable_shards:
            per_device[str(shard.device.id)] = per_device.get(str(shard.device.id), 0) + shard.data.size
    return {"total_elements": total, "replicated_elements": replicated, "elements_per_device": per_device}


def restore(run, directory, step):
    ckpt = checkpointer.Checkpointer(directory, async_save=False)
    with jax.set_mesh(run.plan.mesh), nn.logical_axis_rules(run.plan.rules):
        state, _ = ckpt.restore(step, run.spec.abstract)
    ckpt.close()
    return state


def bad_inputs(out) -> dict:
    """The messages of configs that must fail before anything is compiled or written."""
    cases = {"mesh_size": make_config(mesh=dict(data=3, fsdp=1, model=1)),
             "mesh_fixed_axes": make_config(mesh=dict(data=-1, fsdp=3, model=1)),
             "batch": make_config(batch_size=36),
             "micro_batch": make_config(batch_size=32, grad_accum_steps=8),
             "preset": make_config(sharding="zero3")}
    def forbidden(*args, **kwargs):
        raise AssertionError("compiled a train step for a bad config")

    compile_train_step, trainer.compile_train_step = trainer.compile_train_step, forbidden
    messages = {}
    try:
        for name, config in cases.items():
            workdir = os.path.join(out, f"bad_{name}")
            try:
                trainer.train(config, workdir)
                messages[name] = None
            except ValueError as error:
                messages[name] = str(error) if not os.path.exists(workdir) else f"wrote {workdir}: {error}"
    finally:
        trainer.compile_train_step = compile_train_step
    return messages


def eight(out):
    results = {"devices": jax.device_count()}
    # Data parallel over 8 devices.
    dp = Run(make_config(mesh=dict(data=8, fsdp=1, model=1), sharding="data"))
    state = dp.init()
    initial = jax.device_get(state)
    state, losses = dp.train(state, STEPS)
    results["dp"] = {"losses": losses, "memory": dp.memory(), **shard_facts(state)}
    save_npz(out, "dp", state.params)

    # FSDP on a 2x4 mesh, with a checkpoint half-way.
    fsdp = Run(make_config(mesh=dict(data=2, fsdp=4, model=1), sharding="fsdp"))
    ckpt_dir = os.path.join(out, "fsdp_checkpoints")
    ckpt = checkpointer.Checkpointer(ckpt_dir)
    saved = {}

    def save(step, state):
        if step == SAVE_AT:
            ckpt.save(step, state, {})
            saved["state"] = host(state)

    state, losses = fsdp.train(fsdp.init(), STEPS, on_step=save)
    ckpt.close()
    results["fsdp"] = {"losses": losses, "memory": fsdp.memory(), **shard_facts(state),
                       "param_specs": {k: str(s.spec) for k, s in host_specs(state.params).items()}}
    save_npz(out, "fsdp", state.params)
    np.savez(os.path.join(out, "fsdp_saved.npz"), **saved["state"])

    # The FSDP checkpoint restored onto a 4x2 mesh: the same values, and training goes on.
    other = Run(make_config(mesh=dict(data=4, fsdp=2, model=1), sharding="fsdp"))
    state = restore(other, ckpt_dir, SAVE_AT)
    restored = host(state)
    results["restore_4x2"] = {
        "max_abs_diff": max(float(np.max(np.abs(restored[k] - v), initial=0.0)) if v.dtype.kind == "f"
                            else float(np.any(restored[k] != v)) for k, v in saved["state"].items()),
        "same_keys": sorted(restored) == sorted(saved["state"]),
        "specs": sorted({str(s.spec) for s in host_specs(state.params).values()})}
    state, losses = other.train(state, STEPS)
    results["restore_4x2"]["losses"] = losses

    # Tensor parallelism in float32 (exact), then bf16 compute with 2 accumulated micro-batches under
    # every preset (loose: bf16 rounding, and micro-batches draw their own dropout masks).
    for name, mesh, sharding, dtype, accum in [
            ("tp", dict(data=2, fsdp=2, model=2), "fsdp_tp", "float32", 1),
            ("bf16_accum_data", dict(data=8, fsdp=1, model=1), "data", "bfloat16", 2),
            ("bf16_accum_fsdp8", dict(data=1, fsdp=8, model=1), "fsdp", "bfloat16", 2),
            ("bf16_accum_tp", dict(data=2, fsdp=2, model=2), "fsdp_tp", "bfloat16", 2)]:
        run = Run(make_config(mesh=mesh, sharding=sharding, dtype=dtype, grad_accum_steps=accum))
        state, losses = run.train(run.init(like=initial), STEPS)
        results[name] = {"losses": losses, "memory": run.memory(), **shard_facts(state)}
        save_npz(out, name, state.params)

    results["bad_inputs"] = bad_inputs(out)
    return results


def host_specs(tree):
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {jax.tree_util.keystr(path): leaf.sharding for path, leaf in leaves}


def one(out, go_file, other_checkpoints):
    results = {"devices": jax.device_count()}
    base = Run(make_config())
    state, losses = base.train(base.init(), STEPS)
    results["base"] = {"losses": losses}
    save_npz(out, "base", state.params)

    # The reference runs beside the others; their checkpoints are complete once `go_file` exists.
    while not os.path.exists(go_file):
        time.sleep(0.2)
    with open(go_file) as f:
        if f.read().strip() != "go":
            return results

    # The 8-device FSDP checkpoint onto this single device: the same values, and training goes on
    # with the single-device compiled step.
    fsdp_dir, *multi_dirs = other_checkpoints
    state = restore(base, fsdp_dir, SAVE_AT)
    save_npz(out, "restore_1_state", state)
    state, losses = base.train(state, STEPS)
    results["restore_1"] = {"losses": losses}

    # The final checkpoint of the two-process run, read back here for its parameters.
    for directory in multi_dirs:
        state = restore(base, directory, STEPS)
        save_npz(out, "multiprocess", state.params)
    return results


if __name__ == "__main__":
    role, out, *rest = sys.argv[1:]
    os.makedirs(out, exist_ok=True)
    results = eight(out) if role == "eight" else one(out, rest[0], rest[1:])
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
