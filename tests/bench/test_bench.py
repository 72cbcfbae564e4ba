"""`vitjax bench`: its figures against their definitions, and its argument handling.

One short bench of the tiny config (3 rounds; the vitjax step, inference, timm, a 64x64 matmul peak,
the input pipeline and one --against variant) runs once for the module. Its FLOP counts are checked
against the compiled programs, and every rate, MFU and ratio is recomputed from the per-round seconds
it recorded: a figure that does not follow from the measurements fails, however plausible it looks.
"""
import json
import statistics

import jax
import pytest

from vitjax import cli, host
from vitjax.bench import jax_model, run
from vitjax.config import load_config
from vitjax.train import trainer

from tests.bench.command_line import bench_args
from tests.paths import TINY
BATCH = 8
MATMUL = "matmul 64x64 float32 (jax)"
TORCH_MATMUL = "matmul 64x64 float32 (torch)"
VARIANT = "model.depth=2"


def test_config_overrides_and_convenience_flags():
    args = bench_args(["--config", TINY, "--config.model.width=48", "--config.model.scan", "True", "--depth", "2",
                  "--image", "24", "--channels", "1", "--batch", "8", "--config.batch_size=16"])
    config, overrides = run.build_config(args)
    assert (config.model.width, config.model.scan, config.model.depth) == (48, True, 2)
    assert config.data.name == "synthetic" and tuple(config.data.synthetic.image_shape) == (24, 24, 1)
    assert config.batch_size == 16  # --config.KEY=VALUE comes last, after the convenience flags
    assert overrides["model.width"] == 48 and overrides["model.scan"] is True


def test_a_misspelt_override_fails_with_its_name():
    with pytest.raises(KeyError, match="batchsize"):
        run.build_config(bench_args(["--config", TINY, "--config.batchsize=8"]))


def test_model_fields_the_config_does_not_list_can_be_set_but_typos_fail():
    config, _ = run.build_config(bench_args(["--config", TINY, "--config.model.remat_policy=dots_saveable"]))
    assert config.model.remat_policy == "dots_saveable"
    with pytest.raises(KeyError, match="scann"):
        run.build_config(bench_args(["--config", TINY, "--config.model.scann=True"]))


def test_against_needs_key_equals_value_and_says_so_before_compiling(monkeypatch):
    def no_compiling(*args, **kwargs):
        raise AssertionError("compiled before checking --against")
    monkeypatch.setattr(jax_model, "build", no_compiling)
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        cli.main(["bench", "--config", TINY, "--no_timm", "--against", "model.kernels"])
    with pytest.raises(SystemExit, match="expected an int"):
        cli.main(["bench", "--config", TINY, "--no_timm", "--against", "model.depth=x"])
    with pytest.raises(SystemExit, match="batch_size=0"):
        cli.main(["bench", "--config", TINY, "--no_timm", "--against", "batch_size=0"])



@pytest.mark.parametrize("flags", [["--rounds", "0"], ["--seconds", "0"], ["--profile_calls", "0", "--profile", "d"]])
def test_a_measurement_of_nothing_is_refused_before_compiling(monkeypatch, flags):
    def no_compiling(*args, **kwargs):
        raise AssertionError("compiled before checking the measurement's arguments")
    monkeypatch.setattr(jax_model, "build", no_compiling)
    with pytest.raises(SystemExit, match="at least 1"):
        cli.main(["bench", "--config", TINY, "--no_timm", *flags])

def test_a_bad_model_setting_fails_before_any_compiling_line(capsys):
    """The model is built and initialised before XLA compiles: its error is the only thing said."""
    with pytest.raises(SystemExit, match="unknown Swin variant 'Q'"):
        cli.main(["bench", "--config", "configs/bench/swin.py:variant=Q,res=56,batch=2", "--no_timm"])
    assert "compiling" not in capsys.readouterr().err

# --- One bench run, and what its figures must equal ----------------------------------------------

@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    with pytest.MonkeyPatch.context() as env:
        # No CPU runtime choices: the config stays as written, so the test can compile the same step.
        env.setenv("VITJAX_XLA_CPU_DEFAULTS", "0")
        cli.main(["bench", "--config", TINY, f"--config.batch_size={BATCH}", "--rounds", "3", "--seconds", "0.05",
                  "--peak_size", "64", "--against", VARIANT, "--out", str(out)])
    return json.loads(out.read_text())


def _tiny_config(**overrides):
    config = load_config(TINY)
    with config.unlocked():
        config.update_from_flattened_dict({"batch_size": BATCH, **overrides})
    return config


def _compiled_train_step_flops(config):
    p = trainer.plan(config)
    compiled, _ = trainer.compile_train_step(config, p, trainer.state_spec(config, p), jax.random.key(0))
    cost = compiled.cost_analysis()
    return float((cost[0] if isinstance(cost, (list, tuple)) else cost)["flops"]), p


def _rates(workload, amount):
    """Per-round rates from what the JSON recorded (calls per round x amount per call / round seconds),
    as (low, high) bounds: the seconds are rounded to 0.1 ms, and a fast workload's rounds are short."""
    calls, seconds = workload["calls_per_round"], workload["rounds_seconds"]
    return ([calls * amount / (s + 5e-5) for s in seconds],
            [calls * amount / max(s - 5e-5, 1e-9) for s in seconds])


def _median(bounds):
    low, high = bounds
    return statistics.median(low), statistics.median(high)


