"""The training loop: config in, trained model, logs, checkpoints and results.json out.

Read top to bottom: set up, build, restore or initialise, compile, loop (step, log, evaluate,
checkpoint), finish. Re-running on the same workdir resumes from the newest good checkpoint; a run
whose results.json exists is finished and only reports. One trainer works on a workdir at a time.
"""
import contextlib
import dataclasses
import math
import os
import signal
import time
from typing import Any, Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
from jax.experimental import multihost_utils

from vitjax import (config_compare, data, durations, host, metrics_log, models, objectives, parallel, rundir, storage,
                    train_lock, xla_cpu)
from vitjax.checkpoints import checkpointer, locations
from vitjax.evaluate.evaluator import Evaluator
from vitjax.objectives.base import Objective
from vitjax.train import best, branch, flops, optimizer, profile, step as steps, checks
from vitjax.train.preemption import Preempted


class NonFiniteLoss(FloatingPointError):
    pass


@dataclasses.dataclass
class Plan:
    """Quantities derived from the config and the data before anything is compiled."""
    info: data.DataInfo
    total_steps: int
    warmup_steps: int
    mesh: jax.sharding.Mesh
    rules: tuple
    model: nn.Module
    compiler_options: dict  # XLA options for each compilation of a step (jax.jit's compiler_options)
    objective: Objective  # what the step optimises (config.objective), for `model`
    runtime: xla_cpu.Choices  # the backend's runtime choices this plan applied (not config)


def plan(config, runtime: xla_cpu.Choices | None = None, run_dir: str | None = None,
         info: data.DataInfo | None = None) -> Plan:
    """Validates the config (checks.py), then against the data and devices; raises ValueError naming
    the fix. Writes nothing. `runtime`: the CLI's CPU choices (model kernels, XLA options), applied
    where the config sets none of its own. `run_dir`: the run it trains or reads, whose records an
    objective may need (a moved teacher's model). `info`: the data's DataInfo where the caller knows
    it without reading the data (the benchmark's synthetic batches); None reads it (data.get_info)."""
    runtime = runtime or xla_cpu.Choices()
    checks.config(config)
    info = info or data.get_info(config.data)
    total = durations.steps_of(config, "total", num_train_examples=info.num_train,
                               batch_size=config.batch_size, required=True)
    warmup = durations.steps_of(config, "warmup", num_train_examples=info.num_train,
                                batch_size=config.batch_size, required=False)
    if total <= 0:
        raise ValueError(f"training must last at least one step, got {total}")
    cooldown = optimizer.cooldown_steps(config, total)
    if warmup + cooldown > total:
        what = f"warmup ({warmup} steps)" + (f" and cooldown ({cooldown} steps) are" if cooldown else " is")
        raise ValueError(f"{what} longer than training ({total} steps); shorten {'them' if cooldown else 'the warmup'} "
                         f"or train longer")
    if config.branch_from:
        branch.check(config, total, _total_steps_of(info))
    if config.init_from:  # before the workdir records it: a wrong path stays a fixable command
        from vitjax.interop import pretrained  # here: a run that fine-tunes nothing loads no converter

        pretrained.check(config.init_from)
    if config.batch_size % config.grad_accum_steps:
        raise ValueError(f"batch_size {config.batch_size} is not divisible by grad_accum_steps "
                         f"{config.grad_accum_steps}")
    repeats = config.data.get("repeated_augmentation", 1)  # absent from configs saved before it existed
    if config.batch_size % repeats:
        raise ValueError(f"batch_size {config.batch_size} is not divisible by data.repeated_augmentation "
                         f"{repeats} (each example appears that many times in a batch)")
    profile.check(config.profile_steps, total)
    if _wants_feature_evals(config) and jax.process_count() > 1:
        raise ValueError("config.evals run in a single-process run only; evaluate a multi-process run's "
                         "checkpoints afterwards with `vitjax eval --knn` / `--fewshot`")
    mesh = parallel.make_mesh(dict(config.mesh))
    parallel.check_batch_size(config.batch_size, mesh)
    parallel.check_batch_size(config.batch_size // config.grad_accum_steps, mesh,
                              what=f"micro-batch size (batch_size / grad_accum_steps={config.grad_accum_steps})")
    model = models.build(config.model_name, info.num_classes, dtype=config.dtype,
                         **{**runtime.model_args(config), **config.model})
    # Tracing the model's init checks shapes (patch vs image size, heads vs width) without compiling.
    jax.eval_shape(lambda x: model.init(jax.random.key(0), x, train=False),
                   jax.ShapeDtypeStruct((1, *info.image_shape), jnp.float32))
    objective = objectives.build(config, model, info, run_dir)  # checks its settings (a teacher: model, classes)
    return Plan(info, total, warmup, mesh, parallel.rules_for(config.sharding), model,
                runtime.options_for(config), objective, runtime)


