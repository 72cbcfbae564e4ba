"""XLA:CPU compiler options for one config's train step, measured side by side in one process.

    .venv/bin/python experiments/bench/xla_cpu_options.py \
        --config configs/bench/vit.py:variant=Ti/4,res=28,channels=1,batch=128 \
        --out experiments/results/bench/cpu_xla_options_ti4_28_b128.json

Each option set compiles the same train step (same shardings and donation as the trainer) with its
own `compiler_options`; the compiled steps then run in alternating rounds, each on its own copy of the
state, and the table gives img/s per set and its ratio to the first set (the process's XLA_FLAGS,
i.e. vitjax/cpu_flags.py's choice). This is how a new jaxlib's CPU settings should be re-measured
before vitjax/cpu_flags.py changes. Takes --config and --config.KEY=VALUE as `vitjax bench` does;
writes JSON (--out).

`--devices 1,2,4` compiles the step for each number of CPU devices instead (the first N of the
process's, data parallel as `vitjax train` runs; with --option_set, every set for each):

    .venv/bin/python experiments/bench/xla_cpu_options.py --config configs/fashion_mnist/vit.py \
        --devices 1,2,4,8 --out devices.json

Compared this way, 4 devices gained more than `vitjax bench`'s ratio to timm showed across separate
processes (ViT-Ti at 224: 1.21x here, no gain there), so confirm a device count with
`VITJAX_CPU_DEVICES=N vitjax bench` before changing vitjax/cpu_devices.py.
"""
import argparse
import dataclasses
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from vitjax import allocator, cpu_devices, data, parallel
from vitjax.config import OVERRIDE_HELP, parse_command_line
from vitjax.bench import jax_model, run, timing
from vitjax.train import trainer

# jaxlib 0.10's wheels carry oneDNN's fusion path; its `xla_cpu_experimental_onednn_custom_call` rewrite
# left the HLO unchanged here (no oneDNN calls in it), so it is not listed.
DEFAULT = "process default"  # the set every other is compared with: no options beyond XLA_FLAGS
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
    allocator.reexec_under_tcmalloc()  # as `vitjax` itself runs
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
                             "the first count's process default is the baseline")
    args = parse_command_line(parser, sys.argv[1:])
    option_sets = {DEFAULT: {}} if args.devices else OPTION_SETS  # with --devices the count is the variable
    if args.option_set:
        names = [DEFAULT] + [name for name, _ in args.option_set]
        if len(set(names)) < len(names):
            parser.error(f"--option_set names must differ from each other and from {DEFAULT!r}: {names}")
        option_sets = dict([(DEFAULT, {}), *args.option_set])
    # `vitjax bench`'s config building, without its convenience flags (all None here).
    config, _ = run.build_config(argparse.Namespace(
        **vars(args), image=None, channels=None, **{flag: None for flag in run.MODEL_FLAGS}))
    if args.devices:
        try:
            jax.config.update("jax_num_cpu_devices", max(args.devices))
        except RuntimeError:  # a caller in this process started JAX first
            parser.error("--devices needs a process in which JAX has not started yet")
    else:
        cpu_devices.apply(config)  # the CPU split `vitjax train` uses
    init_key, dropout_key = jax.random.split(jax.random.key(config.seed))
    process_plan = trainer.plan(config)  # the config's own mesh, unless --devices replaces it
    plans = [process_plan]
    if args.devices:
        meshes = [parallel.make_mesh({"data": count}, devices=jax.devices()[:count]) for count in args.devices]
        for mesh in meshes:
            parallel.check_batch_size(config.batch_size, mesh)
        plans = [dataclasses.replace(process_plan, mesh=mesh) for mesh in meshes]
    host = jax_model.random_batch(config.batch_size, process_plan.info.image_shape, process_plan.info.num_classes)
    workloads, states, libraries, variants = [], [], {}, []
    for p in plans:
        count = p.mesh.devices.size
        spec = trainer.state_spec(config, p)
        lowered, batch_sharding = trainer.lower_train_step(config, p, spec, dropout_key)
        batch = data.to_global(host, batch_sharding)
        initial = trainer.init_state(spec, init_key)
        for set_name, options in option_sets.items():
            name = f"{set_name}, {count} devices" if args.devices else set_name
            variants.append((name, count, options))
            with jax.set_mesh(p.mesh), nn.logical_axis_rules(p.rules):
                step = lowered.compile(compiler_options=options or None)
            holder = {"state": jax.tree.map(jnp.copy, initial)}  # each step donates (consumes) its own copy
            hlo = step.as_text()
            libraries[name] = {lib: hlo.count(marker) for lib, marker in LIBRARY_MARKERS.items() if marker in hlo}

            def call(step=step, holder=holder, batch=batch):
                holder["state"], metrics = step(holder["state"], batch, dropout_key)
                return jax.block_until_ready(metrics)

            workloads.append(timing.Workload(name, call, images=config.batch_size))
            timing.calibrate(workloads[-1], args.seconds)
            states.append(jax.device_get(holder["state"].params))
    # Each state has now taken the same two steps: the options may change rounding, not the maths.
    differences = [max(jax.tree.leaves(jax.tree.map(lambda a, b: float(np.max(np.abs(a - b))), states[0], s)))
                   for s in states]
    load_start = timing.load_average()
    timing.alternate(workloads, args.rounds)

    base = workloads[0].per_second()
    rows = []
    for workload, (_, count, options), difference in zip(workloads, variants, differences):
        rates = workload.per_second()
        rows.append({"name": workload.name, "cpu_devices": count, "compiler_options": options,
                     "img_per_sec": timing.median(rates),
                     "min": min(rates), "max": max(rates), "ratio_to_default": timing.paired_ratio(rates, base),
                     "max_param_difference_after_2_steps": difference,
                     "library_mentions_in_hlo": libraries[workload.name]})
        print(f"{workload.name:36s} {rows[-1]['img_per_sec']:8.1f} img/s ({min(rates):.1f}..{max(rates):.1f})"
              f"  x{rows[-1]['ratio_to_default']:.3f}  params differ by {difference:.1e} after 2 steps"
              f"  HLO mentions {libraries[workload.name]}")
    result = {"config": args.config, "overrides": args.set, "rounds": args.rounds, "jax": jax.__version__,
              "load_average": {"start": load_start, "end": timing.load_average()}, "rows": rows}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
