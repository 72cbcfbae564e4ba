"""The `vitjax` command (also `python -m vitjax`).

    vitjax train --config configs/<file>.py[:arg] --workdir DIR [--config.key=value ...] [--force]
                 [--coordinator_address HOST:PORT --num_processes N --process_id I] [--distributed auto|on|off]
    vitjax eval  --workdir DIR [--checkpoint PATH] [--fewshot | --fewshot_only] [--shots 1,5,10,25]
                 [--knn | --knn_only] [--knn_k 20] [--knn_train_size N --knn_subset_seed S]
                 [--fewshot_data JSON] [--probe fewshot|transfer] [--captions] [the multi-process flags of train]
    vitjax sweep experiments/<file>.py[:arg] --workdir DIR [--only NAME ...] [--dry-run] [--parallel N]
    vitjax plot  DIR [--out FIGDIR] [--beside OTHER_DIR ...] [--title TITLE]
    vitjax data prepare fashion_mnist [--data_dir DIR] [--download]
    vitjax analyze --workdir DIR [--checkpoint PATH] [--out FIGDIR] [--num_images 64] [--beside DIR ...]
                   [the multi-process flags]
    vitjax bench --config configs/<file>.py[:arg] [--config.key=value ...] [--rounds 7] [--out bench.json]
"""
import argparse
import logging
import os
import sys

from vitjax import tensorflow_startup, xla_cpu
from vitjax.checkpoints import reported_once
from vitjax.config import OVERRIDE_HELP, parse_command_line


# The commands that spend their time in compiled steps, for which the CPU runtime choices are made.
XLA_HEAVY_COMMANDS = ("train", "bench")


def _train_args(parser) -> None:
    """Adds `vitjax train`'s arguments to an argparse (sub)parser; `--config.KEY=VALUE` are taken out before."""
    parser.add_argument("--config", required=True, metavar="FILE[:ARG]",
                        help="Training config file (configs/...py[:arg]).")
    parser.add_argument("--workdir", required=True, help="Directory for checkpoints, logs and results.")
    parser.add_argument("--steps", type=int, default=None, metavar="N",
                        help="Train N steps whatever the config's duration, a tenth of them warmup (a smoke run); "
                             "recorded in the run's config like any override.")
    parser.add_argument("--force", action="store_true",
                        help="Resume a workdir even if its config differs, or redo a finished run; the previous "
                             "config and results are kept in WORKDIR/history/.")
    distributed_args(parser)


def distributed_args(parser) -> None:
    """Adds the multi-process flags that `vitjax train`, `eval` and `analyze` share to a (sub)parser;
    `join` reads them. On a pod every host runs the same command with them (or with none, on a TPU VM)."""
    multi = parser.add_argument_group("multi-process runs (several hosts, or several processes on one; "
                                      "docs/scaling.md)")
    multi.add_argument("--distributed", choices=["auto", "on", "off"], default="auto",
                       help="Join a multi-process run with jax.distributed.initialize: 'auto' does when the three "
                            "flags below (or JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID) are set or "
                            "on a Cloud TPU VM; 'on' always (JAX detects TPU pods, SLURM, Open MPI); 'off' never.")
    multi.add_argument("--coordinator_address", default=None, metavar="HOST:PORT",
                       help="host:port of process 0, the same on every process.")
    multi.add_argument("--num_processes", type=int, default=None, metavar="N", help="Number of processes in the run.")
    multi.add_argument("--process_id", type=int, default=None, metavar="I",
                       help="This process's index, 0 .. num_processes-1.")


def join(args) -> None:
    """jax.distributed.initialize from `distributed_args`' flags, before anything touches a device
    (the backends must see every process's devices); a bad combination exits naming the fix."""
    from vitjax import parallel
    try:
        parallel.initialize_distributed(args.coordinator_address, args.num_processes, args.process_id,
                                        mode=args.distributed)
    except ValueError as error:
        sys.exit(f"vitjax {args.command}: error: {error}")


ENV_COMPILATION_CACHE = "VITJAX_COMPILATION_CACHE"


def use_compilation_cache(directory: str = "") -> str:
    """Turns on JAX's persistent compilation cache in `directory` (config.compilation_cache_dir), or when
    that is empty in $VITJAX_COMPILATION_CACHE; returns the directory used ('' when off).

    Compiled programs are written there and a later process compiling the same program (same code,
    shapes, devices, jax version) loads it instead: minutes saved per restart of a large model on a
    pod. Every program is cached (minimum compile time 0 s, any size), as the steps that matter are
    few. A local path or gs:// (JAX reads it through etils). Call before the first compilation.
    The cache is trusted: whoever can write to it can run code in the processes that read it.
    """
    import os

    import jax

    directory = directory or os.environ.get(ENV_COMPILATION_CACHE, "")
    if directory:
        jax.config.update("jax_compilation_cache_dir", directory)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return directory


