"""Runs a sweep: every run in its own subprocess and its own sub-workdir DIR/<name>.

Each run is `python -m vitjax train --config FILE[:arg] --workdir DIR/<name> --config.k=v ...`, then
(unless few-shot is off) `python -m vitjax eval --workdir DIR/<name> --fewshot_only ...` for each probe
the sweep file asks for (FEWSHOT, and FEWSHOT_TRANSFER with `--probe transfer`). A subprocess
per run means a crash, an OOM kill or a leaked device buffer ends that run only, and each run starts
from fresh XLA state. Output goes to DIR/<name>/train.log, fewshot.log and transfer.log.

Re-running a sweep is always safe: a finished run (results.json, and fewshot.json where few-shot is on)
is skipped; an interrupted one is resumed by the trainer from its newest checkpoint; a failed one
(failed.json) is retried (a trainer that XLA:CPU aborted in a collective some device never joined is
resumed once at once: `collective_hang`); one whose lock another process holds (runlock.py: another
sweep, or the trainer of a killed one) is left alone; one trained with another config than the sweep
now gives it (stale.py) is reported and left alone, or with `redo_stale` set aside and trained afresh.
After every run the table (table.py) is rewritten, so DIR/results.csv is current even while a long
sweep is going.

On a TPU pod (or any multi-process launch), every host runs the same `vitjax sweep` command on the
same sweep directory, which must then be shared (NFS/Filestore: each run's trainer writes its
checkpoint shards from every host into DIR/<name>, and gs:// sweep directories are refused). The runs'
trainers join one another with jax.distributed (on a TPU VM by themselves; elsewhere from
JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and JAX_PROCESS_ID, which the children inherit). The rule:
process 0 alone takes each run's lock; the other hosts never lock and never leave a run alone because
it is locked (it is locked by host 0, for this very run), so they start every run host 0 starts, in the
same order (run them with --parallel 1). Which process a host is comes from `launch_process`. The
other hosts' output goes to DIR/<name>/train.host<I>.log (and fewshot.host<I>.log ...), host 0's to
the usual files. A run that another sweep (not this pod's host 0) works on is then not noticed by the
other hosts: start one pod sweep per sweep directory.

Stopping: Ctrl-C, SIGTERM or SIGHUP to the sweep passes SIGTERM to each running child, which
checkpoints and exits with the preemption status; each run's lock goes only when its child has exited.
The children run in sessions of their own so that a terminal's Ctrl-C reaches the sweep alone: the
trainer takes only SIGTERM as "save and stop", and a SIGINT would kill it without a checkpoint.
"""
import concurrent.futures
import json
import os
import queue
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

from vitjax import rundir, storage
from vitjax.sweep import runlock, stale, table
from vitjax.train.preemption import INTERRUPTED_EXIT_CODE, PREEMPTED_EXIT_CODE

# Signals that stop a sweep cleanly: Ctrl-C, a preemption notice, the terminal closing.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Live:
    """The subprocesses now running, so an interrupted sweep can pass the signal on."""

    def __init__(self):
        self._lock = threading.Lock()
        self._procs = set()
        self.stopping = False

    def add(self, proc):
        with self._lock:
            self._procs.add(proc)
            if self.stopping:  # started while the sweep was being stopped: stop it too
                proc.terminate()

    def discard(self, proc):
        with self._lock:
            self._procs.discard(proc)

    def terminate_all(self, grace_seconds=120.0):
        # SIGTERM: the trainer checkpoints the current step and exits; the sweep resumes it next time.
        with self._lock:
            self.stopping = True
            procs = list(self._procs)
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.time() + grace_seconds
        for proc in procs:
            try:
                proc.wait(timeout=max(0.0, deadline - time.time()))
            except subprocess.TimeoutExpired:
                proc.kill()