def _paired(numerator, denominator):
    """Bounds of the median of same-round ratios: it grows with each numerator, falls with each denominator."""
    ratio = lambda a, b: statistics.median(x / y for x, y in zip(a, b))  # noqa: E731
    return ratio(numerator[0], denominator[1]), ratio(numerator[1], denominator[0])


def _within(value, bounds, what):
    low, high = bounds
    assert low * (1 - 1e-12) <= value <= high * (1 + 1e-12), f"{what}: {value} outside [{low}, {high}]"


def test_the_workloads_measured_and_the_settings_recorded(summary):
    assert set(summary["workloads"]) == {MATMUL, TORCH_MATMUL, "vitjax train", "vitjax infer", "timm train",
                                         "timm infer", "input pipeline", f"vitjax train [{VARIANT}]"}
    assert summary["overrides"] == {"batch_size": BATCH}
    assert all(len(w["rounds_seconds"]) == 3 for w in summary["workloads"].values())
    assert summary["machine"]["cpu"] == host.cpu()  # its figures compare only with runs on the same cpu


def test_flop_counts_are_those_of_the_compiled_programs(summary):
    flops, p = _compiled_train_step_flops(_tiny_config())
    workloads = summary["workloads"]
    assert summary["jax"]["xla_flops_per_step"]["train"] == flops
    assert workloads["vitjax train"]["xla_flops_per_call"] == flops
    assert workloads[MATMUL]["xla_flops_per_call"] == 2 * 64 ** 3
    # The analytic matmul count of one image's forward pass, and training as 3 forward passes: XLA's
    # count of the step adds norms, softmax, the loss and the optimiser, a few percent at this size.
    per_image = jax_model.model_flops_per_image(p.model, p.info.image_shape, p.info.num_classes)
    assert summary["jax"]["model_flops_per_image"] == {
        "forward": per_image, "train": 3 * per_image,
        "forward_every_row": jax_model.model_flops_per_image(p.model, p.info.image_shape, p.info.num_classes,
                                                             every_row=True)}
    assert 1.0 < flops / (BATCH * 3 * per_image) < 1.3
    # timm computes every row of the last block, which vitjax's CLS-only last block skips.
    every_row = summary["jax"]["model_flops_per_image"]["forward_every_row"]
    assert every_row > per_image
    assert workloads["timm train"]["xla_flops_per_call"] == pytest.approx(flops * every_row / per_image, rel=1e-12)
    # The --against variant is its own program: one more block, whose training costs 3 forward passes
    # of a block by the analytic count (plus its norms and softmax).
    deeper = jax_model.model_flops_per_image(p.model.clone(depth=2), p.info.image_shape, p.info.num_classes)
    extra = workloads[f"vitjax train [{VARIANT}]"]["xla_flops_per_call"] - flops
    assert 1.0 < extra / (BATCH * 3 * (deeper - per_image)) < 1.3


def test_rates_follow_the_recorded_seconds(summary):
    for name, w in summary["workloads"].items():
        if "images_per_second" in w:  # 3 rounds: the median rate is the rate of the median time exactly
            assert w["images_per_second"] == pytest.approx(BATCH / w["seconds_per_call"], rel=1e-9), name
            low, high = _rates(w, BATCH)
            _within(w["images_per_second"], _median((low, high)), name)
            _within(w["images_per_second_min_max"][0], (min(low), min(high)), f"{name} min")
            _within(w["images_per_second_min_max"][1], (max(low), max(high)), f"{name} max")
        if "flops_per_second" in w:
            assert w["flops_per_second"] == pytest.approx(w["xla_flops_per_call"] / w["seconds_per_call"],
                                                          rel=1e-9), name


def test_mfu_and_ratios_are_medians_of_same_round_ratios(summary):
    workloads = summary["workloads"]
    peak = _rates(workloads[MATMUL], 2 * 64 ** 3)
    _within(summary["peak"]["jax_matmul_flops_per_second"], _median(peak), "peak")
    per_image = summary["jax"]["model_flops_per_image"]
    # The model's matmul FLOPs per image: timm's count covers every row of the last block.
    for name, share in (("vitjax train", 1.0), ("timm train", per_image["forward_every_row"] / per_image["forward"])):
        w = workloads[name]
        _within(w["mfu"], _paired(_rates(w, w["xla_flops_per_call"]), peak), f"{name} mfu")
        _within(w["model_mfu"], _paired(_rates(w, BATCH * per_image["train"] * share), peak), f"{name} model_mfu")
    images = {name: _rates(w, BATCH) for name, w in workloads.items() if "images_per_second" in w}
    ratios = summary["ratios"]
    _within(ratios["train vitjax/timm"], _paired(images["vitjax train"], images["timm train"]), "train")
    _within(ratios["infer vitjax/timm"], _paired(images["vitjax infer"], images["timm infer"]), "infer")
    assert ratios["train vitjax/timm compiled"] is None  # torch.compile runs on GPUs only by default
    _within(ratios[f"train vitjax/vitjax[{VARIANT}]"],
            _paired(images["vitjax train"], images[f"vitjax train [{VARIANT}]"]), "variant")
    pipeline = [key for key in ratios if key.startswith("pipeline/train")]
    assert len(pipeline) == 1
    _within(ratios[pipeline[0]], _paired(images["input pipeline"], images["vitjax train"]), "pipeline")
    _within(ratios["matmul jax/torch"], _paired(peak, _rates(workloads[TORCH_MATMUL], 2 * 64 ** 3)), "matmul")