def _train(args):
    from vitjax.config import apply_overrides, load_config
    from vitjax.train import checks
    try:
        # Before any device starts: a typo in the config, its :arg or an override, or a value no run
        # can use (the CPU choices below divide by some), fails at once.
        config = load_config(args.config)
        apply_overrides(config, args.overrides)
        if args.steps is not None:
            from vitjax import durations
            durations.set_steps(config, args.steps)
        checks.config(config)
    except (ValueError, FileNotFoundError) as error:
        sys.exit(f"vitjax train: error: {error}")

    join(args)
    from vitjax import train_lock
    from vitjax.train import preemption, trainer
    try:
        runtime = xla_cpu.choose(config)  # on a CPU backend only; after jax.distributed, before any device starts
        use_compilation_cache(config.compilation_cache_dir)
        trainer.train(config, args.workdir, force=args.force, runtime=runtime)
    except preemption.Preempted as notice:
        print(notice, flush=True)
        sys.exit(preemption.PREEMPTED_EXIT_CODE)
    except KeyboardInterrupt:  # a second Ctrl-C (the first saves and exits as preempted)
        sys.exit("vitjax train: stopped by a second Ctrl-C, unsaved; the same command resumes from the newest "
                 "checkpoint")
    except (ValueError, trainer.NonFiniteLoss, train_lock.WorkdirInUse) as error:
        sys.exit(f"vitjax train: error: {error}")
    except OSError as error:  # the run directory's disk or permissions (EACCES, ENOSPC, EROFS), a missing file
        sys.exit(f"vitjax train: error: {_os_error(error)}")


def _os_error(error: OSError) -> str:
    """'/sys/x: Permission denied (errno EACCES)' in one line, with the free space for a full disk; an
    error vitjax raised itself (no file name) as its message."""
    import errno
    import shutil

    if not error.filename:
        return str(error)
    line = f"{error.filename}: {error.strerror or error}"
    if error.errno is not None:
        line += f" (errno {errno.errorcode.get(error.errno, error.errno)})"
    if error.errno == errno.ENOSPC and "free" not in line:
        try:
            free = shutil.disk_usage(os.path.dirname(os.path.abspath(error.filename)) or ".").free
            line += f"; free space there: {free / 2**20:,.0f} MiB"
        except OSError:
            pass
    return line


def _eval(args):
    join(args)
    use_compilation_cache()  # $VITJAX_COMPILATION_CACHE (the run's config may name another, for training)
    from vitjax import rundir
    from vitjax.evaluate import fewshot, knn
    from vitjax.train import reevaluate
    try:
        probe = fewshot.settings_from_args(args)  # None unless --fewshot or --fewshot_only
        neighbours = knn.settings_from_args(args)  # None unless --knn or --knn_only
        only = args.fewshot_only or args.knn_only
        results = {} if only else reevaluate.evaluate_workdir(args.workdir, checkpoint=args.checkpoint)
        if probe is not None:
            results.update(fewshot.fewshot_workdir(args.workdir, checkpoint=args.checkpoint, **probe))
        if neighbours is not None:
            results.update(knn.knn_workdir(args.workdir, checkpoint=args.checkpoint, **neighbours))
        if args.captions:
            from vitjax.evaluate import caption_evals

            results.update(caption_evals.workdir_scores(args.workdir, checkpoint=args.checkpoint))
    except ValueError as error:
        sys.exit(f"vitjax eval: error: {error}")
    except OSError as error:
        sys.exit(f"vitjax eval: error: {_os_error(error)}")
    if rundir.is_writer():  # one line per run, not one per host
            print(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in results.items()))


def _export(args):
    """A checkpoint's evaluated parameters as an official-layout .npz, and the flags that load it."""
    import shlex

    from vitjax import rundir, storage
    from vitjax.checkpoints import locations, reader
    from vitjax.config import override_flags, teacher_overrides
    from vitjax.interop import npz, pretrained
    folder = os.path.dirname(os.path.abspath(args.out))
    if not storage.is_remote(args.out) and not os.path.isdir(folder):  # refused before the checkpoint is read
        sys.exit(f"vitjax export: error: --out {args.out!r}: its directory {folder} does not exist; create it or "
                 f"pass another path")
    try:
        params = reader.read_params(args.checkpoint)
        config = rundir.load_config(locations.locate(args.checkpoint).run_dir)
        path = npz.save(args.out, params)
    except (ValueError, FileNotFoundError) as error:
        sys.exit(f"vitjax export: error: {error}")
    except OSError as error:  # the --out disk or permissions
        sys.exit(f"vitjax export: error: {_os_error(error)}")
    if pretrained.is_pretraining(params):
        flags = [f"--config.init_from={path}"]
        print(f"wrote {path}; to fine-tune its encoder as a ViT classifier of its dimensions: {shlex.join(flags)}")
    else:
        flags = [f"--config.distillation.teacher={path}",
                 *override_flags(teacher_overrides(config.model_name, config.model))]
        print(f"wrote {path}; as a distillation teacher: {shlex.join(flags)}")


