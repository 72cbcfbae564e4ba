"""XLA:CPU compiler options for one config's train step, measured side by side in one process.

    .venv/bin/python experiments/bench/xla_cpu_options.py \
        --config configs/bench/vit.py:variant=Ti/4,res=28,channels=1,batch=128 \
        --out experiments/results/bench/cpu_xla_options_ti4_28_b128.json

Each option set compiles the same train step (same shardings and donation as the trainer) with its
own `compiler_options`; the compiled steps then run in alternating rounds, each on its own copy of the
state, and the table gives img/s per set and its ratio to the first set (vitjax's own choice,
`vitjax.xla_cpu.COMPILER_OPTIONS`, or the config's `compiler_options`); every other set's options are
applied on top of that one. This is how a new jaxlib's CPU settings should be re-measured before
vitjax/xla_cpu.py changes. Takes --config and --config.KEY=VALUE as `vitjax bench` does; writes JSON
(--out).

`--devices 1,2,4` compiles the step for each number of CPU devices instead (the first N of the
process's, data parallel as `vitjax train` runs; with --option_set, every set for each):

    .venv/bin/python experiments/bench/xla_cpu_options.py --config configs/fashion_mnist/vit.py \
        --devices 1,2,4,8 --out devices.json

Compared this way, 4 devices gained more than `vitjax bench`'s ratio to timm showed across separate
processes (ViT-Ti at 224: 1.21x here, no gain there), so confirm a device count with
`VITJAX_CPU_DEVICES=N vitjax bench` before changing vitjax/xla_cpu.py.
"""
import argparse
import dataclasses
import json
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from vitjax import data, parallel, xla_cpu
from vitjax.config import OVERRIDE_HELP, parse_command_line
from vitjax.bench import jax_model, run, timing
from vitjax.train import trainer

# jaxlib 0.10's wheels carry oneDNN's fusion path; its `xla_cpu_experimental_onednn_custom_call` rewrite
# left the HLO unchanged here (no oneDNN calls in it), so it is not listed.
DEFAULT = "vitjax default"  # the set every other is compared with: the config's compiler_options
OPTION_SETS = {
    DEFAULT: {},
    "oneDNN fusion (dot)": {"xla_cpu_use_onednn": True,
                            "xla_cpu_experimental_onednn_fusion_type": "LIBRARY_FUSION_TYPE_DOT"},
}

# How the compiled HLO names work handed to a library (fusion kinds and custom-call targets).
LIBRARY_MARKERS = {"oneDNN": "onednn", "YNNPACK": "__ynn_fusion", "XNNPACK": "__xnn_fusion"}


def option_set(text: str) -> tuple[str, dict]:
    name, separator, options = text.partition("=")
    try:
        parsed = json.loads(options) if separator and name else None
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"{text!r}: the options after '=' are not JSON ({error})") from None
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME=JSON-object, e.g. 'wide={{\"xla_cpu_prefer_vector_width\": 512}}'")
    return name, parsed


def device_counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of positive device counts, e.g. 1,2,4")
    return counts


def main():
    xla_cpu.reexec_under_tcmalloc()  # as `vitjax` itself runs
    parser = _parser()
    args = parse_command_line(parser, sys.argv[1:])
    option_sets = _option_sets(args, parser)
    # `vitjax bench`'s config building, without its convenience flags (all None here).
    config, _ = run.build_config(argparse.Namespace(
        **vars(args), image=None, channels=None, **{flag: None for flag in run.MODEL_FLAGS}))
    if args.devices:
        try:
            jax.config.update("jax_num_cpu_devices", max(args.devices))
        except RuntimeError:  # a caller in this process started JAX first
            parser.error("--devices needs a process in which JAX has not started yet")
    # The CPU choices `vitjax train` makes; with --devices, the count is the script's.
    xla_cpu.choose(config, device_count=max(args.devices) if args.devices else None)
    option_sets = {name: {**config.compiler_options, **options} for name, options in option_sets.items()}
    steps = _compile_steps(config, _plans(config, args.devices), option_sets, by_devices=bool(args.devices),
                           seconds=args.seconds)
    load_start = timing.load_average()
    timing.alternate([step.workload for step in steps], args.rounds)
    result = {"config": args.config, "overrides": args.overrides, "rounds": args.rounds, "jax": jax.__version__,
              "load_average": {"start": load_start, "end": timing.load_average()}, "rows": _rows(steps)}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {args.out}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=OVERRIDE_HELP)
    parser.add_argument("--config", default=run.DEFAULT_CONFIG, help="config file, configs/<file>.py[:arg]")
    parser.add_argument("--rounds", type=int, default=5, help="alternating measurement rounds")
    parser.add_argument("--seconds", type=float, default=2.0, help="target duration of each step set per round")
    parser.add_argument("--out", default="xla_cpu_options.json", help="where the JSON goes")
    parser.add_argument("--option_set", action="append", type=option_set, metavar="NAME=JSON",
                        help="an option set to measure instead of the built-in ones, e.g. "
                             "'wide={\"xla_cpu_prefer_vector_width\": 512}'; repeatable; the process "
                             "default always comes first")
    parser.add_argument("--devices", type=device_counts, default=None, metavar="N,N,...",
                        help="CPU device counts to compile each set for (default: the one `vitjax train` uses); "
                             "the first count's vitjax default is the baseline")
    return parser


