"""`vitjax bench`: train-step, inference and input throughput of a config, beside timm and a matmul peak.

    vitjax bench --config configs/fashion_mnist/vit.py [--config.batch_size=256 ...] [--out bench.json]
    vitjax bench --config configs/bench/vit.py:variant=Ti/4,res=28,channels=1,batch=128
    vitjax bench --width 192 --depth 12 --heads 3 --patch 4 --batch 128      # flags for common overrides
    vitjax bench --config configs/bench/vit.py:variant=B/16,res=224,batch=8 --config.model.scan=True --compile_only
    vitjax bench --config configs/fashion_mnist/vit.py --profile runs/profile --no_timm   # + per-op table
    vitjax bench --no_timm --against 'model.kernels=()'   # the train step with one override, side by side
    vitjax bench --config configs/bench/mae.py --beside configs/bench/vit.py --no_timm   # MAE beside its ViT
    vitjax bench --config configs/bench/mae.py --no_infer   # MAE beside the official MAE's step in PyTorch
    vitjax bench --config configs/bench/sam.py     # SAM's image encoder and prompts beside segment-anything's

Prints a table and writes the same figures as JSON (--out). Heavy modules (jax, torch, the data
pipeline) are imported when the command runs, so adding its arguments to the CLI parser costs nothing.
"""
import dataclasses
import functools
import importlib
import os
import platform
import sys
import time
from typing import Any

from vitjax import host
from vitjax.config import OVERRIDE_HELP, apply_overrides, load_config, override_flags

DEFAULT_CONFIG = "configs/fashion_mnist/vit.py"

# Convenience flags and the config keys they set.
MODEL_FLAGS = {"width": "model.width", "depth": "model.depth", "heads": "model.num_heads",
               "mlp_dim": "model.mlp_dim", "patch": "model.patch_size", "batch": "batch_size", "dtype": "dtype"}


def main_args(parser) -> None:
    """Adds `vitjax bench`'s arguments to an argparse (sub)parser."""
    parser.epilog = OVERRIDE_HELP
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="config file, configs/<file>.py[:arg]")
    for flag, key in MODEL_FLAGS.items():
        parser.add_argument(f"--{flag}", default=None, type=str if flag == "dtype" else int,
                            help=f"sets {key}")
    parser.add_argument("--image", type=int, default=None,
                        help="square image size: switches the data to synthetic images of this size")
    parser.add_argument("--channels", type=int, default=None, help="channels of the synthetic images")
    parser.add_argument("--rounds", type=int, default=7, help="alternating measurement rounds")
    parser.add_argument("--seconds", type=float, default=2.0,
                        help="target duration of each workload within a round")
    parser.add_argument("--no_timm", action="store_true",
                        help="skip the PyTorch comparison (timm's; segment-anything's for a SAM config)")
    parser.add_argument("--timm_compile", choices=["auto", "on", "off"], default="auto",
                        help="also time timm under torch.compile ('auto': on GPUs only)")
    parser.add_argument("--torch_threads", type=int, default=2, help="torch.set_num_threads on CPU")
    parser.add_argument("--omp_wait_policy", choices=["passive", "active", "default"], default="passive",
                        help="OMP_WAIT_POLICY for torch's OpenMP threads unless already set ('passive': idle "
                             "threads sleep, which loaded machines need; 'default': leave it to libgomp)")
    parser.add_argument("--no_infer", action="store_true", help="skip inference")
    parser.add_argument("--no_pipeline", action="store_true", help="skip the input-pipeline measurement")
    parser.add_argument("--peak_size", type=int, default=None,
                        help="matmul size for the peak (default 2048 fp32 on CPU, 8192 bf16 elsewhere)")
    parser.add_argument("--compile_only", action="store_true",
                        help="compile the train step and report compile time and memory; run nothing")
    parser.add_argument("--profile", default=None, metavar="DIR",
                        help="first trace the vitjax train step (or --profile_workload's) with jax.profiler into "
                             "DIR (TensorBoard/XProf) and print its per-op time table")
    parser.add_argument("--profile_calls", type=int, default=5, help="calls traced with --profile")
    parser.add_argument("--profile_workload", choices=("train", "infer"), default="train",
                        help="what --profile traces: the train step or the inference forward pass")
    parser.add_argument("--against", action="append", default=[], metavar="KEY=VALUE",
                        help="also time the vitjax train step with this one config override (as for --config.KEY), "
                             "in the same rounds, and report the config's step over it; repeatable, one variant "
                             "each, e.g. --against 'model.kernels=()'")
    parser.add_argument("--beside", action="append", default=[], metavar="CONFIG",
                        help="also time the vitjax train step of another config file (configs/<file>.py[:arg], as "
                             "written: the --config.KEY overrides are not applied to it) in the same rounds, and "
                             "report the config's step over it; repeatable, e.g. an MAE beside the same ViT's "
                             "supervised step: --config configs/bench/mae.py --beside configs/bench/vit.py")
    parser.add_argument("--out", default="bench.json", help="where the JSON summary goes")


