"""`vitjax eval`: re-evaluate a trained run, or one of its checkpoints, on its test split.

Here in train, not in evaluate, because it restores the run's whole train state as the trainer does
(its plan, state spec and Checkpointer, layout and checksums checked; from a checkpoint_best/, which
holds the best step's parameters alone, just those, as the trainer's test at best): train may import
evaluate (the trainer evaluates), and evaluate imports nothing of train. It opens the checkpoints read-only: orbax
cleans nothing (a live run's save in progress survives), and a corrupt step is reported and left for
the trainer to set aside. The few-shot probe needs only the parameters, so `fewshot_workdir` stays in
evaluate.
"""
import flax.linen as nn
import jax

from vitjax import config_compare, rundir, storage
from vitjax.checkpoints import locations
from vitjax.checkpoints.checkpointer import Checkpointer
from vitjax.evaluate.evaluator import Evaluator
from vitjax.train import trainer


def evaluate_workdir(workdir: str, checkpoint: str | None = None) -> dict:
    """The objective's test metrics ('test_m'; a classifier's test_accuracy and test_loss) of the run's
    newest good checkpoint, or of `checkpoint` (anything `locations.locate` takes, the run's
    checkpoint_best/ included); also written to the run's eval.json. Always the evaluated network
    (`Objective.evaluated_params`: DINO's teacher), as the trainer's own evaluations."""
    run = locations.locate(workdir)
    chosen = locations.locate(checkpoint) if checkpoint else run
    config = rundir.load_config(run.run_dir)
    p = trainer.plan(config, run_dir=run.run_dir)
    spec = trainer.state_spec(config, p)
    # A best-validation checkpoint holds {'params': the evaluated network} only (vitjax/train/best.py).
    best_only = storage.basename(chosen.checkpoint_dir) == locations.BEST_CHECKPOINT
    abstract = {"params": spec.abstract.params} if best_only else spec.abstract
    with jax.set_mesh(p.mesh), nn.logical_axis_rules(p.rules):
        ckpt = Checkpointer(chosen.checkpoint_dir, read_only=True, config=config_compare.config_to_dict(config))
        if chosen.step is None:
            restored = ckpt.restore_latest(abstract)
        else:
            restored = ckpt.restore(chosen.step, abstract)
        ckpt.close()
        if restored is None:
            raise FileNotFoundError(f"no checkpoint in {chosen.checkpoint_dir}")
        state, meta = restored
        if best_only:
            step, params = int(meta["step"]), state["params"]
        else:
            step, params = int(state.step), p.objective.evaluated_params(state)
        evaluator = Evaluator(p.objective.eval_sums, config.data, batch_size=config.eval_batch_size, mesh=p.mesh,
                              params_sharding=spec.shardings.params, compiler_options=p.compiler_options)
        metrics = evaluator(params)
    results = {"step": step, **{f"test_{name}": value for name, value in metrics.items()}}
    rundir.write_report(run.run_dir, rundir.EVAL, results)
    return results