def _option_sets(args, parser) -> dict:
    """{name: compiler options}: vitjax's default first, then --option_set's or the built-in ones."""
    option_sets = {DEFAULT: {}} if args.devices else OPTION_SETS  # with --devices the count is the variable
    if args.option_set:
        names = [DEFAULT] + [name for name, _ in args.option_set]
        if len(set(names)) < len(names):
            parser.error(f"--option_set names must differ from each other and from {DEFAULT!r}: {names}")
        option_sets = dict([(DEFAULT, {}), *args.option_set])
    return option_sets


def _plans(config, devices: list[int] | None) -> list:
    """The trainer's plan on the config's own mesh, or one per --devices count (data parallel over
    the process's first N devices)."""
    process_plan = trainer.plan(config)
    if not devices:
        return [process_plan]
    meshes = [parallel.make_mesh({"data": count}, devices=jax.devices()[:count]) for count in devices]
    for mesh in meshes:
        parallel.check_batch_size(config.batch_size, mesh)
    return [dataclasses.replace(process_plan, mesh=mesh) for mesh in meshes]


@dataclasses.dataclass
class _Step:
    """One option set's train step compiled for one plan, and what its first steps left."""
    name: str
    cpu_devices: int
    options: dict
    workload: timing.Workload
    libraries: dict  # mentions of each library in the compiled HLO
    params: Any  # after the steps calibration took


def _compile_steps(config, plans, option_sets: dict, *, by_devices: bool, seconds: float) -> list[_Step]:
    """Every option set compiled for every plan, each step on its own copy of the same initial state,
    calibrated to `seconds` per round."""
    init_key, dropout_key = jax.random.split(jax.random.key(config.seed))
    info = plans[0].info
    host = jax_model.random_batch(config.batch_size, info.image_shape, info.num_classes)
    steps = []
    for p in plans:
        count = p.mesh.devices.size
        spec = trainer.state_spec(config, p)
        lowered, batch_sharding = trainer.lower_train_step(config, p, spec, dropout_key)
        batch = data.to_global(host, batch_sharding)
        initial = trainer.init_state(spec, init_key)
        for set_name, options in option_sets.items():
            with jax.set_mesh(p.mesh), nn.logical_axis_rules(p.rules):
                step = lowered.compile(compiler_options=options or None)
            holder = {"state": jax.tree.map(jnp.copy, initial)}  # each step donates (consumes) its own copy
            hlo = step.as_text()

            def call(step=step, holder=holder, batch=batch):
                holder["state"], metrics = step(holder["state"], batch, dropout_key)
                return jax.block_until_ready(metrics)

            name = f"{set_name}, {count} devices" if by_devices else set_name
            workload = timing.Workload(name, call, images=config.batch_size)
            timing.calibrate(workload, seconds)
            steps.append(_Step(name, count, options, workload,
                               {lib: hlo.count(marker) for lib, marker in LIBRARY_MARKERS.items() if marker in hlo},
                               jax.device_get(holder["state"].params)))
    return steps


def _rows(steps: list[_Step]) -> list[dict]:
    """One row per step, compared with the first, each also printed."""
    base = steps[0].workload.per_second()
    rows = []
    for step in steps:
        # Each state has taken the same two steps: the options may change rounding, not the maths.
        difference = max(jax.tree.leaves(jax.tree.map(lambda a, b: float(np.max(np.abs(a - b))),
                                                      steps[0].params, step.params)))
        rates = step.workload.per_second()
        rows.append({"name": step.name, "cpu_devices": step.cpu_devices, "compiler_options": step.options,
                     "img_per_sec": timing.median(rates),
                     "min": min(rates), "max": max(rates), "ratio_to_default": timing.paired_ratio(rates, base),
                     "max_param_difference_after_2_steps": difference,
                     "library_mentions_in_hlo": step.libraries})
        print(f"{step.name:36s} {rows[-1]['img_per_sec']:8.1f} img/s ({min(rates):.1f}..{max(rates):.1f})"
              f"  x{rows[-1]['ratio_to_default']:.3f}  params differ by {difference:.1e} after 2 steps"
              f"  HLO mentions {step.libraries}")
    return rows


if __name__ == "__main__":
    main()