def _total_steps_of(info: data.DataInfo):
    """config -> its length in steps on this data (a branch's trunk may give it in epochs)."""
    return lambda c: durations.steps_of(c, "total", num_train_examples=info.num_train, batch_size=c.batch_size,
                                        required=True)


@dataclasses.dataclass
class StateSpec:
    """The optimiser, and the train state's initialiser, abstract shapes and shardings."""
    tx: Any
    schedule: Any
    init: Callable  # key -> boxed TrainState (logical axis names on the parameters)
    abstract: Any  # TrainState of jax.ShapeDtypeStructs carrying their target shardings
    shardings: Any
    num_params: int


def state_spec(config, p: Plan) -> StateSpec:
    """Shapes and shardings of the train state without allocating it (jax.eval_shape)."""
    schedule = optimizer.learning_rate_schedule(config, p.total_steps, p.warmup_steps)
    tx = optimizer.freeze(optimizer.make_optimizer(config, schedule, p.total_steps), p.objective.frozen())
    dummy = jnp.zeros((1, *p.info.image_shape), jnp.float32)

    def init(key):
        params = p.model.init(key, dummy, train=False)["params"]
        return steps.create_state(params, tx, p.objective.init_extra(params, _extra_key(key)))

    with jax.set_mesh(p.mesh), nn.logical_axis_rules(p.rules):
        abstract_boxed = jax.eval_shape(init, jax.random.key(0))
    shardings = parallel.shardings_of(abstract_boxed, p.mesh, p.rules)
    abstract = jax.tree.map(lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s),
                            nn.unbox(abstract_boxed), shardings)
    num_params = sum(math.prod(x.shape) for x in jax.tree.leaves(abstract.params))
    return StateSpec(tx, schedule, init, abstract, shardings, num_params)


def _extra_key(init_key):
    """The objective's key for its extra state: apart from the parameters' (which stay as they were)."""
    return jax.random.fold_in(init_key, 1)


def run_keys(seed: int):
    """(init_key, dropout_key) of a run with `seed`: the one derivation every user of a run's initial
    parameters shares (the trainer, `vitjax bench`, `vitjax analyze`'s initialised control)."""
    return jax.random.split(jax.random.key(seed))


def init_state(spec: StateSpec, key):
    """The initial train state, created directly in its shards (no device ever holds all of it)."""
    return jax.jit(lambda k: nn.unbox(spec.init(k)), out_shardings=spec.shardings)(key)


def compile_train_step(config, p: Plan, spec: StateSpec, dropout_key):
    """(compiled train step, batch sharding): lowered for the state's and the batch's shardings.

    The state is donated, so its buffers are reused for the new state instead of doubling memory.
    """
    lowered, batch_sharding = lower_train_step(config, p, spec, dropout_key)
    with jax.set_mesh(p.mesh), nn.logical_axis_rules(p.rules):
        return lowered.compile(compiler_options=p.compiler_options or None), batch_sharding