def build_config(args):
    """The config file, then --image/--channels, the model flags and the --config.KEY=VALUE overrides
    (args.overrides), in that order; returns the config and the values set, by key."""
    config = load_config(args.config)
    overrides = {}
    if args.image is not None or args.channels is not None:
        shape = config.data.synthetic.image_shape
        size = args.image or shape[0]
        overrides.update({"data.name": "synthetic",
                          "data.synthetic.image_shape": (size, size, args.channels or shape[2]),
                          "data.pp_train": "value_range(-1, 1)", "data.pp_eval": "value_range(-1, 1)"})
    overrides.update({key: getattr(args, flag) for flag, key in MODEL_FLAGS.items()
                      if getattr(args, flag) is not None})
    overrides.update(args.overrides)
    return config, apply_overrides(config, overrides)


def _describe(model, image_shape, dtype, crops=None) -> str:
    """One line naming what was timed; `crops` (a DINO run's multicrop.Crops) say how many views a step sees."""
    from vitjax import models

    if isinstance(model, models.DINO):
        size, patch = model.dims()
        views = (f", 2 global crops of {crops.global_size} px and {crops.local_crops} local of {crops.local_size} px"
                 if crops is not None else "")
        return (f"DINO backbone width {size.width} depth {size.depth} heads {size.num_heads} patch {patch}, head "
                f"{model.head_hidden_dim}-{model.head_bottleneck_dim}-{model.head_out_dim}{views}, "
                f"{'x'.join(map(str, image_shape))}, {dtype}")
    if isinstance(model, models.Swin):
        size = model.dims()
        return (f"Swin embed {size.embed_dim} depths {size.depths} heads {size.num_heads} patch {model.patch_size} "
                f"window {model.window_size}, {'x'.join(map(str, image_shape))}, {dtype}")
    if isinstance(model, models.MAE):
        size, patch = model.dims()
        return (f"MAE encoder width {size.width} depth {size.depth} heads {size.num_heads} patch {patch}, decoder "
                f"width {model.decoder_width} depth {model.decoder_depth}, mask ratio {model.mask_ratio}, "
                f"{'x'.join(map(str, image_shape))}, {dtype}")
    if not isinstance(model, models.ViT):
        return f"{type(model).__name__}, {'x'.join(map(str, image_shape))}, {dtype}"
    size, patch = model.dims()
    return (f"ViT width {size.width} depth {size.depth} heads {size.num_heads} mlp {size.mlp_dim} patch {patch}, "
            f"{'x'.join(map(str, image_shape))}, {dtype}, scan={model.scan}, remat={model.remat_policy}")


