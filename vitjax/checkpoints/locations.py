"""Where a run's checkpoints live: the checkpoints directories, their step directories, the corrupt
steps set aside beside them, and `locate`, which turns what a user names into a run and a step.

    <run>/checkpoints/<step>/{state,meta}/   the trainer's steps (vitjax/checkpoints/checkpointer.py)
    <run>/checkpoint_best/<step>/            the best validation step's parameters (vitjax/train/best.py)
    <run>/corrupt_checkpoints/<step>-<time>/ steps that failed to read or verify, moved aside, never deleted

Every checkpoint path is made here; the files of a run around them are vitjax/rundir.py's. Only
directory listings are read: the sweep and the CLI find checkpoints without opening one.
"""
import dataclasses
import time

from vitjax import metrics_log, rundir, storage

CHECKPOINTS = "checkpoints"
BEST_CHECKPOINT = "checkpoint_best"  # {'params': ...} of the best validation step, beside checkpoints/
_CORRUPT = "corrupt_"  # corrupt_<checkpoints directory>/ holds that directory's steps set aside
CORRUPT_CHECKPOINTS = _CORRUPT + CHECKPOINTS
STATE, META = "state", "meta"  # the two orbax items of a checkpoint step
# The meta key naming the state's evaluated network ('params', or 'extra/teacher' for DINO: Objective.evaluated);
# absent in a best-validation checkpoint ({'params': the evaluated network}) and in runs from before it.
EVALUATED = "evaluated_params"

_WHAT_TO_PASS = (f"pass a vitjax workdir (it holds {rundir.CONFIG}), its {CHECKPOINTS}/ directory or one "
                 f"{CHECKPOINTS}/<step> directory")


def checkpoint_dir(run_dir: str) -> str:
    return rundir.file_path(run_dir, CHECKPOINTS)


def best_checkpoint_dir(run_dir: str) -> str:
    return rundir.file_path(run_dir, BEST_CHECKPOINT)


def step_dir(directory: str, step: int) -> str:
    """One step's directory in a checkpoints directory."""
    return storage.join(directory, str(step))


def checkpoint_steps(directory: str) -> list[int]:
    """The finalised steps in a checkpoints directory, oldest first.

    Orbax writes a step under a temporary name (`<step>.orbax-checkpoint-tmp-...`) and renames it to
    `<step>` when complete, so only all-digit names count. On an object store, which cannot rename,
    orbax writes `<step>/` in place and marks it complete last with `<step>/commit_success.txt`: there
    a step counts only with that file.
    """
    if not storage.isdir(directory):
        return []
    steps = [name for name in storage.listdir(directory)
             if name.isdigit() and storage.isdir(storage.join(directory, name))]
    if storage.is_remote(directory):
        steps = [name for name in steps if storage.exists(storage.join(directory, name, _COMMITTED))]
    return sorted(map(int, steps))


_COMMITTED = "commit_success.txt"  # orbax's marker of a finished step on an object store


def corrupt_dir(directory: str) -> str:
    """The corrupt_<name>/ directory beside a checkpoints directory <name> (corrupt_checkpoints/ beside
    checkpoints/): each checkpoints directory of a run sets its steps aside apart from the others'."""
    absolute = storage.absolute(directory)
    return storage.join(storage.dirname(absolute), _CORRUPT + storage.basename(absolute))


def set_aside(directory: str, step: int) -> str:
    """Moves a corrupt step out of a checkpoints directory to corrupt_checkpoints/<step>-<unix time>
    beside it, where it is kept for inspection; returns the new path.

    A rename on a disk; on an object store a copy of every object and then the originals' deletion
    (storage.move: not atomic there, but a step is never lost: a crash between the two leaves it in
    both places, and the trainer finds it corrupt again and sets it aside again)."""
    target = storage.join(corrupt_dir(directory), f"{step}-{int(time.time())}")
    storage.makedirs(storage.dirname(target))
    source = step_dir(directory, step)
    if storage.exists(source):
        storage.move(source, target)
    return target


@dataclasses.dataclass(frozen=True)
class Location:
    """A run and one of its checkpoints, as `locate` found them; absolute paths (orbax needs them)."""
    run_dir: str  # holds config.json
    checkpoint_dir: str
    step: int | None  # the step asked for; None for the newest


def locate(path: str) -> Location:
    """A workdir, its checkpoints/ directory or one checkpoints/<step> directory -> its `Location`.

    Raises FileNotFoundError naming what to pass when `path` is none of them.
    """
    if not storage.exists(path):
        raise FileNotFoundError(f"{path!r} does not exist; {_WHAT_TO_PASS}")
    absolute = storage.absolute(path)
    name, parent = storage.basename(absolute), storage.dirname(absolute)
    if name.isdigit() and storage.isdir(storage.join(absolute, STATE)):
        return Location(storage.dirname(parent), parent, int(name))
    if storage.exists(storage.join(absolute, rundir.CONFIG)) or storage.isdir(checkpoint_dir(absolute)):
        return Location(absolute, checkpoint_dir(absolute), None)
    if name == CHECKPOINTS or checkpoint_steps(absolute):
        return Location(parent, absolute, None)
    raise FileNotFoundError(f"{path!r} is not a vitjax run or checkpoint; {_WHAT_TO_PASS}")


def chosen_step(location: Location) -> int:
    """The step `location` names, else its newest finalised one."""
    if location.step is not None:
        return location.step
    steps = checkpoint_steps(location.checkpoint_dir)
    if not steps:
        raise nothing_saved(location.checkpoint_dir)
    return steps[-1]


def nothing_saved(directory: str) -> FileNotFoundError:
    """The error for a checkpoints directory with no step: a run that has not saved one yet, or one whose
    metrics show it trained (its checkpoints were deleted or moved, and training further would not
    bring them back)."""
    run_dir = storage.dirname(storage.absolute(directory))
    trained = max((row["step"] for row in metrics_log.read_metrics(run_dir) if isinstance(row.get("step"), int)),
                  default=0)
    if trained:
        return FileNotFoundError(
            f"no checkpoint in {directory}, though the run trained to step {trained} "
            f"({rundir.file_path(run_dir, rundir.METRICS)}): its checkpoints were deleted or moved. Fix: put "
            f"them back, or train it again from scratch: vitjax train --workdir {run_dir} --force")
    return FileNotFoundError(f"no checkpoint in {directory}: the run has not saved one yet; "
                             f"train it further, or pass another run or checkpoint")