def lower_train_step(config, p: Plan, spec: StateSpec, dropout_key):
    """(lowered train step, batch sharding), for callers that compile it with their own options."""
    batch_sharding = parallel.batch_sharding(p.mesh)
    abstract_batch = {
        "image": jax.ShapeDtypeStruct((config.batch_size, *p.info.image_shape), jnp.float32,
                                      sharding=batch_sharding),
        "labels": jax.ShapeDtypeStruct((config.batch_size, p.info.num_classes), jnp.float32,
                                       sharding=batch_sharding)}
    train_step = jax.jit(
        steps.make_step(p.objective, spec.tx, spec.schedule, grad_accum_steps=config.grad_accum_steps),
        in_shardings=(spec.shardings, batch_sharding, parallel.replicated(p.mesh)),
        out_shardings=(spec.shardings, parallel.replicated(p.mesh)),
        donate_argnums=(0,))
    # Flax's logical activation constraints act only inside both contexts; outside they are no-ops.
    with jax.set_mesh(p.mesh), nn.logical_axis_rules(p.rules):
        return train_step.lower(spec.abstract, abstract_batch, dropout_key), batch_sharding


def train_step_flops(config, p: Plan, compiled, dropout_key) -> float:
    """FLOPs of one train step over all devices, loops counted in full (flops.py): from the compiled
    step, or for scanned blocks and accumulated gradients from its loop-free twin, lowered only."""
    if not flops.has_loops(config):
        return flops.of(compiled) or 0.0
    twin_config, twin_model = flops.loop_free(config, p.model)
    twin = dataclasses.replace(p, model=twin_model, objective=dataclasses.replace(p.objective, model=twin_model))
    lowered, _ = lower_train_step(twin_config, twin, state_spec(twin_config, twin), dropout_key)
    return flops.of(lowered) or 0.0


def train(config, workdir: str, *, force: bool = False, runtime: xla_cpu.Choices | None = None) -> dict:
    """Trains `config` in `workdir` and returns its results (also written to results.json).

    Resumes from the workdir's newest good checkpoint. A finished workdir only reports its results,
    unless `force` redoes it; a finished run of another config is refused like an unfinished one.
    Nothing is written before the config and workdir pass their checks. Raises Preempted after a
    SIGTERM checkpoint, NonFiniteLoss under nan_policy='stop', train_lock.WorkdirInUse while another
    trainer works on `workdir`. `runtime`: the CLI's CPU choices (xla_cpu.choose), recorded in
    results.json, never in config.json.
    """
    checks.workdir(workdir)
    host.code()  # read now, while the files are the ones this process imported (results.json records it)
    finished = _finished_results(workdir, config, force)
    if finished is not None:  # reported even from a directory this user cannot write
        _say(f"{workdir} is finished: {_summary(finished)}")
        return finished
    checks.writable_workdir(workdir)
    with contextlib.ExitStack() as on_exit:
        # Installed before planning and compiling, which take up to minutes: a stop signal then ends the
        # run at the first step boundary with status 75 instead of killing it (143) without a word.
        stop = _StopFlag()
        on_exit.callback(stop.restore)
        p = plan(config, runtime, workdir)
        held = _lock(workdir)
        if held is not None:
            on_exit.callback(held.release)
        return _train_locked(config, workdir, p, force, stop)