def _data(args):
    from vitjax import data
    try:
        path = data.prepare(args.name, data_dir=args.data_dir, download=args.download)
    except (ValueError, FileNotFoundError) as error:  # DataError, MissingDataError: the message names the fix
        sys.exit(f"vitjax data prepare: error: {error}")
    print(f"{args.name} is ready in {path}")


# Warnings of the stack that tell a vitjax user nothing: orbax announces every read-only open (each
# `vitjax eval`, few-shot probe and teacher reads one), tfds a dataset folder it is looking into.
_LOG_NOISE = ("Given directory is read only=%s", "Variant folder %s has no %s")


def _not_noise(record) -> bool:
    return record.msg not in _LOG_NOISE


def main(argv=None):
    if argv is None:  # the command line, not a caller in this process
        argv = sys.argv[1:]
        if argv and argv[0] in XLA_HEAVY_COMMANDS:
            xla_cpu.reexec_under_tcmalloc()  # the allocator must be chosen before anything else runs
    tensorflow_startup.skip_keras()  # before any command imports TensorFlow
    logging.getLogger("absl").addFilter(_not_noise)  # absl's Python logger, which orbax and tfds write to
    reported_once.quiet()  # an unreadable checkpoint or a full disk: one error, not dozens of tracebacks after it
    parser = argparse.ArgumentParser(prog="vitjax", description="Vision Transformers and BiT in JAX/Flax.")
    commands = parser.add_subparsers(dest="command", required=True)
    _train_args(commands.add_parser("train", help="train a model from a config file into a workdir",
                                    description="Train a model from a config file into a workdir; running the "
                                                "same command again resumes it.", epilog=OVERRIDE_HELP))
    evaluate = commands.add_parser("eval", help="re-evaluate a trained run or a checkpoint")
    evaluate.add_argument("--workdir", required=True)
    evaluate.add_argument("--checkpoint", default=None,
                          help="a checkpoints/<step> directory, or another run's workdir or checkpoints/ directory "
                               "(default: the newest good checkpoint in --workdir)")
    from vitjax.evaluate import fewshot, knn  # cheap: numpy only until they run
    fewshot.add_args(evaluate)
    knn.add_args(evaluate)
    evaluate.add_argument("--captions", action="store_true",
                          help="a contrastive run: also zero-shot accuracy on held-out and seen colour-item pairs "
                               "and retrieval R@1/R@5 (vitjax/evaluate/caption_evals.py)")
    distributed_args(evaluate)
    export = commands.add_parser("export", help="write a checkpoint's parameters as an official-layout .npz")
    export.add_argument("checkpoint", help="a run's workdir (its newest checkpoint), its checkpoint_best/ "
                                           "directory (the best validation step) or a checkpoints/<step> directory")
    export.add_argument("--out", required=True, help="the .npz file to write (a gs:// URL works too)")
    prepare = commands.add_parser("data", help="prepare a dataset offline")
    prepare.add_argument("action", choices=["prepare"])
    prepare.add_argument("name")
    prepare.add_argument("--data_dir", default=None)
    prepare.add_argument("--download", action="store_true", help="use the ordinary tfds download (needs internet)")

    from vitjax.analysis import run as analysis  # cheap: jax and matplotlib load only when it runs
    analyze = commands.add_parser("analyze", help="figures that look inside a trained ViT (paper Fig. 7), or a "
                                                  "SAM run's answers to prompts")
    analysis.main_args(analyze)
    distributed_args(analyze)
    from vitjax.sweep import commands as sweeps  # cheap, like the analysis parser
    sweeps.sweep_args(commands.add_parser("sweep", help="run a sweep file's runs, each in a subprocess and its own "
                                                        "sub-workdir; writes DIR/results.csv"))
    sweeps.plot_args(commands.add_parser("plot", help="the paper's sweep figures from a sweep's results table"))
    from vitjax.bench import run as bench  # cheap: jax and torch load only when it runs
    bench.main_args(commands.add_parser("bench", help="train-step, inference and input throughput, MFU, "
                                                      "side by side with timm; writes JSON"))

    if argv and argv[0] in XLA_HEAVY_COMMANDS:
        args = parse_command_line(parser, argv)  # their --config.KEY=VALUE overrides go to args.overrides
    else:
        args = parser.parse_args(argv)
    command = {"train": _train, "eval": _eval, "export": _export, "data": _data,
               "analyze": lambda a: (join(a), analysis.run(a)), "sweep": sweeps.sweep_main, "plot": sweeps.plot_main,
               "bench": bench.run}[args.command]
    try:
        command(args)
    except KeyboardInterrupt:
        # Train and sweep answer Ctrl-C themselves (a save; the runs' states recorded); the other commands
        # write whole files. The exit skips the interpreter's teardown, which can crash while XLA still
        # compiles on other threads (a segfault after a stopped `vitjax analyze`, seen 2026-12-07).
        from vitjax.train.preemption import INTERRUPTED_EXIT_CODE
        print(f"vitjax {args.command}: stopped by Ctrl-C", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(INTERRUPTED_EXIT_CODE)


if __name__ == "__main__":
    main()