def _machine(jax) -> dict:
    device = jax.devices()[0]
    return {"backend": jax.default_backend(), "device_kind": device.device_kind, "devices": jax.device_count(),
            "cpu_count": os.cpu_count(), "cpu": host.cpu(), "platform": platform.platform(),
            "python": platform.python_version(), "jax": jax.__version__, "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
            "ld_preload": os.environ.get("LD_PRELOAD", "")}


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _profile(jm, logdir: str, calls: int, workload: str = "train") -> dict:
    from vitjax.bench import profile

    traced, hlo = (jm.train, jm.train_hlo) if workload == "train" else (jm.infer, jm.infer_hlo)
    _log(f"tracing {calls} calls of {traced.name} into {logdir} ...")
    xplane, seconds_per_call = profile.trace(traced.call, calls, logdir)
    scopes = profile.instruction_scopes(hlo())
    if workload == "infer":  # no jvp in its names, yet all of it is the forward pass
        scopes = {name: where.replace("step: ", "forward: ", 1) for name, where in scopes.items()}
    tables = {"ops": profile.op_table(xplane, calls), "scopes": profile.scope_table(xplane, calls, scopes),
              "parts": profile.scope_table(xplane, calls, scopes, depth=2)}
    print(f"{traced.name}, time per op over {calls} traced calls (on CPU, Eigen matmuls run "
          f"asynchronously and show only their launch; see vitjax/bench/profile.py):")
    print(profile.format_table(tables["ops"], seconds_per_call))
    print("the same time by where each op came from (the model's name stack; layer indices dropped):")
    print(profile.format_table(tables["scopes"], seconds_per_call, top=30, width=72))
    print(profile.format_table(tables["parts"], seconds_per_call, width=72))
    return {"dir": logdir, "xplane": xplane, "workload": workload, "calls": calls,
            "seconds_per_call_traced": seconds_per_call,
            **{name: [dataclasses.asdict(r) for r in rows] for name, rows in tables.items()}}


def bench(args) -> dict:
    """Runs the benchmark described by parsed `args`; returns the summary (also written to args.out)."""
    _check_args(args)
    config, overrides = build_config(args)  # a typo fails here, before torch or a compiler starts
    if config.model_name == "sam":
        return _bench_sam(args, config, overrides)
    beside_configs = {path: load_config(path) for path in args.beside}  # and in a --beside config
    against_configs = _against_configs(config, args.against)  # and in an --against value
    if not args.no_timm:
        _load_torch_first(args.omp_wait_policy, "timm")
    import jax

    from vitjax import xla_cpu
    from vitjax.bench import jax_model, peak, pipeline, timing

    runtime = xla_cpu.choose(config)  # as for `vitjax train`, before _machine() starts the backends
    summary = _header(args, overrides, runtime)
    started = time.time()

    jm = jax_model.build(config, inference=not args.no_infer and not args.compile_only, runtime=runtime,
                         on_compile=functools.partial(_log, "compiling the vitjax train step ..."))
    summary["model"] = {"description": _describe(jm.plan.model, jm.info["image_shape"], config.dtype,
                                                 getattr(jm.plan.objective, "crops", None)),
                        "params": jm.info["params"], "batch_size": config.batch_size}
    summary["jax"] = jm.info
    _log(f"compiled in {jm.info['compile_seconds']['train']:.1f}s")
    if args.compile_only:
        summary["process_memory"] = timing.memory_of_process()
        return _finish(summary, args.out, started)
    summary["process_memory_after_jax_setup"] = timing.memory_of_process()
    if args.profile:
        summary["profile"] = _profile(jm, args.profile, args.profile_calls, args.profile_workload)

    backend = jax.default_backend()
    size, dtype = peak.default_size_and_dtype(backend)
    size = args.peak_size or size
    matmul = peak.matmul_workload(size, dtype)
    workloads = [matmul, jm.train] + ([jm.infer] if jm.infer else [])
    variants = _variant_workloads(against_configs, runtime)
    beside = _beside_models(beside_configs, runtime)
    workloads += list(variants.values()) + [b.train for b in beside.values()]
    timm = _Timm()
    if not args.no_timm:
        timm = _timm_workloads(args, config, jm, backend, size, dtype, summary)
        workloads += timm.workloads
    pipe = None
    if not args.no_pipeline:
        _log("starting the input pipeline ...")
        pipe = pipeline.build(config, jm.plan.mesh)
        workloads.append(pipe)

    _measure(workloads, args.rounds, args.seconds)
    datasheet = peak.datasheet_peak(summary["machine"]["device_kind"])
    summary["peak"] = {
        "matmul": f"{size}x{size} {dtype}",
        "jax_matmul_flops_per_second": timing.median(matmul.per_second("flops")),
        "torch_matmul_flops_per_second": timing.median(timm.matmul.per_second("flops")) if timm.matmul else None,
        "datasheet_bf16_flops_per_second": datasheet,
    }
    summary["workloads"] = _workload_summaries(workloads, jm, matmul, datasheet)
    summary["ratios"] = _ratios(jm, timm, pipe, matmul, variants)
    _add_beside(summary, jm, beside, matmul, datasheet)
    summary["process_memory"] = timing.memory_of_process()
    if backend == "gpu":
        summary["device_memory"] = _device_memory(jax, torch_used=timm.train is not None)
    _finish(summary, args.out, started)
    print(f"wrote {args.out}")
    return summary