def probes_of(sweep, fewshot: bool = True) -> dict:
    """{probe name: settings} of the probes the sweep runs after training ({} with few-shot off)."""
    probes = {"fewshot": sweep.fewshot, "transfer": sweep.transfer} if fewshot else {}
    return {name: settings for name, settings in probes.items() if settings is not None}


def missing_probes(run_dir: str, probes: dict) -> list[str]:
    """The probes of `probes` whose result file the run does not have yet."""
    return [name for name in probes if not rundir.exists(run_dir, rundir.PROBE_FILES[name][0])]


def todo(run_dir: str, probes: dict, expected: dict | None = None) -> str:
    """'stale' (trained with another config than `expected`, the sweep's), 'skip' (finished),
    'fewshot' (trained, a probe of `probes`, {name: settings}, missing) or 'train'."""
    if table.stale_differences(run_dir, expected):
        return "stale"
    trained = rundir.exists(run_dir, rundir.RESULTS)
    try:
        failed = rundir.read_json(run_dir, rundir.FAILED) or {}
    except rundir.DamagedFileError:  # cut short (by an older vitjax, or a full disk): a failure of unknown stage
        failed = {"stage": "unknown"}
    if trained and failed.get("stage") != "train":
        return "fewshot" if missing_probes(run_dir, probes) else "skip"
    return "train"


def _probes_to_run(run_dir: str, action: str, probes: dict) -> list[str]:
    """Every probe after training; after 'fewshot' (trained before), the ones still missing."""
    if action == "train":
        return list(probes)
    return missing_probes(run_dir, probes) if action == "fewshot" else []


def fewshot_argv(run_dir: str, fewshot: dict, probe: str = "fewshot") -> list[str]:
    argv = ["eval", "--workdir", run_dir, "--fewshot_only", "--shots", ",".join(map(str, fewshot["shots"])),
            "--fewshot_seeds", str(fewshot["seeds"])] + (["--probe", probe] if probe != "fewshot" else [])
    if fewshot.get("max_test_examples"):
        argv += ["--fewshot_max_test", str(fewshot["max_test_examples"])]
    if fewshot.get("data"):
        argv += ["--fewshot_data", json.dumps(fewshot["data"], sort_keys=True)]
    return argv


def launch_process(environ=None) -> tuple[int, int]:
    """(this process's index, the process count) of a multi-process launch, without joining it: from
    JAX_PROCESS_ID / JAX_NUM_PROCESSES when set, else on a Cloud TPU VM from JAX's own detection of the
    pod (the metadata server, as the trainers' jax.distributed.initialize will), else (0, 1)."""
    from vitjax import parallel  # here: it loads jax and flax, which a sweep's planning does not need

    environ = os.environ if environ is None else environ
    index, count = environ.get(parallel.ENV_PROCESS_ID), environ.get(parallel.ENV_NUM_PROCESSES)
    if index not in (None, ""):
        return int(index), int(count or 0) or int(index) + 1
    if not parallel.on_cloud_tpu_vm():
        return 0, 1
    from jax._src import clusters  # jax.distributed's own cluster detection; no public API reads it

    _, count, index, _ = clusters.ClusterEnv.auto_detect_unset_distributed_params(None, None, None, None, None)
    return int(index or 0), int(count or 1)