def _train_locked(config, workdir: str, p: Plan, force: bool, stop: "_StopFlag") -> dict:
    """`train` once the workdir is this trainer's, in five sections as big_vision's train.py reads:
    set up, restore (or initialise), loop (step, log, evaluate, checkpoint), evaluate, finish."""
    # --- Set up: the workdir becomes this run's; the state's shapes, the keys, the compiled step.
    _claim(workdir, config, force)
    _keep_records(workdir, p.objective.records())
    start_time = time.time()
    init_key, dropout_key = run_keys(config.seed)
    spec = state_spec(config, p)
    with jax.set_mesh(p.mesh), nn.logical_axis_rules(p.rules), contextlib.ExitStack() as on_exit:
        ckpt = checkpointer.Checkpointer(locations.checkpoint_dir(workdir), max_to_keep=config.keep_checkpoints,
                                         keep_steps=config.keep_checkpoint_steps,
                                         config=config_compare.config_to_dict(config))
        on_exit.callback(ckpt.close)

        # --- Restore: the newest good checkpoint, else the trunk's branch point, else step 0.
        state, earlier = _restore_or_initialise(config, p, spec, ckpt, init_key)
        first_step = int(state.step)
        elapsed_before = earlier.get("wall_seconds", 0.0)
        trained_on = [*earlier.get(TRAINED_ON, []), _segment(first_step)]
        compiled, batch_sharding, flops_per_step = _compile_and_describe(config, p, spec, dropout_key)
        evaluator = _evaluator(config, p, spec)
        validation = _validation(config, p, spec, workdir)
        feature_evals = _feature_evals(config, p)
        if validation is not None:
            on_exit.callback(validation.close)
        log = on_exit.enter_context(contextlib.closing(_metrics_log(workdir, first_step, p.total_steps)))
        profiler = on_exit.enter_context(contextlib.closing(profile.Window(config.profile_steps, workdir,
                                                                           first_step)))
        batches = _train_batches(config, first_step, batch_sharding)
        finite = _FiniteCheck(config.nan_policy, ckpt)
        if stop.raised:  # it arrived while planning, restoring or compiling: no step trained, nothing to save
            raise Preempted(f"{stop.raised} before step {first_step + 1}; nothing new to save, re-run the same "
                            f"command to resume")

        # --- Loop: one compiled step at a time; log, evaluate and save on the config's schedule.
        window = _LogWindow()
        for step in range(first_step, p.total_steps):
            profiler.before(step)
            state, metrics = compiled(state, next(batches), dropout_key)
            done = step + 1
            profiler.after(done, state)
            finite.later(done, metrics)
            window.steps += 1
            stop.check(done)
            if done % config.log_every_steps == 0 or done == p.total_steps:
                _log_train_metrics(config, p.total_steps, log, (done, metrics), window, flops_per_step, finite)
                window = _LogWindow()
            if _evaluates_at(config, done, p.total_steps, validation is not None):
                finite.now()  # a non-finite step's state is never the best
                _evaluate(done, p.objective.evaluated_params(state), log, evaluator, validation)
            due = feature_evals.due(done) if feature_evals is not None else ()
            if due:
                log.write(done, feature_evals(due, p.objective.evaluated_params(state)))
            if _saves_at(config, done, p.total_steps, stop):
                finite.now()  # every step up to `done` verified finite before its state is saved
                _save(ckpt, done, state, {"wall_seconds": elapsed_before + time.time() - start_time,
                                          locations.EVALUATED: p.objective.evaluated, TRAINED_ON: trained_on})
            if stop.raised:
                raise Preempted(f"{stop.raised} at step {done}; checkpoint saved, re-run the same command to resume")
        finite.now()

        # --- Evaluate: the final parameters on the test split; with a validation split, the best step's.
        stop.finishing = True
        final = _final_evaluations(p, p.objective.evaluated_params(state), log, evaluator, validation)

    # --- Finish: results.json marks the run finished.
    results = _results(config, p, spec, state, final, flops_per_step,
                       wall=elapsed_before + time.time() - start_time, trained_on=trained_on)
    rundir.write_json(workdir, rundir.RESULTS, results)
    _say(f"finished: {_summary(results)}")
    return results


def _evaluator(config, p: Plan, spec: StateSpec, split: str | None = None) -> Evaluator:
    """Evaluates parameters on `split` (None: the test split): the means of the objective's metrics."""
    return Evaluator(p.objective.eval_sums, config.data, batch_size=config.eval_batch_size, mesh=p.mesh,
                                params_sharding=spec.shardings.params, split=split,
                                compiler_options=p.compiler_options)