def _header(args, overrides: dict, runtime) -> dict:
    """The summary's first keys: what was asked for, the machine (its backends start here) and the runtime."""
    import jax

    from vitjax.bench import timing

    return {"config": args.config, "overrides": {k: list(v) if isinstance(v, tuple) else v
                                                  for k, v in overrides.items()},
            "overrides_argv": override_flags(overrides),
            "settings": {"rounds": args.rounds, "seconds": args.seconds},
            "machine": {**_machine(jax), "load_average_start": timing.load_average()},
            "runtime": runtime.record()}


def _bench_sam(args, config, overrides) -> dict:
    """A SAM config: its image encoder's inference and its prompt answers on a cached embedding, beside
    segment-anything's on the same weights (vitjax/bench/sam_model.py), and the matmul peaks."""
    _check_sam_args(args, config)
    if not args.no_timm:
        _load_torch_first(args.omp_wait_policy, "segment_anything")
    import jax

    from vitjax import models, xla_cpu
    from vitjax.bench import peak, report, sam_model, timing

    runtime = xla_cpu.choose(config)
    summary = _header(args, overrides, runtime)
    if not args.no_timm and jax.default_backend() != "cpu":
        raise ValueError(f"segment-anything's side runs on the CPU here, vitjax's on the {jax.default_backend()}: "
                         f"not like for like; pass --no_timm")
    started = time.time()
    model = models.build("sam", 0, dtype=config.dtype, **config.model.to_dict())
    sam = sam_model.build(model, config.batch_size, compiler_options=runtime.options_for(config),
                          official=not args.no_timm, threads=args.torch_threads, log=_log)
    summary["model"] = {"description": _describe_sam(model, config.dtype), "params": sam.info["params"]["all"],
                        "batch_size": config.batch_size}
    summary["jax"] = {"compile_seconds": sam.info["compile_seconds"]}
    summary["sam"] = sam.info
    size, dtype = peak.default_size_and_dtype(jax.default_backend())
    size = args.peak_size or size
    matmul = peak.matmul_workload(size, dtype)
    torch_matmul = None if args.no_timm else peak.torch_matmul_workload(size, dtype, "cpu")
    workloads = [matmul, *([torch_matmul] if torch_matmul else []), *sam.workloads]
    _measure(workloads, args.rounds, args.seconds)
    summary["peak"] = {"matmul": f"{size}x{size} {dtype}",
                       "jax_matmul_flops_per_second": timing.median(matmul.per_second("flops")),
                       "torch_matmul_flops_per_second": timing.median(torch_matmul.per_second("flops"))
                       if torch_matmul else None}
    summary["workloads"] = {w.name: report.workload_summary(w, matmul if w.images else None, None, None)
                            for w in workloads}
    summary["ratios"] = sam.ratios()
    if torch_matmul:
        summary["ratios"]["matmul jax/torch"] = timing.paired_ratio(matmul.per_second("flops"),
                                                                    torch_matmul.per_second("flops"))
    summary["latency_ms_per_prompt"] = sam.latencies_ms()
    summary["process_memory"] = timing.memory_of_process()
    _finish(summary, args.out, started)
    print(f"wrote {args.out}")
    return summary


