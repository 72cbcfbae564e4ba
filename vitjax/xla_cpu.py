"""The CPU-only runtime choices of `vitjax train` and `vitjax bench`, made in one place, by the CLI.

    vitjax train ...                       # on a CPU host prints e.g.
    CPU: tcmalloc, 4 XLA devices, XLA options {...}, model kernels (...) (off: VITJAX_TCMALLOC=0, ...)

Importing this module changes nothing. The CLI calls, in this order and only for those two commands:
  1. `reexec_under_tcmalloc()` first thing, when the backend will be the CPU (`backend_will_be_cpu`):
     the command re-executes itself once with LD_PRELOAD naming tcmalloc (beside the user's own
     preloads), then gives LD_PRELOAD back the user's value so that its own subprocesses start as the
     user started it;
  2. `choose(config)` before JAX's backends start: the XLA:CPU device count, and, once the backend is
     known to be the CPU, the per-compilation XLA options and the model's hand-written kernels for
     where the config does not set its own (`compiler_options`, `model.kernels`); it prints what it
     chose, once, and returns it as `Choices`. The config is left as the user wrote it: the trainer
     applies the choices (`Choices.model_args`, `Choices.options_for`) and records them in the run's
     results.json under `runtime`, never in config.json, so a run moved to another machine, a GPU or
     VITJAX_XLA_CPU_DEFAULTS=0 is the same config.
Accelerator hosts get none of it. Each choice has an environment variable that turns it off, and a
user's own setting of the same thing (an allocator in LD_PRELOAD, XLA_FLAGS' device count,
JAX_NUM_CPU_DEVICES, config values) always wins. The measurements behind each choice, on the
project's 2-core machines, are in experiments/results/bench/README.md:
  * tcmalloc keeps the freed buffers of each step for reuse where glibc's malloc unmaps and faults
    them in again (the default config's train step: 1.7x faster);
  * 4 XLA devices trained data-parallel overlap one quarter's small, memory-bound operations with
    another's work (the default config +16% across processes, 1.25x in one; less or nothing for bigger
    models); the count halves until it divides the (micro-)batch and the eval batch; a (micro-)batch
    that would leave a device fewer than MIN_DEVICE_BATCH examples keeps JAX's single device, which
    trained those faster;
  * YNNPACK for reductions only (jaxlib 0.10), so matmuls go to Eigen and elementwise chains to XLA's
    fusions (the default config's train step 1.10x faster);
  * the model kernels of vitjax/models/kernels.py (LayerNorm's closed-form backward pass 1.24x,
    heads-major attention 1.14x);
  * with several devices, XLA:CPU's in-process collectives wait COLLECTIVE_PATIENCE_S (after their
    20-second "may be stuck" warning) before aborting the process, instead of XLA's 40 s. On a shared,
    oversubscribed host one device's thread can be descheduled that long: three study runs died of
    SIGABRT that way on 2026-12-01 (load 7-10 on 2 cores), each losing up to 500 steps of training.
"""
import dataclasses
import glob
import importlib.metadata
import os
import sys

ENV_TCMALLOC = "VITJAX_TCMALLOC"          # 0: glibc's malloc
ENV_DEVICES = "VITJAX_CPU_DEVICES"        # N: that many devices; 1: JAX's single device
ENV_DEFAULTS = "VITJAX_XLA_CPU_DEFAULTS"  # 0: no XLA options, no model kernels

DEFAULT_DEVICES = 4
# The split pays only when each device gets enough of the (micro-)batch; below this many examples per
# device the default is JAX's single device (experiments/bench/device_split.py; bench README, "The device
# split: what decides it"). 1-device over 4-device speed: the default ViT at 2 / 4 / 8 / 32 examples a
# device 1.67 / 1.19 / 1.08 / 0.79, Swin-T at 2 / 8 1.18 / 0.91, ViT-Ti/16 at 4 0.96. The threshold moves
# with the model's work per example; 4, 8 and 16 each get ten of the twelve workloads right, and 8's two
# misses cost least (8% and 4%; 16's 10% and 4%, 4's 19% and 8%). One or four: two was not measured.
MIN_DEVICE_BATCH = 8
DEFAULT_MESH = {"data": -1, "fsdp": 1, "model": 1, "dcn_data": 1}
# Per-compilation options (jax.jit's compiler_options), for the jaxlib versions they were measured on:
# an option a jaxlib does not know fails the compilation.
COMPILER_OPTIONS = {"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_REDUCE"}
MEASURED_JAXLIB = ("0.10.",)
MODEL_KERNELS = ("layernorm_vjp", "heads_major")
COLLECTIVE_PATIENCE_S = 600
COLLECTIVE_TIMEOUT_FLAG = "--xla_cpu_collective_call_terminate_timeout_seconds"

