"""A distillation teacher: its model, read from a vitjax run or from an official .npz and a model config.

`resolve` checks everything it can before anything is compiled or written, reading no parameters: the
path exists, the model it names builds and takes the student's images, and it predicts the student's
classes. `Teacher.load_params` reads the parameters (once, when a run starts from step 0; a resumed
run restores them from its own checkpoint, see vitjax/objectives/distillation.py).

The student's run directory keeps the teacher's model (teacher.json, `Teacher.record`): a student
that has a checkpoint holds the teacher's parameters in it, so once the teacher's run or .npz has
moved or been deleted the student still resumes and evaluates, from that record and its checkpoints.
"""
import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from vitjax import models, rundir, storage
from vitjax.checkpoints import locations
from vitjax.checkpoints.integrity import saved_layout
from vitjax.interop import pretrained

_KEY = "distillation.teacher"
RECORD = "teacher.json"  # in the student's run directory


@dataclasses.dataclass(frozen=True)
class Teacher:
    path: str
    model: nn.Module
    image_shape: tuple  # the student's images (H, W, C), which the teacher sees too
    record: dict  # {'path', 'model_name', 'model', 'classes'}: enough to rebuild it without its files

    def abstract_params(self, key):
        """The teacher's parameter tree (boxed with logical axes), traced: shapes and shardings."""
        dummy = jnp.zeros((1, *self.image_shape), jnp.float32)
        return self.model.init(key, dummy, train=False)["params"]

    def load_params(self) -> dict:
        """The teacher's parameters as host arrays (position embeddings resized to the student's grid)."""
        if not storage.exists(self.path):
            raise FileNotFoundError(f"{_KEY}={self.path!r} does not exist, and this run has no checkpoint holding "
                                    f"the teacher; pass the teacher's new path")
        return pretrained.load(self.path, self.model, self.image_shape, what=_KEY)

    def logits(self, params, images):
        """The teacher's predictions: inference mode (no dropout), no gradient into its parameters."""
        logits = self.model.apply({"params": jax.lax.stop_gradient(params)}, images, train=False)
        return jax.lax.stop_gradient(logits)


def resolve(distillation, *, num_classes: int, image_shape, dtype: str, run_dir: str | None = None) -> Teacher:
    """The Teacher `distillation` (config.distillation) names, for a student of `num_classes` on
    `image_shape` training in `run_dir`; raises ValueError (FileNotFoundError for a missing path, unless
    `run_dir` recorded it and has a checkpoint) saying what to fix."""
    path = distillation.teacher
    if not path:
        raise ValueError(f"objective='distillation' needs a teacher: set --config.{_KEY}=<a vitjax run directory "
                         f"(e.g. runs/bit_teacher)> or an official .npz with --config.distillation.model_name and "
                         f"distillation.model")
    if not storage.exists(path):
        name, kwargs, classes = _recorded_teacher(path, run_dir)
    elif path.endswith(".npz"):
        name, kwargs, classes = _npz_teacher(path, distillation)
    else:
        name, kwargs, classes = _run_teacher(path, distillation)
    if classes != num_classes:
        raise ValueError(f"the teacher {path} predicts {classes} classes but the student's data has {num_classes}; "
                         f"a teacher must be trained on the same classes (in the same order)")
    model = models.build(name, classes, dtype=dtype, **kwargs)
    record = {"path": path, "model_name": name, "model": kwargs, "classes": classes}
    teacher = Teacher(path, model, tuple(image_shape), record)
    try:  # shapes only: the teacher must take the student's images
        jax.eval_shape(teacher.abstract_params, jax.random.key(0))
    except ValueError as error:
        raise ValueError(f"the teacher {path} cannot take the student's {tuple(image_shape)} images: {error}") from None
    return teacher


def _recorded_teacher(path: str, run_dir: str | None):
    """(model name, model kwargs, classes) from the student's teacher.json, where the student has a
    checkpoint (which holds the teacher's parameters); else the missing path is the error."""
    missing = f"{_KEY}={path!r} does not exist; pass a vitjax run directory or an official .npz"
    record = rundir.read_json(run_dir, RECORD) if run_dir and storage.exists(run_dir) else None
    if record is None or record.get("path") != path:
        raise FileNotFoundError(missing)
    if not locations.checkpoint_steps(locations.checkpoint_dir(run_dir)):
        raise FileNotFoundError(f"{missing}: {run_dir} records this teacher but holds no checkpoint with its "
                                f"parameters yet; pass the teacher's new path")
    print(f"NOTE: the teacher {path} is gone; {run_dir}'s checkpoints hold its parameters and {RECORD} its model, "
          f"which this run uses", flush=True)
    return record["model_name"], record["model"], record["classes"]


def _run_teacher(path: str, distillation):
    """(model name, model kwargs, classes) of a vitjax run: its config.json and its checkpoint's head."""
    if distillation.model_name:
        raise ValueError(f"{_KEY}={path!r} is a vitjax run, whose config.json gives its model; leave "
                         f"distillation.model_name empty (it is for .npz teachers)")
    location = locations.locate(path)
    config = rundir.load_config(location.run_dir)
    step_dir = locations.step_dir(location.checkpoint_dir, locations.chosen_step(location))
    layout = saved_layout(storage.join(step_dir, locations.STATE))  # orbax's metadata: no array is read
    head = layout.get("params/head/kernel")
    if head is None:
        raise ValueError(f"the teacher {path} has no 'head' to predict classes with")
    return config.model_name, dict(config.model), int(head[0][-1])


def _npz_teacher(path: str, distillation):
    """(model name, model kwargs, classes) of an official .npz: the config's model, the file's head."""
    if not distillation.model_name:
        raise ValueError(f"{_KEY}={path!r} is an .npz, which does not record its model: set "
                         f"distillation.model_name ('vit' or 'bit') and distillation.model (e.g. variant='B/16')")
    with np.load(storage.readable(path), allow_pickle=False) as arrays:  # reads only the head's array
        heads = sorted(k for k in arrays.files if k.endswith(("head/kernel", "head/conv2d/kernel"))
                       and "head_dist" not in k)
        if not heads:
            raise ValueError(f"the teacher {path} has no head ('head/kernel' or 'resnet/head/conv2d/kernel') to "
                             f"predict classes with")
        classes = int(arrays[heads[0]].shape[-1])
    return distillation.model_name, dict(distillation.model), classes