def _check_sam_args(args, config) -> None:
    """ValueError for the options a SAM benchmark (encoder inference, prompt answers) has no use for."""
    given = {"--image/--channels": args.image is not None or args.channels is not None, "--against": args.against,
             "--beside": args.beside, "--profile": args.profile, "--compile_only": args.compile_only,
             "--no_infer": args.no_infer, "--timm_compile on": args.timm_compile == "on"}
    given = [flag for flag, value in given.items() if value]
    if given:
        raise ValueError(f"{', '.join(given)}: not for a SAM config, whose benchmark times the image encoder's "
                         f"inference and the prompt answers (vitjax/bench/sam_model.py); drop them (the image "
                         f"size is the config's: configs/bench/sam.py:res=N)")
    if config.dtype != "float32" and not args.no_timm:
        raise ValueError(f"dtype {config.dtype}: segment-anything's side is float32, so the comparison is too; "
                         f"pass --dtype float32, or --no_timm to time vitjax alone")


def _describe_sam(model, dtype) -> str:
    size = model.dims()
    return (f"SAM image encoder width {size.width} depth {size.depth} heads {size.num_heads} global blocks "
            f"{tuple(size.global_attn_indexes)} window {model.window_size} patch {model.patch_size}, "
            f"{model.image_size}x{model.image_size}x3, {dtype}; prompt width {model.prompt_width}, decoder depth "
            f"{model.decoder_depth}")


def _against_configs(config, against: list[str]) -> dict:
    """{'KEY=VALUE': `config` with that override}, each checked as the trainer checks a config, so that a
    bad value fails before anything compiles."""
    from vitjax.train import checks

    variants = {}
    for item in against:
        key, _, value = item.partition("=")  # checked by _check_args
        variants[item] = config.copy_and_resolve_references()
        apply_overrides(variants[item], {key.strip(): value})
        checks.config(variants[item])
    return variants


def _variant_workloads(variants: dict, runtime) -> dict:
    """{'KEY=VALUE': the train-step workload of its config (_against_configs)}, compiled as the trainer does."""
    from vitjax.bench import jax_model

    workloads = {}
    for item, variant in variants.items():
        announce = functools.partial(_log, f"compiling the vitjax train step with {item} ...")
        workload = jax_model.build(variant, inference=False, runtime=runtime, on_compile=announce).train
        workload.name = f"vitjax train [{item}]"
        workloads[item] = workload
    return workloads


def _beside_models(configs: dict, runtime) -> dict:
    """{config path: its JaxModel (train step only)}, each compiled as the trainer compiles it."""
    from vitjax.bench import jax_model

    models = {}
    for path, config in configs.items():
        announce = functools.partial(_log, f"compiling the vitjax train step of {path} ...")
        models[path] = jax_model.build(config, inference=False, runtime=runtime, on_compile=announce)
        models[path].train.name = f"vitjax train [{path}]"
    return models


def _add_beside(summary: dict, jm, beside: dict, matmul, datasheet) -> None:
    """Each --beside config's model, its workload's summary with its own model FLOPs, and the ratio
    'train vitjax/vitjax[CONFIG]' of the config's step rate over it."""
    from vitjax.bench import report

    for path, other in beside.items():
        summary.setdefault("beside", {})[path] = {
            "description": _describe(other.plan.model, other.info["image_shape"], other.plan.model.dtype),
            "params": other.info["params"], "batch_size": other.info["batch_size"], "jax": other.info}
        summary["workloads"][other.train.name] = report.workload_summary(
            other.train, matmul, other.info["model_flops_per_image"]["train"], datasheet)
        summary["ratios"][f"train vitjax/vitjax[{path}]"] = report.ratio(jm.train, other.train)