def _validation(config, p: Plan, spec: StateSpec, workdir: str) -> best.BestValidation | None:
    """The run's best-validation tracker when the data has a validation split (data.has_validation:
    data.val_size or data.val_split), else None; warns when only the last step will be evaluated on it."""
    if not data.has_validation(config.data):
        return None
    if not config.eval_every_steps and rundir.is_writer():
        print("WARNING: the data has a validation split (data.val_size or data.val_split) but "
              "eval_every_steps=0: only the last step is evaluated on it, so the best step is the last; set "
              "eval_every_steps to choose among steps", flush=True)
    return best.BestValidation(workdir, _evaluator(config, p, spec, split=data.VAL),
                               spec.abstract.params, val_size=p.info.num_val, val_split=config.data.val_split,
                               save=_save, config=config_compare.config_to_dict(config),
                               selection=p.objective.selection)


def _feature_evals(config, p: Plan):
    """The k-NN and few-shot evaluations of config.evals that are on (vitjax/evaluate/in_training.py),
    else None; loaded only then."""
    if not _wants_feature_evals(config):
        return None
    from vitjax.evaluate import in_training
    return in_training.FeatureEvals(config, p.total_steps, p.info.num_classes, model=p.model,
                                    records=p.objective.records())


def _wants_feature_evals(config) -> bool:
    return any(settings.every_steps for settings in config.get("evals", {}).values())


def _final_evaluations(p: Plan, params, log, evaluator, validation) -> dict:
    """The test metrics of the final parameters ('test_m' for each metric m of the objective's
    evaluation) and, with a validation split, the best step's validation metrics and the test metrics
    of its parameters; the test metrics are logged too."""
    logged = {f"test_{name}": value for name, value in evaluator(params).items()}
    if validation is None:
        log.write(p.total_steps, logged)
        return logged
    logged.update(validation.test_at_best(evaluator))
    log.write(p.total_steps, logged)
    return {**logged, **validation.summary()}


def _finished_results(workdir: str, config, force: bool) -> dict | None:
    """results.json of a finished run of this same config, which is then only reported; None when the
    run is not finished or `force` redoes it. Raises ValueError naming the keys of another config."""
    finished = rundir.read_results(workdir)
    if finished is None or force:
        return None
    rundir.check_config(workdir, config, finished=True)
    return finished


def _lock(workdir: str) -> train_lock.Lock | None:
    """Process 0 locks the workdir for the whole run (train_lock.lock says why process 0 alone). When it
    cannot, every process raises WorkdirInUse, instead of the others waiting for it at a barrier."""
    held, refusal = None, None
    if rundir.is_writer():
        try:
            held = train_lock.lock(workdir)
        except train_lock.WorkdirInUse as error:
            refusal = error
    if jax.process_count() > 1 and int(multihost_utils.broadcast_one_to_all(jnp.int32(refusal is not None))):
        refusal = refusal or train_lock.WorkdirInUse(f"{workdir} is in use by another vitjax train (process 0's "
                                                     f"error names it)")
    if refusal is not None:
        raise refusal
    return held


def _restore_or_initialise(config, p: Plan, spec: StateSpec, ckpt, init_key):
    """(train state, the earlier attempts' checkpoint meta: their wall seconds and TRAINED_ON): the newest
    good checkpoint's, the trunk's at this run's branch step (`config.branch_from`, its wall seconds and
    hosts counted as this run's), or a new state and {} (with the parameters of `config.init_from` when
    set, and the objective's loaded extra state)."""
    restored = ckpt.restore_latest(spec.abstract)
    if restored is not None:
        state, meta = restored
        print(f"resuming from step {int(state.step)} ({ckpt.directory})", flush=True)
        return state, meta
    if config.branch_from:
        state, meta = branch.restore(config, p.total_steps, spec.abstract)
        _say(f"branching from step {int(state.step)} of {config.branch_from}")
        return state, meta
    state = init_state(spec, init_key)
    if config.init_from:
        params = p.objective.pretrained_params(config.init_from, state.params, p.info.image_shape)
        params = jax.device_put(params, spec.shardings.params)
        state = jax.jit(lambda prm: steps.create_state(
            prm, spec.tx, nn.unbox(p.objective.init_extra(prm, _extra_key(init_key)))),
            out_shardings=spec.shardings)(params)
    loaded = p.objective.loaded_extra()  # e.g. a distillation teacher's parameters, read from disk
    if loaded is not None:
        state = state.replace(extra=jax.device_put(loaded, spec.shardings.extra))
    return state, {}


