"""`vitjax eval`: re-evaluate a trained run, or one of its checkpoints, on its test split."""
import os

import flax.linen as nn
import jax

from vitjax.evaluate.classification import Evaluator
from vitjax.train import trainer, workdir as wd
from vitjax.train.checkpoint import Checkpointer


def _locate(workdir: str, checkpoint_path: str | None) -> tuple[str, str | None]:
    """(run directory holding config.json, checkpoint step directory or None for the newest)."""
    if checkpoint_path is None:
        return workdir, None
    step_dir = os.path.abspath(checkpoint_path)
    return workdir or os.path.dirname(os.path.dirname(step_dir)), step_dir


def evaluate_workdir(workdir: str, checkpoint: str | None = None) -> dict:
    run_dir, step_dir = _locate(workdir, checkpoint)
    config = wd.load_config(run_dir)
    p = trainer.plan(config)
    spec = trainer.state_spec(config, p)
    with jax.set_mesh(p.mesh), nn.logical_axis_rules(p.rules):
        directory = os.path.join(run_dir, wd.CHECKPOINTS) if step_dir is None else os.path.dirname(step_dir)
        ckpt = Checkpointer(directory, async_save=False)
        if step_dir is None:
            restored = ckpt.restore_latest(spec.abstract)
        else:
            restored = ckpt.restore(int(os.path.basename(step_dir)), spec.abstract)
        ckpt.close()
        if restored is None:
            raise FileNotFoundError(f"no checkpoint in {os.path.join(run_dir, wd.CHECKPOINTS)}")
        state, _ = restored
        evaluator = Evaluator(p.model, config.data, batch_size=config.eval_batch_size, mesh=p.mesh,
                              params_sharding=spec.shardings.params)
        metrics = evaluator(state.params)
    results = {"step": int(state.step), "test_accuracy": metrics["accuracy"], "test_loss": metrics["loss"]}
    wd.write_json(run_dir, "eval.json", results)
    return results