def _check_args(args) -> None:
    from vitjax import data

    if args.profile and args.compile_only:
        raise ValueError("--profile traces train steps, which --compile_only does not run; drop one of them")
    if args.profile and args.profile_workload == "infer" and args.no_infer:
        raise ValueError("--profile_workload infer traces inference, which --no_infer skips; drop one of them")
    if args.profile_calls < 1:
        raise ValueError(f"--profile_calls {args.profile_calls}: trace at least 1 call")
    if args.rounds < 1 or not args.seconds > 0:  # nothing would be measured, yet a JSON of figures written
        raise ValueError(f"--rounds {args.rounds} --seconds {args.seconds}: measure at least 1 round of more than "
                         f"0 seconds (the defaults: --rounds 7 --seconds 2)")
    if not data.tensorflow_installed():  # e.g. a GPU image without it; vitjax's own step needs none
        needs = [flag for flag, given in (("the input pipeline", not args.no_pipeline),
                                          ("--profile", args.profile)) if given]
        if needs:
            verb = "needs" if len(needs) == 1 else "need"
            raise ValueError(f"{' and '.join(needs)} {verb} TensorFlow, which is not installed: pip install "
                             f"tensorflow-cpu, or pass --no_pipeline and no --profile")
    for item in args.against:  # before anything is compiled
        key, separator, _ = item.partition("=")
        if not separator or not key.strip():
            raise ValueError(f"--against {item!r}: write KEY=VALUE, e.g. --against 'model.kernels=()'")


def _load_torch_first(omp_wait_policy: str, package: str) -> None:
    """Imports `package` (timm or segment_anything, and so torch) before anything else loads, under the
    chosen OpenMP wait policy."""
    if omp_wait_policy != "default" and "torch" not in sys.modules:
        # GNU OpenMP threads spin while they wait for each other. When other processes hold the cores,
        # every parallel region then waits for a descheduled thread: on a loaded 2-core machine a
        # 2-thread timm step ran 3x (tiny models 80x) slower than with passive waiting. Must be set
        # before torch loads libgomp.
        os.environ.setdefault("OMP_WAIT_POLICY", omp_wait_policy.upper())
    # torch's triton (loaded by timm) segfaults when its LLVM loads after TensorFlow's, which the data
    # pipeline imports; loaded first, both work (as in the tests' conftest.py).
    try:
        importlib.import_module(package)
    except ImportError as error:
        raise ValueError(f"the PyTorch comparison needs torch and {package} ({error}); install them (the test extra: "
                         f"pip install -e '.[test]') or pass --no_timm")


@dataclasses.dataclass
class _Timm:
    """The PyTorch side's workloads, each None where it is not measured."""
    train: Any = None
    infer: Any = None
    compiled: Any = None
    compiled_infer: Any = None
    matmul: Any = None

    @property
    def workloads(self) -> list:
        return [w for w in (self.train, self.infer, self.compiled, self.compiled_infer, self.matmul) if w]


def _timm_workloads(args, config, jm, backend: str, size: int, dtype: str, summary: dict) -> _Timm:
    """timm's train step and inference on the same batch (also under torch.compile, where asked), and
    torch's matmul peak; records their setup in `summary`."""
    import jax

    from vitjax.bench import peak, timing, timm_model

    device = "cuda" if backend == "gpu" else "cpu"
    shape, classes = jm.info["image_shape"], jm.info["num_classes"]
    timm = _Timm()
    _log("building the timm model ...")
    params = jax.device_get(jm.params())  # copied into timm's network where its family takes vitjax's weights
    timm.train, timm.infer, summary["timm"] = timm_model.build(
        config, jm.plan.model, shape, classes, jm.host_batch, device=device, threads=args.torch_threads,
        inference=jm.infer is not None, params=params)
    if args.timm_compile == "on" or (args.timm_compile == "auto" and backend == "gpu"):
        _log("torch.compile of the timm model ...")
        timm.compiled, timm.compiled_infer, summary["timm_compiled"] = timm_model.build(
            config, jm.plan.model, shape, classes, jm.host_batch, device=device, threads=args.torch_threads,
            compile=True, inference=jm.infer is not None, params=params)
    if backend in ("cpu", "gpu"):
        timm.matmul = peak.torch_matmul_workload(size, dtype, device)
    summary["process_memory_after_timm_setup"] = timing.memory_of_process()
    return timm