def run_sweep(sweep, sweep_dir: str, *, only=None, dry_run: bool = False, parallel: int = 1,
              fewshot: bool = True, pin_gpus: bool = False, redo_stale: bool = False, echo=print) -> int:
    """Runs the selected runs; returns 0 when every one of them finished, 1 otherwise, and
    INTERRUPTED_EXIT_CODE when stopped.

    `redo_stale`: a run trained with another config than the sweep now gives it is moved to
    DIR/_stale/ and trained afresh (without it, it is reported and left alone).
    """
    sweep = sweep.in_dir(sweep_dir)
    runs = sweep.select(only)
    settings = probes_of(sweep, fewshot)
    if parallel < 1:
        raise ValueError(f"--parallel must be >= 1, got {parallel}")
    if storage.is_remote(sweep_dir):
        raise ValueError(f"sweep workdir {sweep_dir!r} is a bucket URL, but the sweep runner locks each run with "
                         f"fcntl and writes its trainers' logs to local files, which an object store cannot do; "
                         f"sweep into a local or NFS directory (`vitjax plot` reads a sweep copied to gs://, and "
                         f"`vitjax train --workdir gs://...` trains single runs there)")
    plan = [(run, os.path.join(sweep_dir, run.name)) for run in runs]
    plan = [(run, run_dir, todo(run_dir, settings, run.config_dict)) for run, run_dir in plan]
    to_train = [run for run, _, action in plan if action == "train" or (action == "stale" and redo_stale)]
    absent = [f"{run.name} ({', '.join(missing)})" for run in to_train if (missing := run.missing_inputs())]
    absent = f"inputs missing for {len(absent)} of the runs to train: {'; '.join(absent)}" if absent else ""
    if dry_run:
        _echo_plan(plan, settings, redo_stale, echo)
        if absent:
            echo(f"warning: {absent}")
        return 0
    if absent:
        raise ValueError(f"{absent}; make them first (the sweep file's docstring says how), or leave these runs "
                         f"out with --only")

    os.makedirs(sweep_dir, exist_ok=True)
    table.write_definition(sweep_dir, {**sweep.describe(), "fewshot": settings.get("fewshot"),
                                       "transfer": settings.get("transfer")})
    _write_table(sweep_dir, echo, quiet=True)
    jobs = _Jobs(plan, sweep_dir, settings, parallel, pin_gpus=pin_gpus, redo_stale=redo_stale, echo=echo)
    if not _run_all(jobs, parallel):
        return INTERRUPTED_EXIT_CODE
    return _final_report(sweep_dir, runs, jobs.say)


_PLANNED = {"skip": "skip", "fewshot": "few-shot probe only", "train": "train",
            "stale": "left alone (--redo_stale: move it to DIR/_stale/ and train afresh)"}


def _echo_plan(plan, settings, redo_stale, echo) -> None:
    """What each run would do, and the commands it would run (--dry-run)."""
    for run, run_dir, action in plan:
        status = table.run_status(run_dir, tuple(settings), expected=run.config_dict)
        if action == "stale" and redo_stale:
            action = "train"
            status += f" (moved to {stale.aside_dir(run_dir)}/ first)"
        echo(f"{run.name}: {status} -> {_PLANNED[action]}")
        if action == "train":
            echo("    " + _shell([sys.executable, "-m", "vitjax", *run.train_argv(run_dir)]))
        for probe in _probes_to_run(run_dir, action, settings):
            echo("    " + _shell([sys.executable, "-m", "vitjax", *fewshot_argv(run_dir, settings[probe], probe)]))


_SKIPPED = "finished already, skipped"


