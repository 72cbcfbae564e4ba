"""Fine-tuning starts: parameters from an official .npz or from a vitjax run or checkpoint.

Both routes end in `npz.load`, which owns the rules for what may differ (the head, the position
grid, a dropped pre-logits layer) and raises for anything else; a vitjax checkpoint's parameters
are first written in the official layout in memory.
"""
import os

import jax
import numpy as np
import orbax.checkpoint as ocp

from vitjax.interop import npz


def _newest_step_dir(path: str) -> str:
    """A workdir, its checkpoints/ directory, or one step directory -> a step directory."""
    for candidate in (os.path.join(path, "checkpoints"), path):
        steps = [d for d in os.listdir(candidate) if d.isdigit()] if os.path.isdir(candidate) else []
        if steps:
            return os.path.join(candidate, max(steps, key=int))
    if os.path.isdir(os.path.join(path, "state")):
        return path
    raise FileNotFoundError(f"no checkpoint found at {path}: pass an official .npz file, a vitjax workdir, "
                            f"its checkpoints/ directory or one checkpoints/<step> directory")


def read_checkpoint_params(path: str) -> dict:
    """The `params` subtree of a vitjax checkpoint, as host numpy arrays (any mesh it was saved on)."""
    state_dir = os.path.join(_newest_step_dir(os.path.abspath(path)), "state")  # orbax refuses relative paths
    # Restored as numpy: by default orbax rebuilds the saving run's shardings, and refuses ("topology
    # mismatch") when this process has other devices, e.g. a run trained on 4 CPU devices.
    saved = ocp.PyTreeCheckpointer().metadata(state_dir).item_metadata.tree
    as_numpy = jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), saved)
    return ocp.PyTreeCheckpointer().restore(state_dir, restore_args=as_numpy)["params"]


def load_pretrained(path: str, model, image_shape) -> dict:
    """Parameters for `model` at `image_shape` (H, W, C) from `path` (.npz, workdir or checkpoint)."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"init_from={path!r} does not exist")
    source = path if path.endswith(".npz") else npz.to_official(read_checkpoint_params(path))
    height, width, channels = image_shape
    return npz.load(source, model, image_size=(height, width), channels=channels)