_TCMALLOC_PATTERNS = ("/usr/lib/*-linux-gnu/libtcmalloc_minimal.so.4", "/usr/lib64/libtcmalloc_minimal.so.4",
                      "/usr/lib/libtcmalloc_minimal.so.4")
_MARK = "VITJAX_TCMALLOC_ACTIVE"  # set for the re-executed process, which then never re-executes
_USER_PRELOAD = "VITJAX_USER_LD_PRELOAD"  # what LD_PRELOAD was before, given back to the re-executed process
_ACCELERATOR_PLUGINS = ("jax-cuda12-plugin", "jax-cuda13-plugin", "jax-rocm60-plugin", "jax-rocm7-plugin",
                        "libtpu", "libtpu-nightly")


def backend_will_be_cpu(environ=None) -> bool:
    """Whether JAX will pick its CPU backend, judged without starting JAX: JAX_PLATFORMS when set,
    else whether an accelerator plugin (CUDA, ROCm, TPU) is installed."""
    environ = os.environ if environ is None else environ
    platforms = environ.get("JAX_PLATFORMS", "").strip()
    if platforms:
        return platforms.split(",")[0].strip() == "cpu"
    for name in _ACCELERATOR_PLUGINS:
        try:
            importlib.metadata.version(name)
            return False
        except importlib.metadata.PackageNotFoundError:
            pass
    return True


def find_tcmalloc() -> str | None:
    for pattern in _TCMALLOC_PATTERNS:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    return None


def _names_an_allocator(preload: str) -> bool:
    """Whether LD_PRELOAD (libraries split by spaces or colons) names a malloc: tcmalloc, jemalloc, mimalloc."""
    return any("malloc" in os.path.basename(entry) for entry in preload.replace(":", " ").split())


def preload_env(environ: dict, library: str | None) -> dict | None:
    """The environment to re-execute with, or None when the process should run as it is.

    A user's LD_PRELOAD that names an allocator wins; one that names other libraries (a profiler's
    shim, say) is kept, tcmalloc beside it: it would otherwise cost the step its allocator silently.
    """
    user_preload = environ.get("LD_PRELOAD", "")
    if (not sys.platform.startswith("linux") or library is None or environ.get(ENV_TCMALLOC, "1") == "0"
            or _names_an_allocator(user_preload) or environ.get(_MARK) or not backend_will_be_cpu(environ)):
        return None
    # tcmalloc reports every allocation above 1 GiB on stderr by default; large models make many.
    return {**environ, "LD_PRELOAD": f"{library} {user_preload}".strip(), _MARK: "1", _USER_PRELOAD: user_preload,
            "TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD": environ.get("TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD",
                                                                 str(1 << 40))}


def reexec_under_tcmalloc() -> None:
    """Replaces this process by the same command under tcmalloc when that applies; returns otherwise.

    In the re-executed process it only gives LD_PRELOAD back the user's value (or takes it out) and
    drops its mark: the library is loaded by then, and children (a sweep's runs, torch's compile
    workers) should start as the user started this command.
    """
    if os.environ.get(_MARK):
        os.environ.pop(_MARK)
        user_preload = os.environ.pop(_USER_PRELOAD, "")
        if user_preload:
            os.environ["LD_PRELOAD"] = user_preload
        else:
            os.environ.pop("LD_PRELOAD", None)
        return
    env = preload_env(dict(os.environ), find_tcmalloc())
    if env is None:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def tcmalloc_loaded() -> bool:
    try:
        with open("/proc/self/maps") as maps:
            return "libtcmalloc" in maps.read()
    except OSError:
        return False


def default_devices(config) -> int:
    """The device count `config` gets unless VITJAX_CPU_DEVICES names one: DEFAULT_DEVICES when each
    would get at least MIN_DEVICE_BATCH examples of a (micro-)batch, else 1."""
    micro_batch = config.batch_size // config.grad_accum_steps
    return DEFAULT_DEVICES if micro_batch >= MIN_DEVICE_BATCH * DEFAULT_DEVICES else 1