def _compile_and_describe(config, p: Plan, spec: StateSpec, dropout_key):
    """(compiled train step, batch sharding, FLOPs per step), and a line saying what was compiled."""
    compile_start = time.time()
    compiled, batch_sharding = compile_train_step(config, p, spec, dropout_key)
    flops_per_step = train_step_flops(config, p, compiled, dropout_key)
    _say(f"compiled the train step in {time.time() - compile_start:.1f}s; "
          f"{spec.num_params:,} parameters; {flops_per_step / 1e9:.2f} GFLOP per step; "
          f"{parallel.describe(p.mesh, p.rules)}; train state "
          f"{parallel.bytes_per_device(spec.abstract)['per_device'] / 2**20:,.1f} MiB per device")
    return compiled, batch_sharding, flops_per_step


def _metrics_log(workdir: str, resumed_at: int, total_steps: int) -> metrics_log.MetricsLog:
    """The run's MetricsLog, once metrics.jsonl has dropped the rows this attempt writes again: those
    past the step it resumes from (an interrupted attempt logged them after its last checkpoint) and
    the final evaluation's (logged after the loop, so again by an attempt resuming at the last step).
    """
    def written_again(row):
        step = row.get("step", 0)
        return step > resumed_at or (step == total_steps and any(k.startswith("test_") for k in row))

    metrics_log.keep_metrics(workdir, lambda row: not written_again(row))
    return metrics_log.MetricsLog(workdir)


def _train_batches(config, first_step: int, batch_sharding):
    """This process's share of the batches from `first_step` on, placed on the devices ahead of use."""
    return data.prefetch(
        data.train_batches(config.data, global_batch_size=config.batch_size, start_step=first_step,
                           seed=config.seed, process_index=jax.process_index(),
                           process_count=jax.process_count()),
        batch_sharding)


def _evaluates_at(config, done: int, total_steps: int, validating: bool) -> bool:
    """Whether the loop evaluates step `done`: every eval_every_steps, and with a validation split the
    last step too (a candidate for the best); without one the last step's test evaluation follows the loop."""
    scheduled = bool(config.eval_every_steps) and done % config.eval_every_steps == 0
    return scheduled or done == total_steps if validating else scheduled and done < total_steps


def _saves_at(config, done: int, total_steps: int, stop) -> bool:
    """Whether the loop saves step `done`: every checkpoint_every_steps, the last step, a step a branch
    starts from (keep_checkpoint_steps), and the step a stop signal arrived at."""
    return (done % config.checkpoint_every_steps == 0 or done == total_steps or bool(stop.raised)
            or done in config.keep_checkpoint_steps)


def _evaluate(done: int, params, log, evaluator, validation) -> None:
    """A scheduled evaluation: on the validation split when there is one (choosing the best step must
    never see the test split), else on the test split."""
    if validation is not None:
        validation(done, params, log)
        return
    midway = evaluator(params)
    log.write(done, {f"test_{k}": v for k, v in midway.items()})
    _say(f"step {done}: " + ", ".join(f"test {k} {v:.4f}" for k, v in midway.items()))


class _LogWindow:
    """The steps since the last logged one, and when they began: the img/s of the next log line."""

    def __init__(self):
        self.start, self.steps = time.time(), 0


