"""A run that starts from a longer run's checkpoint: one budget of a warmup-stable-decay ladder.

    vitjax train --config C --workdir runs/trunk --config.schedule=wsd --config.total_steps=9600 \
        --config.keep_checkpoint_steps='(960, 1920, 3840)'
    vitjax train --config C --workdir runs/rung_1200 --config.schedule=wsd --config.total_steps=1200 \
        --config.branch_from=runs/trunk

Under schedule='wsd' the learning rate is constant from the warmup until the last cooldown_fraction of
the steps, so a run of T steps and a longer run of the same config are the same training until T's
cooldown starts at S = T - round(cooldown_fraction x T). With branch_from naming the longer run (the
trunk), this run restores the trunk's whole train state at step S (parameters, optimiser moments,
step, an objective's extra state) and trains only its cooldown: the result is the run from step 0,
bit for bit where resuming is, for a fifth of the steps. Every budget of a ladder (8, 16, 32 epochs)
then costs one trunk of the longest plus the cooldowns: about 1.2x the longest alone.

What must hold, checked before anything is restored, each refusal naming the fix: the trunk's config
is this one's apart from its length and bookkeeping (BRANCH_FREE_KEYS), the trunk is at least as
long, its own cooldown starts no earlier than S, and it kept a checkpoint at S (its
keep_checkpoint_steps). The trunk is only read. Validation (best step) covers this run's own steps,
S+1 to T: a cooldown's steps are the budget's candidates.
"""
from vitjax import config_compare, rundir
from vitjax.checkpoints import checkpointer, locations
from vitjax.train import optimizer

# Config keys a branch may set differently from its trunk: its length, where it branches from, and
# bookkeeping that does not change what is computed.
BRANCH_FREE_KEYS = ("total_steps", "total_epochs", "total_examples", "branch_from", "keep_checkpoint_steps",
                    "keep_checkpoints", "checkpoint_every_steps", "log_every_steps", "eval_every_steps")


def branch_step(config, total_steps: int) -> int:
    """The step at which a 'wsd' run of `total_steps` starts its cooldown: where it branches off."""
    return total_steps - optimizer.cooldown_steps(config, total_steps)


def check(config, total_steps: int, trunk_total_steps) -> None:
    """Raises ValueError, naming what differs and the fix, unless the trunk of config.branch_from is one
    this run can start from. `trunk_total_steps(trunk_config)` gives the trunk's length in steps (its
    durations may be in epochs of the same data)."""
    trunk = config.branch_from
    trunk_config = rundir.load_config(trunk)
    found = config_compare.differing_keys(config_compare.config_to_dict(trunk_config),
                                          config_compare.config_to_dict(config))
    differing = {key: change for key, change in found.items() if key not in BRANCH_FREE_KEYS}
    if differing:
        lines = "".join(f"\n  {key}: {old!r} (trunk) -> {new!r}" for key, (old, new) in differing.items())
        raise ValueError(f"branch_from={trunk!r} was trained with another config; a branch may differ from its "
                         f"trunk only in {', '.join(BRANCH_FREE_KEYS)}. Differing keys:{lines}\nBranch from a "
                         f"trunk of this config, or clear branch_from to train from step 0.")
    step = branch_step(config, total_steps)
    trunk_steps = trunk_total_steps(trunk_config)
    trunk_stable = branch_step(trunk_config, trunk_steps)
    if step > trunk_stable:
        raise ValueError(f"branch_from={trunk!r}: this run's cooldown starts at step {step}, after the trunk's own "
                         f"(step {trunk_stable} of {trunk_steps}), so the trunk never trained the constant phase "
                         f"this run needs; branch from a trunk at least {total_steps} steps long")
    directory = locations.checkpoint_dir(locations.locate(trunk).run_dir)
    kept = locations.checkpoint_steps(directory)
    if step not in kept:
        raise ValueError(f"branch_from={trunk!r} has no checkpoint at step {step} (it has {kept or 'none'}): a "
                         f"trunk keeps the steps of its --config.keep_checkpoint_steps (set them before it passes "
                         f"them); train one with {step} among them, or clear branch_from")


def restore(config, total_steps: int, abstract_state):
    """(train state at the branch step, its checkpoint's meta) read from the trunk, verified; `check`
    (the trainer's plan) has vetted the trunk."""
    directory = locations.checkpoint_dir(locations.locate(config.branch_from).run_dir)
    reader = checkpointer.Checkpointer(directory, read_only=True)
    try:
        return reader.restore(branch_step(config, total_steps), abstract_state)
    finally:
        reader.close()
