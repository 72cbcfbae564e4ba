"""A run's evaluated parameters as host numpy arrays, for code that uses a trained network elsewhere:
init_from, distillation teachers, the few-shot probe, `vitjax analyze`. Whatever mesh saved them, and
read-only: nothing is cleaned, moved or deleted, and a corrupt step is reported and left in place (the
trainer sets it aside when it resumes the run).
"""
from vitjax import storage
from vitjax.checkpoints import integrity, locations


def read_params(path: str) -> dict:
    """The evaluated network's parameters in a checkpoint (its meta's EVALUATED subtree: `params` unless
    the objective evaluates another, as DINO its teacher).

    `path` is anything `locations.locate` takes. A named step that fails its checksums raises
    CorruptCheckpointError (a ValueError); without a step, the newest step that verifies is read, after a
    warning for each newer one that does not.
    """
    location = locations.locate(path)
    if location.step is not None:
        return _evaluated_params(location.checkpoint_dir, location.step)
    steps = locations.checkpoint_steps(location.checkpoint_dir)
    if not steps:
        locations.chosen_step(location)  # raises, saying the run has not saved a checkpoint yet
    return integrity.newest_that_verifies(
        steps, lambda step: _evaluated_params(location.checkpoint_dir, step), _leave_in_place,
        where=location.checkpoint_dir, fix="pass another run or checkpoint")


def _evaluated_params(checkpoint_dir: str, step: int) -> dict:
    directory = locations.step_dir(checkpoint_dir, step)
    meta_dir = storage.join(directory, locations.META)
    tree = integrity.read_verified(storage.join(directory, locations.STATE), meta_dir,
                                   f"checkpoint step {step} in {checkpoint_dir}")
    for key in integrity.read_meta(meta_dir).get(locations.EVALUATED, "params").split("/"):
        tree = tree[key]
    return tree


def _leave_in_place(step: int, error, earlier: list[int]) -> str:
    then = f"reading step {earlier[-1]}" if earlier else "no earlier checkpoint"
    print(f"WARNING: {error}; left in place (the trainer sets it aside when it resumes); {then}", flush=True)
    return f"step {step} left in place"