def _log_train_metrics(config, total_steps: int, log, step_metrics, window: _LogWindow, flops_per_step, finite):
    """Writes a step's loss and throughput (`step_metrics`: (step, its metrics)) to the metrics log and
    prints them, after checking them for NaN: these metrics are read now, not one step late."""
    done, metrics = step_metrics
    scalars = jax.device_get(metrics)
    finite.check(done, scalars)
    rate = window.steps * config.batch_size / (time.time() - window.start)
    scalars = {k: v for k, v in scalars.items() if k != "finite"}
    log.write(done, {**scalars, "img_per_sec": rate,
                     "gflops_per_sec": rate / config.batch_size * flops_per_step / 1e9})
    eta = (total_steps - done) * config.batch_size / max(rate, 1e-9)
    _say(f"step {done}/{total_steps} | loss {scalars['loss']:.4f} | {rate:,.0f} img/s | ETA {_duration(eta)}")


def _results(config, p: Plan, spec: StateSpec, state, final: dict, flops_per_step: float, *, wall: float,
             trained_on: list) -> dict:
    """results.json: the final evaluations (`_final_evaluations`), the run's size and cost, and where it ran
    (`host`, `code`: this process; TRAINED_ON: every attempt's, from the step it started at)."""
    return {
        **final,
        "steps": p.total_steps, "examples_seen": p.total_steps * config.batch_size,
        "wall_seconds": wall, "core_hours": wall * (os.cpu_count() or 1) / 3600
        if jax.default_backend() == "cpu" else wall * jax.device_count() / 3600,
        "train_flops": flops_per_step * p.total_steps, "flops_per_step": flops_per_step,
        "params": spec.num_params, "model": config.model_name, "num_train": p.info.num_train,
        "num_classes": p.info.num_classes, "image_shape": list(p.info.image_shape),
        "devices": jax.device_count(), "backend": jax.default_backend(),
        # Pair runs only where these match (vitjax/host.py says why).
        "host": host.describe(), "code": host.code(), "runtime": p.runtime.record(), TRAINED_ON: trained_on,
        "skipped_updates": int(state.skipped_updates),
        **({"frozen": list(p.objective.frozen())} if p.objective.frozen() else {}),  # never updated (LiT)
    }


# The hosts and code a run trained on, one entry per attempt (`_segment`), in its checkpoints' meta and
# results.json: a run resumed on another host or code pairs with no other run (sweep.table.pair_key).
TRAINED_ON = "trained_on"


def _segment(first_step: int) -> dict:
    """This attempt's entry in TRAINED_ON: the step it starts at and what pairing compares."""
    return {"from_step": first_step, "host": host.describe(), "code": host.code(), "devices": jax.device_count()}


_NAN_ADVICE = "Lower the learning rate or set grad_clip_norm"


class _FiniteCheck:
    """Raises NonFiniteLoss under nan_policy='stop' at the first step whose loss or gradient was not
    finite, naming the newest checkpoint from before it (the loop saves no step before this check has
    passed it). Each step's flag is read one step late (`later`), which keeps the device busy and the
    host from running far ahead; `now` reads the one still pending."""

    def __init__(self, nan_policy: str, ckpt):
        self._nan_policy, self._ckpt = nan_policy, ckpt
        self._pending = None  # (step, metrics) not read yet

    def later(self, step: int, metrics) -> None:
        self.now()
        self._pending = (step, metrics)

    def now(self) -> None:
        if self._pending is not None:
            self.check(*self._pending)

    def check(self, step: int, metrics) -> None:
        # Read even under 'skip': reading one step late is what keeps the host from running far ahead.
        if int(metrics["finite"]) or self._nan_policy == "skip":
            return
        good = [s for s in self._ckpt.steps() if s < step]
        where = (f"step {good[-1]} in {self._ckpt.directory}" if good
                 else f"none (no checkpoint from before step {step})")
        raise NonFiniteLoss(
            f"non-finite loss or gradient at step {step}; the update was not applied, and nothing from this "
            f"step on was saved. Last good checkpoint: {where}. {_NAN_ADVICE}, or set nan_policy='skip' to "
            f"skip such steps.")