def requested_devices(environ=None, default: int = DEFAULT_DEVICES) -> int | None:
    """The device count asked for: VITJAX_CPU_DEVICES, else `default`; None when the user set one for JAX
    (XLA_FLAGS' --xla_force_host_platform_device_count or JAX_NUM_CPU_DEVICES)."""
    environ = os.environ if environ is None else environ
    if "--xla_force_host_platform_device_count" in environ.get("XLA_FLAGS", "") or environ.get("JAX_NUM_CPU_DEVICES"):
        return None
    raw = environ.get(ENV_DEVICES, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{ENV_DEVICES}={raw!r} must be a positive integer (1 keeps JAX's single CPU device)")
    return int(raw)


def device_count_for(config, wanted: int) -> int:
    """The largest count <= `wanted`, halving, whose devices split every batch of `config` evenly."""
    batches = [config.batch_size // config.grad_accum_steps, config.eval_batch_size]
    count = wanted
    while count > 1 and any(batch % count for batch in batches):
        count //= 2
    return count


@dataclasses.dataclass
class Choices:
    """What `choose` chose (None / empty: left alone); the runtime of a run, not part of its config."""
    tcmalloc: bool = False
    devices: int | None = None
    compiler_options: dict = dataclasses.field(default_factory=dict)
    kernels: tuple = ()

    def model_args(self, config) -> dict:
        """{'kernels': ...} for a model of `config` that takes kernels and whose config names none; else {}."""
        if not self.kernels or "kernels" in config.model or not _takes_kernels(config.model_name):
            return {}
        return {"kernels": tuple(self.kernels)}

    def options_for(self, config) -> dict:
        """The XLA options of each compilation: the config's own where it sets any, else these."""
        return dict(config.compiler_options) if config.compiler_options else dict(self.compiler_options)

    def record(self) -> dict:
        """As results.json's `runtime` records it."""
        return {"tcmalloc": self.tcmalloc, "devices": self.devices, "compiler_options": dict(self.compiler_options),
                "kernels": list(self.kernels)}

    def describe(self) -> str | None:
        devices = [f"{self.devices} XLA device{'s' if self.devices > 1 else ''}"] if self.devices else []
        parts = (["tcmalloc"] if self.tcmalloc else []) + devices
        parts += [f"XLA options {self.compiler_options}"] if self.compiler_options else []
        parts += [f"model kernels {self.kernels}"] if self.kernels else []
        if not parts:
            return None
        return (f"CPU: {', '.join(parts)} (off: {ENV_TCMALLOC}=0, {ENV_DEVICES}=1, {ENV_DEFAULTS}=0; "
                f"why: vitjax/xla_cpu.py)")


def choose(config, *, device_count: int | None = None) -> Choices:
    """Applies the CPU choices to JAX before its backends start; returns them for the trainer (`config`
    is only read).

    Call after jax.distributed is initialised (or not used) and before anything touches a device.
    `device_count`: a count the caller has set itself (None: VITJAX_CPU_DEVICES or DEFAULT_DEVICES,
    halved until it fits the batches).
    """
    import jax

    choices = Choices(tcmalloc=tcmalloc_loaded())
    if not backend_will_be_cpu():
        return choices
    choices.devices = device_count or _set_device_count(jax, config)
    if choices.devices and choices.devices > 1:
        os.environ["XLA_FLAGS"] = with_collective_patience(os.environ.get("XLA_FLAGS", ""))
    if jax.default_backend() != "cpu":  # starts the backends: the device count is fixed from here on
        return Choices()
    if os.environ.get(ENV_DEFAULTS, "1") != "0":
        choices.compiler_options = _compiler_options(config)
        choices.kernels = MODEL_KERNELS if _takes_kernels(config.model_name) and "kernels" not in config.model else ()
    message = choices.describe()
    if message and jax.process_index() == 0:
        print(message, flush=True)
    return choices


def with_collective_patience(xla_flags: str) -> str:
    """XLA_FLAGS with COLLECTIVE_TIMEOUT_FLAG set to COLLECTIVE_PATIENCE_S, unless the user set it.
    Read when the backend starts, so it must be in place before (as the device count)."""
    if COLLECTIVE_TIMEOUT_FLAG in xla_flags:
        return xla_flags
    return f"{xla_flags} {COLLECTIVE_TIMEOUT_FLAG}={COLLECTIVE_PATIENCE_S}".strip()


def _set_device_count(jax, config) -> int | None:
    wanted = requested_devices(default=default_devices(config))
    if wanted is None or {"dcn_data": 1, **config.mesh} != DEFAULT_MESH or jax.distributed.is_initialized():
        return None  # the user's count, an explicit mesh, or a multi-process run names its own devices
    count = device_count_for(config, wanted)
    try:
        jax.config.update("jax_num_cpu_devices", count)
    except RuntimeError:  # a caller in this process started JAX's backends first: their devices stay
        return None
    return count


def _compiler_options(config) -> dict:
    import jaxlib

    if config.compiler_options or not jaxlib.__version__.startswith(MEASURED_JAXLIB):
        return {}
    return dict(COMPILER_OPTIONS)


def _takes_kernels(model_name: str) -> bool:
    from vitjax import models

    return (model_name in models.FAMILIES
            and "kernels" in {f.name for f in dataclasses.fields(models.family(model_name))})


# What vitjax up to 2026-12-03 wrote into a CPU run's config.json (the choices were config then): a
# recorded value of these keys where the other config has none is no difference (config_compare.differing_keys).
LEGACY_CONFIG_FILLS = {"model.kernels": list(MODEL_KERNELS),
                       **{f"compiler_options.{key}": value for key, value in COMPILER_OPTIONS.items()}}