class _Jobs:
    """The planned runs as jobs: numbered as they start, each on a free slot (its GPU with pin_gpus)
    and under its run's lock, their messages one at a time, the table rewritten after each."""

    def __init__(self, plan, sweep_dir, settings, parallel, *, pin_gpus, redo_stale, echo):
        self.plan, self.sweep_dir, self.settings = plan, sweep_dir, settings
        self.pin_gpus, self.redo_stale = pin_gpus, redo_stale
        self.host = launch_process()[0]  # on a pod, only host 0 locks runs (see the module docstring)
        self.live = _Live()
        self._echo, self._lock = echo, threading.Lock()
        self._slots = queue.Queue()
        for slot in range(parallel):
            self._slots.put(slot)
        self._counter = iter(range(1, len(plan) + 1))

    def say(self, message):
        with self._lock:
            self._echo(message)

    def run(self, run, run_dir, action) -> str:
        """Runs one planned run; returns its status ('finished', 'failed', 'interrupted', 'running', 'stale')."""
        with self._lock:
            index = next(self._counter)
        prefix = f"[{index}/{len(self.plan)}] {run.name}"
        if self.live.stopping:
            return "interrupted"
        if action == "skip":
            self.say(f"{prefix}: {_SKIPPED}")
            return "finished"
        slot = self._slots.get()
        try:
            status = self._locked(run, run_dir, slot, prefix)
        except Exception as error:  # noqa: BLE001  (a bug in the runner must not lose the other runs)
            _record_failure(run_dir, "runner", str(error), traceback.format_exc(), None, [], None)
            self.say(f"{prefix}: FAILED in the sweep runner: {error}")
            status = "failed"
        finally:
            self._slots.put(slot)
        if not self.live.stopping:
            _write_table(self.sweep_dir, self.say, quiet=True)
        return status

    def _locked(self, run, run_dir, slot, prefix) -> str:
        """Takes the run's lock and runs it; 'running' (and nothing done) when another process holds it."""
        if self.host != 0:
            return self._run(run, run_dir, slot, prefix, None)
        lock = runlock.acquire(run_dir)
        if lock is None:
            holder = runlock.holder(run_dir)
            self.say(f"{prefix}: left alone: another process holds {rundir.file_path(run_dir, rundir.SWEEP_LOCK)} "
                     f"(pids {holder.get('pids', '?')} on {holder.get('host', '?')}: another sweep, or the trainer "
                     f"of a killed one); the lock goes when they exit")
            return "running"
        try:
            return self._run(run, run_dir, slot, prefix, lock)
        finally:
            # A child that inherited the lock (pass_fds) holds it until it exits; normally it has by now.
            runlock.release(lock)

    def _run(self, run, run_dir, slot, prefix, lock) -> str:
        """Runs the run's stages under `lock` (None on a pod host other than 0, which takes no lock)."""
        # Decided again under the lock: another sweep may have finished or redone the run since the plan.
        action = todo(run_dir, self.settings, run.config_dict)
        if action == "skip":
            self.say(f"{prefix}: {_SKIPPED}")
            return "finished"
        if action == "stale":
            if not self.redo_stale:
                self.say(f"{prefix}: left alone: " + stale.advice(run_dir, table.stale_differences(
                    run_dir, run.config_dict)))
                return "stale"
            if self.host == 0:  # host 0 alone moves the shared run directory; the others train with it
                self.say(f"{prefix}: stale: moved the old run to {stale.set_aside(run_dir)}; training afresh")
            action = "train"
        if self.host == 0 and rundir.exists(run_dir, rundir.FAILED):
            os.remove(rundir.file_path(run_dir, rundir.FAILED))  # a retry: the old failure no longer applies
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if self.pin_gpus:
            env["CUDA_VISIBLE_DEVICES"] = str(slot)  # one GPU per concurrent run
        return _stages(run, run_dir, action, self.settings, env, self.live, self.say, prefix, lock, self.host)


def _run_all(jobs: _Jobs, parallel: int) -> bool:
    """Runs every job, `parallel` at a time; False when interrupted (Ctrl-C, SIGTERM or SIGHUP to the
    sweep), after stopping the running runs (each checkpoints) and writing the table.

    Jobs run on worker threads even one at a time: the main thread only waits, so the KeyboardInterrupt
    of a signal is raised here and never inside a job, which keeps its run's lock until its child exits.
    """
    previous_handlers = _stop_on_signals()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="vitjax-sweep")
    try:
        for future in [pool.submit(jobs.run, *item) for item in jobs.plan]:
            future.result()
    except KeyboardInterrupt:
        jobs.say("interrupted: stopping the running runs (each checkpoints and can be resumed by re-running)")
        jobs.live.stopping = True  # before anything else: no queued run may start now
        pool.shutdown(wait=False, cancel_futures=True)
        jobs.live.terminate_all()
        pool.shutdown(wait=True)  # the jobs see their children's exits and release their runs' locks
        _write_table(jobs.sweep_dir, jobs.say)
        return False
    finally:
        pool.shutdown(wait=True)
        for signum, handler in previous_handlers.items():
            signal.signal(signum, handler)
    return True