def _measure(workloads: list, rounds: int, seconds: float) -> None:
    """Sizes each workload's calls to `seconds`, then runs all of them in alternating rounds."""
    from vitjax.bench import timing

    for w in workloads:
        per_call = timing.calibrate(w, seconds)
        _log(f"{w.name}: {per_call * 1e3:.1f} ms per call, {w.calls_per_round} per round")
    timing.alternate(workloads, rounds,
                     on_round=lambda i: _log(f"round {i + 1}/{rounds} done; load {timing.load_average()}"))


def _workload_summaries(workloads: list, jm, matmul, datasheet: float | None) -> dict:
    """{workload name: its rates, FLOP/s and MFU}; timm's FLOPs are vitjax's, scaled to the rows it
    computes."""
    from vitjax.bench import report

    per_image = jm.info["model_flops_per_image"]
    timm_extra = _timm_over_vitjax_flops(jm.plan.model, per_image)
    summaries = {}
    for w in workloads:
        flops_per_image = per_image["train"] if "train" in w.name else per_image["forward"]
        if w.name.startswith("timm") and flops_per_image:
            flops_per_image *= timm_extra
        if w.name.startswith(("timm", "vitjax")):
            # timm runs the same architecture: XLA's count of the vitjax program is its FLOP count too.
            if w.name.startswith("timm") and w.flops is None:
                counted = jm.train if "train" in w.name else jm.infer
                w.flops = (counted.flops * w.images / counted.images * timm_extra
                           if counted and counted.flops else None)
            summaries[w.name] = report.workload_summary(w, matmul, flops_per_image, datasheet)
        else:
            summaries[w.name] = report.workload_summary(w, None, None, None)
    return summaries


def _timm_over_vitjax_flops(model, per_image: dict) -> float:
    """timm's FLOPs over vitjax's for the same model: timm computes every row of the last block,
    vitjax maybe only the CLS row (`ViT.last_block_rows`); 1.0 where the matmul count is unknown."""
    from vitjax import models

    if not isinstance(model, models.ViT) or model.last_block_rows() is None or not per_image["forward"]:
        return 1.0
    return per_image["forward_every_row"] / per_image["forward"]


def _ratios(jm, timm: _Timm, pipe, matmul, variants: dict) -> dict:
    """vitjax over timm and over each --against variant, the input pipeline over the train step, and
    JAX's matmul over torch's."""
    from vitjax.bench import report, timing

    ratios = {
        "train vitjax/timm": report.ratio(jm.train, timm.train),
        "infer vitjax/timm": report.ratio(jm.infer, timm.infer),
        "train vitjax/timm compiled": report.ratio(jm.train, timm.compiled),
        "pipeline/train (input images per second over those the step consumes)": report.ratio(pipe, jm.train),
    }
    ratios.update({f"train vitjax/vitjax[{item}]": report.ratio(jm.train, w) for item, w in variants.items()})
    if timm.matmul is not None:
        ratios["matmul jax/torch"] = timing.paired_ratio(matmul.per_second("flops"), timm.matmul.per_second("flops"))
    return ratios


def _device_memory(jax, *, torch_used: bool) -> dict:
    """Peak GPU memory of JAX, and of torch when it ran."""
    stats = jax.devices()[0].memory_stats() or {}
    memory = {"jax_peak_bytes_in_use": stats.get("peak_bytes_in_use")}
    if torch_used:
        import torch

        memory["torch_max_memory_allocated"] = torch.cuda.max_memory_allocated()
    return memory


def _finish(summary: dict, out: str, started: float) -> dict:
    """Adds the end load and the wall time, writes the summary as JSON and prints its table."""
    from vitjax.bench import report, timing

    summary["machine"]["load_average_end"] = timing.load_average()
    summary["wall_seconds"] = time.time() - started
    report.write_json(summary, out)
    print(report.table({"workloads": {}, **summary}))
    return summary


def run(args) -> None:
    try:
        bench(args)
    except (ValueError, FileNotFoundError, KeyError) as error:
        sys.exit(f"vitjax bench: error: {error}")