def _save(ckpt, step: int, state, meta: dict) -> None:
    """ckpt.save, whose refusal of a state holding a NaN or an infinity (an update that overflowed)
    stops the run as a non-finite loss does, whatever nan_policy says: that state cannot be repaired."""
    try:
        ckpt.save(step, state, meta)
    except checkpointer.NonFiniteStateError as error:
        raise NonFiniteLoss(f"{error}. {_NAN_ADVICE}.") from None


def _say(line: str) -> None:
    """Prints a progress or summary line from process 0 only: on a pod one copy, not one per host.
    Warnings and errors, which can differ between processes, are printed by each."""
    if rundir.is_writer():
        print(line, flush=True)


def _summary(results) -> str:
    """The final test metrics (test_accuracy, test_loss for a classifier), steps, examples and time."""
    tests = [f"{k}={v:.4f}" for k, v in results.items() if k.startswith("test_") and not k.endswith("_at_best")]
    return (f"{' '.join(tests)} after {results['steps']} steps, "
            f"{results['examples_seen']:,} examples, {_duration(results['wall_seconds'])}")


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m{rest % 60:02d}s" if hours else f"{rest // 60}m{rest % 60:02d}s"


class _StopFlag:
    """Turns SIGTERM (a preemption notice) and a first Ctrl-C (SIGINT) into a flag the loop checks after
    each step: the step is saved and the run exits as preempted (status 75), resumable by the same
    command. A second Ctrl-C stops at once (KeyboardInterrupt), losing the steps since the last save.

    With several processes the notice can reach them at different steps, and all of them must save
    the same step together. There JAX's preemption service (started by jax.distributed.initialize)
    catches SIGTERM itself and agrees on one step for every process; `check(step)` asks it, and Ctrl-C
    keeps Python's default (a terminal reaches one host only).

    A signal during the final evaluation (`finishing`, after the last step's checkpoint) lets it finish:
    the run ends finished, status 0; a second Ctrl-C still stops at once.
    """

    def __init__(self):
        self.raised = None  # the signal's name once one arrived
        self.finishing = False
        self._shared = jax.process_count() > 1 and jax.config.jax_enable_preemption_service
        self._previous = {} if self._shared else {
            sig: signal.signal(sig, self._handle) for sig in (signal.SIGTERM, signal.SIGINT)}

    def _handle(self, signum, frame):
        if signum == signal.SIGINT and self.raised == "Ctrl-C":
            signal.signal(signal.SIGINT, signal.default_int_handler)
            raise KeyboardInterrupt("a second Ctrl-C: stopped without saving")
        name = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
        if self.finishing:
            print(f"{name} during the final evaluation: the last step is saved; finishing the evaluation",
                  flush=True)
        elif signum == signal.SIGINT:
            print("Ctrl-C: saving this step's checkpoint, then stopping (Ctrl-C again stops at once, unsaved)",
                  flush=True)
        self.raised = self.raised or name

    def check(self, step: int) -> None:
        if self._shared and multihost_utils.reached_preemption_sync_point(step):
            self.raised = "SIGTERM"

    def restore(self):
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)


def _keep_records(workdir: str, records: dict) -> None:
    """Writes the objective's records (Objective.records) into the run directory, on process 0, when new."""
    for name, payload in records.items():
        if rundir.is_writer() and rundir.read_json(workdir, name) != payload:
            rundir.write_json(workdir, name, payload)


def _claim(workdir, config, force):
    """rundir.claim on every process, process 0 first: the others then read a complete config.json.
    Says which files of the previous run `force` kept in history/, and where."""
    if rundir.is_writer():
        kept = rundir.claim(workdir, config, force=force)
        if kept:
            print(f"kept the previous {', '.join(sorted(storage.listdir(kept)))} in {kept}", flush=True)
    if jax.process_count() > 1:
        multihost_utils.sync_global_devices("vitjax: config.json written")
        if not rundir.is_writer():
            rundir.claim(workdir, config, force=force)
