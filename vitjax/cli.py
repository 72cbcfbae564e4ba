"""The `vitjax` command (also `python -m vitjax`).

    vitjax train --config configs/<file>.py[:arg] --workdir DIR [--config.key=value ...] [--force]
                 [--coordinator_address HOST:PORT --num_processes N --process_id I] [--distributed auto|on|off]
    vitjax eval  --workdir DIR [--checkpoint PATH] [--fewshot | --fewshot_only] [--shots 1,5,10,25]
    vitjax sweep experiments/<file>.py[:arg] --workdir DIR [--only NAME ...] [--dry-run] [--parallel N]
    vitjax plot  DIR [--out FIGDIR]
    vitjax data prepare fashion_mnist [--data_dir DIR] [--download]
    vitjax analyze --workdir DIR [--checkpoint PATH] [--out FIGDIR] [--num_images 64]
    vitjax bench --config configs/<file>.py[:arg] [--config.key=value ...] [--rounds 7] [--out bench.json]
"""
import argparse
import sys

from vitjax import allocator


def _train(argv):
    # absl flags give locked ml_collections configs, `:arg` and `--config.key=value` overrides,
    # and a "did you mean" on typos, all before anything heavy is imported.
    from absl import flags
    from ml_collections import config_flags

    config_flags.DEFINE_config_file("config", None, "Training config file (configs/...py[:arg]).",
                                    lock_config=True)
    flags.DEFINE_string("workdir", None, "Directory for checkpoints, logs and results.")
    flags.DEFINE_bool("force", False, "Resume a workdir even if its config differs, or redo a finished run.")
    # Multi-process runs (several hosts, or several processes on one); see docs/scaling.md.
    flags.DEFINE_enum("distributed", "auto", ["auto", "on", "off"],
                      "Join a multi-process run with jax.distributed.initialize: 'auto' does when the three flags "
                      "below (or JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID) are set or on a Cloud "
                      "TPU VM; 'on' always (JAX detects TPU pods, SLURM, Open MPI); 'off' never.")
    flags.DEFINE_string("coordinator_address", None, "host:port of process 0, the same on every process.")
    flags.DEFINE_integer("num_processes", None, "Number of processes in the run.")
    flags.DEFINE_integer("process_id", None, "This process's index, 0 .. num_processes-1.")
    flags.mark_flags_as_required(["config", "workdir"])
    try:
        flags.FLAGS(["vitjax train", *argv])
    except flags.Error as error:
        sys.exit(f"vitjax train: {error}")

    from vitjax import parallel
    try:
        # Before anything touches a device: the backends must see every process's devices.
        parallel.initialize_distributed(flags.FLAGS.coordinator_address, flags.FLAGS.num_processes,
                                        flags.FLAGS.process_id, mode=flags.FLAGS.distributed)
    except ValueError as error:
        sys.exit(f"vitjax train: error: {error}")

    from vitjax import cpu_devices
    from vitjax.train import preemption, trainer
    try:
        cpu_devices.apply(flags.FLAGS.config)
        trainer.train(flags.FLAGS.config, flags.FLAGS.workdir, force=flags.FLAGS.force)
    except preemption.Preempted as notice:
        print(notice, flush=True)
        sys.exit(preemption.PREEMPTED_EXIT_CODE)
    except (ValueError, FileNotFoundError, trainer.NonFiniteLoss) as error:
        sys.exit(f"vitjax train: error: {error}")


def _eval(args):
    from vitjax.evaluate import fewshot
    from vitjax.train import reevaluate
    try:
        probe = fewshot.settings_from_args(args)  # None unless --fewshot or --fewshot_only
        results = {} if args.fewshot_only else reevaluate.evaluate_workdir(args.workdir, checkpoint=args.checkpoint)
        if probe is not None:
            results.update(fewshot.fewshot_workdir(args.workdir, checkpoint=args.checkpoint, **probe))
    except (ValueError, FileNotFoundError) as error:
        sys.exit(f"vitjax eval: error: {error}")
    print(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in results.items()))


def _data(args):
    from vitjax import data
    path = data.prepare(args.name, data_dir=args.data_dir, download=args.download)
    print(f"{args.name} is ready in {path}")


def main(argv=None):
    if argv is None:  # the command line, not a caller in this process: choose the allocator first
        allocator.reexec_under_tcmalloc()
        argv = sys.argv[1:]
    parser = argparse.ArgumentParser(prog="vitjax", description="Vision Transformers and BiT in JAX/Flax.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("train", help="train a model from a config file (flags: --config, --workdir, --force)",
                        add_help=False)
    evaluate = commands.add_parser("eval", help="re-evaluate a trained run or a checkpoint")
    evaluate.add_argument("--workdir", required=True)
    evaluate.add_argument("--checkpoint", default=None,
                          help="a checkpoints/<step> directory, or another run's workdir or checkpoints/ directory "
                               "(default: the newest good checkpoint in --workdir)")
    from vitjax.evaluate import fewshot  # cheap: numpy only until it runs
    fewshot.add_args(evaluate)
    prepare = commands.add_parser("data", help="prepare a dataset offline")
    prepare.add_argument("action", choices=["prepare"])
    prepare.add_argument("name")
    prepare.add_argument("--data_dir", default=None)
    prepare.add_argument("--download", action="store_true", help="use the ordinary tfds download (needs internet)")

    from vitjax.analysis import run as analysis  # cheap: jax and matplotlib load only when it runs
    analysis.main_args(commands.add_parser("analyze", help="figures that look inside a trained ViT (paper Fig. 7)"))
    from vitjax.sweep import commands as sweeps  # cheap, like the analysis parser
    sweeps.sweep_args(commands.add_parser("sweep", help="run a sweep file's runs, each in a subprocess and its own "
                                                        "sub-workdir; writes DIR/results.csv"))
    sweeps.plot_args(commands.add_parser("plot", help="the paper's sweep figures from a sweep's results table"))
    from vitjax.bench import run as bench  # cheap: jax and torch load only when it runs
    bench.main_args(commands.add_parser("bench", help="train-step, inference and input throughput, MFU, "
                                                      "side by side with timm; writes JSON"))

    if argv and argv[0] == "train":
        return _train(argv[1:])
    if argv and argv[0] == "bench":
        argv = ["bench", *bench.normalize_argv(argv[1:])]  # --config.key=value overrides, as for train
    args = parser.parse_args(argv)
    {"eval": _eval, "data": _data, "analyze": analysis.run, "sweep": sweeps.sweep_main,
     "plot": sweeps.plot_main, "bench": bench.run}[args.command](args)


if __name__ == "__main__":
    main()
