"""The `vitjax sweep` and `vitjax plot` command lines (arguments here, work in runner.py and plots.py).

    vitjax sweep experiments/<file>.py[:arg] --workdir DIR [--only NAME ...] [--dry-run] [--parallel N]
                 [--pin_gpus] [--no_fewshot] [--redo_stale]
    vitjax plot DIR [--out FIGDIR]

Importing this module is cheap (no jax, TensorFlow or matplotlib), so the CLI can add the parsers freely.
"""
import sys


def sweep_args(parser) -> None:
    parser.add_argument("sweep", help="a sweep file, experiments/<file>.py[:arg], defining get_runs(arg)")
    parser.add_argument("--workdir", required=True, help="the sweep's directory; run <name> trains in DIR/<name>")
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME", help="run only these runs (space- or comma-separated)")
    parser.add_argument("--dry-run", "--dry_run", dest="dry_run", action="store_true",
                        help="check the sweep and print what each run would do, then stop")
    parser.add_argument("--parallel", type=int, default=1,
                        help="runs at once (default 1). Useful with one accelerator per run (see --pin_gpus); "
                             "on a CPU, concurrent runs share the cores and each gets slower")
    parser.add_argument("--pin_gpus", action="store_true",
                        help="give concurrent run i the GPU CUDA_VISIBLE_DEVICES=i (use with --parallel N on N GPUs)")
    parser.add_argument("--no_fewshot", action="store_true", help="skip the few-shot linear probe after training")
    parser.add_argument("--redo_stale", action="store_true",
                        help="a run trained with another config than the sweep file now gives it (status 'stale', "
                             "e.g. after an override was edited) is moved to DIR/_stale/ and trained afresh; "
                             "without this flag it is reported and left alone")


def sweep_main(args) -> None:
    from vitjax.sweep import runner, spec
    try:
        sweep = spec.load(args.sweep)
        sweep.select(args.only)  # an unknown --only name fails here, before anything runs
    except (spec.SweepError, FileNotFoundError) as error:
        sys.exit(f"vitjax sweep: error: {error}")
    try:
        code = runner.run_sweep(sweep, args.workdir, only=args.only, dry_run=args.dry_run,
                                parallel=args.parallel, fewshot=not args.no_fewshot, pin_gpus=args.pin_gpus,
                                redo_stale=args.redo_stale)
    except ValueError as error:
        sys.exit(f"vitjax sweep: error: {error}")
    sys.exit(code)


def plot_args(parser) -> None:
    parser.add_argument("sweep_dir", metavar="DIR", help="a sweep's --workdir (holds results.json or run directories)")
    parser.add_argument("--out", default=None, help="where figures and their tables go (default: DIR/figures)")
    parser.add_argument("--beside", nargs="+", default=(), metavar="OTHER",
                        help="other sweeps' directories whose finished runs are drawn beside DIR's")
    parser.add_argument("--title", default=None, help="the figures' title (default: the sweep file's TITLE)")


def plot_main(args) -> None:
    from vitjax.sweep import plots
    try:
        result = plots.plot(args.sweep_dir, args.out, beside=args.beside, title=args.title)
    except (ValueError, FileNotFoundError) as error:
        sys.exit(f"vitjax plot: error: {error}")
    print(f"{result['runs']} finished runs in {' '.join([args.sweep_dir, *args.beside])}")
    if result["without_accuracy"]:
        unscored = result["without_accuracy"]
        verb = "has" if len(unscored) == 1 else "have"
        print(f"{len(unscored)} of them {verb} no test accuracy (their objective scores them otherwise) and are "
              f"in no figure: {', '.join(unscored[:5])}" + (", ..." if len(unscored) > 5 else ""))
    for name, paths in result["written"].items():
        print(f"{name}: " + ", ".join(paths))
    for name, reason in result["skipped"].items():
        print(f"{name}: skipped: {reason}")
    if not result["written"]:
        sys.exit(1)