def _final_report(sweep_dir, runs, say) -> int:
    """Writes and prints the table; 0 when every selected run finished, else 1 naming those that did not."""
    rows = _write_table(sweep_dir, say)
    selected = {run.name for run in runs}
    not_done = [r for r in rows if r["name"] in selected and r["status"] != "finished"]
    if not_done:
        say(f"{len(not_done)} of {len(runs)} runs did not finish: "
            + ", ".join(f"{r['name']} ({r['status']})" for r in not_done))
        return 1
    say(f"all {len(runs)} runs finished")
    return 0


def _stages(run, run_dir, action, settings, env, live, say, prefix, lock, host=0) -> str:
    if action == "train":
        resuming = rundir.exists(run_dir, rundir.CONFIG)
        log_path = _log_path(run_dir, rundir.TRAIN_LOG, host)
        say(f"{prefix}: {'resuming' if resuming else 'training'} (log: {log_path})")
        argv = [sys.executable, "-m", "vitjax", *run.train_argv(run_dir)]
        code, seconds, log = _subprocess(argv, log_path, env, live, lock)
        if collective_hang(code, log) and not live.stopping:
            say(f"{prefix}: XLA:CPU aborted a collective that not every device joined (exit {code}); resuming "
                f"once from the last checkpoint (resume is bit-exact)")
            code, more, log = _subprocess(argv, log_path, env, live, lock)
            seconds += more
        if code == PREEMPTED_EXIT_CODE or (live.stopping and code != 0):
            saved = "checkpoint saved" if code == PREEMPTED_EXIT_CODE else "no checkpoint of the last steps"
            say(f"{prefix}: interrupted after {seconds:.0f}s (exit {code}: {saved}); re-run the sweep to resume it")
            return "interrupted"
        if code != 0:
            error = _record_failure(run_dir, "train", None, None, code, argv, log)
            say(f"{prefix}: FAILED after {seconds:.0f}s (exit {code}): {error}")
            return "failed"
        results = rundir.read_results(run_dir) or {}
        say(f"{prefix}: trained in {seconds:.0f}s, test accuracy {results.get('test_accuracy', float('nan')):.4f}")

    for probe in _probes_to_run(run_dir, action, settings):
        status = _probe(run_dir, probe, settings[probe], env, live, say, prefix, lock, host)
        if status != "finished":
            return status
    return "finished"


def collective_hang(code: int, output: str) -> bool:
    """Whether a trainer died as XLA:CPU ends a collective whose device threads never all arrived: SIGABRT
    after its rendezvous timeout (vitjax.xla_cpu.COLLECTIVE_PATIENCE_S). Seen about once in 20k steps of
    the 4-device split on 2 cores, in runs that then resumed and finished; nothing of the run's own
    config or data causes it, so one automatic resume is safe where a deterministic error would recur."""
    return code == -signal.SIGABRT and "rendezvous" in output


def _log_path(run_dir: str, name: str, host: int) -> str:
    """A run's log file `name` (train.log, ...); on a pod host other than 0, its own (train.host3.log)."""
    if host:
        stem, dot, ext = name.rpartition(".")
        name = f"{stem}.host{host}{dot}{ext}"
    return rundir.file_path(run_dir, name)


def _probe(run_dir, probe, settings, env, live, say, prefix, lock, host=0) -> str:
    """Runs one few-shot probe ('fewshot' or 'transfer') of a trained run; its status."""
    result_file, log_file = rundir.PROBE_FILES[probe]
    argv = [sys.executable, "-m", "vitjax", *fewshot_argv(run_dir, settings, probe)]
    code, seconds, log = _subprocess(argv, _log_path(run_dir, log_file, host), env, live, lock)
    if code != 0:
        if live.stopping:
            return "interrupted"
        error = _record_failure(run_dir, probe, None, None, code, argv, log)
        say(f"{prefix}: {probe} probe FAILED (exit {code}): {error}")
        return "failed"
    shots = rundir.read_json(run_dir, result_file) or {}
    accuracies = ", ".join(f"{k}={shots[f'{k}shot']:.3f}" for k in shots.get("shots", []))
    say(f"{prefix}: {probe} probe in {seconds:.0f}s: {accuracies}")
    return "finished"


def _subprocess(argv, log_path, env, live, lock) -> tuple[int, float, str]:
    """Runs argv with output appended to log_path; returns (exit code, seconds, this attempt's output).

    The child gets the run's lock (file descriptor `lock`, None on a pod host other than 0) too, so the run stays locked while it lives
    even if the sweep dies, and a session of its own, so a terminal's Ctrl-C reaches only the sweep,
    which passes it on as SIGTERM (the trainer's "checkpoint and stop")."""
    start = time.time()
    if live.stopping:  # the sweep is being interrupted: start nothing new
        return PREEMPTED_EXIT_CODE, 0.0, ""
    with os.fdopen(rundir.open_run_file(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a") as log:
        offset = log.tell()
        log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {_shell(argv)}\n")
        log.flush()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True, pass_fds=() if lock is None else (lock,))
        live.add(proc)
        if lock is not None:
            runlock.describe(lock, pids=[proc.pid, os.getpid()], host=socket.gethostname(), command=_shell(argv))
        code = proc.wait()
        live.discard(proc)
    with open(log_path) as log:
        log.seek(offset)
        output = log.read()
    return code, time.time() - start, output


def _record_failure(run_dir, stage, error, trace, code, argv, log) -> str:
    """Writes DIR/<name>/failed.json and returns the one-line error."""
    if error is None:
        error, trace = _error_of(log or "", code)
    payload = {"stage": stage, "error": error, "traceback": trace, "returncode": code,
               "command": _shell(argv) if argv else "", "time": time.strftime("%Y-%m-%d %H:%M:%S")}
    os.makedirs(run_dir, exist_ok=True)
    rundir.write_json(run_dir, rundir.FAILED, payload)  # whole or not at all: the next sweep reads it
    return error


def _error_of(output: str, code) -> tuple[str, str]:
    """(one-line error, traceback or the output's tail) from a failed subprocess's output."""
    lines = [line for line in output.splitlines() if line.strip()]
    start = max((i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")),
                default=None)
    trace = "\n".join(lines[start:] if start is not None else lines[-40:])
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        hint = " (out of memory? the kernel's OOM killer sends SIGKILL)" if name == "SIGKILL" else ""
        return f"killed by {name}{hint}", trace
    for line in reversed(lines):
        if "error" in line.lower() or line.split(":")[0].endswith(("Error", "Exception", "Interrupt")):
            return line.strip(), trace
    return (lines[-1].strip() if lines else f"exit status {code} with no output"), trace


def _write_table(sweep_dir, say, quiet=False):
    rows, csv_path = table.update(sweep_dir)
    if not quiet:
        say(f"results table: {csv_path}")
        for row in rows:
            accuracy = row.get("test_accuracy")
            shots = [k for k in row if k.startswith("fewshot_") and k.endswith("shot")]
            best = f", {shots[-1][8:]} {row[shots[-1]]:.4f}" if shots and row[shots[-1]] is not None else ""
            say(f"  {row['name']:<24} {row['status']:<12} "
                + (f"test accuracy {accuracy:.4f}{best}" if accuracy is not None else row.get("error", "")[:100]))
    return rows


def _stop_on_signals() -> dict:
    """Makes each of STOP_SIGNALS raise KeyboardInterrupt in the main thread, so that all three stop the
    sweep as Ctrl-C does; returns the handlers replaced. A signal the sweep was started ignoring (nohup,
    or `&` in a script for SIGINT) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    return {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS
            if signal.getsignal(signum) is not signal.SIG_IGN}


def _shell(argv) -> str:
    return " ".join(shlex.quote(str(a)) for a in argv)
