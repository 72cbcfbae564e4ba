"""The contrastive objective (vitjax/objectives/contrastive_objective.py): its loss is contrastive.py's on the
batch's pairs, bad setups fail before anything compiles naming the fix, and `vitjax train` on the caption
data writes finite losses and resumes bit for bit after a stop."""
import os
import signal
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from vitjax import config as config_lib
from vitjax import data, metrics_log, models, objectives
from vitjax.data import captions
from vitjax.data.tokenizer import WordTokenizer
from vitjax.models.dual_encoder import logits_per_image
from vitjax.objectives import contrastive
from vitjax.objectives.base import StepInfo
from vitjax.train import checks
from tests.paths import ROOT
from tests.train.kill_and_resume import assert_bitwise_equal, final_params

CONFIG = os.path.join(ROOT, "configs", "captions", "dual_encoder.py")
STEPS = 16
TINY = {"data.captions.canvas": 16, "data.synthetic.num_train": 256, "data.synthetic.num_test": 64,
        "data.synthetic.image_shape": (8, 8, 1), "model.image_size": 16, "model.patch_size": 8,
        "model.vision_width": 16, "model.vision_depth": 1, "model.vision_mlp_dim": 32, "model.vision_heads": 2,
        "model.text_width": 16, "model.text_depth": 1, "model.text_mlp_dim": 32, "model.text_heads": 2,
        "batch_size": 32, "eval_batch_size": 64, "warmup_steps": 2, "evals.zero_shot.every_steps": 8,
        "evals.zero_shot.max_test": 64}


def tiny_config(**overrides):
    config = config_lib.load_config(f"{CONFIG}:base=synthetic,steps={STEPS}")
    config_lib.apply_overrides(config, {**TINY, **overrides})
    return config


def built(config):
    info = data.get_info(config.data)
    model = models.build(config.model_name, info.num_classes, **config.model)
    return model, objectives.build(config, model, info)


@pytest.mark.parametrize("loss", ["sigmoid", "softmax"])
def test_the_loss_is_contrastive_py_on_the_batch_pairs(loss):
    model, objective = built(tiny_config(**{"contrastive.loss": loss}))
    labels = np.array([3, 150, 77, 399, 3, 200])
    images = jax.random.normal(jax.random.key(1), (len(labels), 16, 16, 3))
    params = jax.jit(model.init)(jax.random.key(0), images)["params"]
    batch = {"image": images, "labels": jax.nn.one_hot(labels, captions.NUM_COMPOSITIONS)}
    value, logged = jax.jit(objective.loss)(params, None, batch, jax.random.key(2), StepInfo(jnp.int32(0)))
    # The texts encoded here, from the captions, not from the objective's table.
    tokens = WordTokenizer.from_texts(captions.captions(), 12).encode([captions.caption(k) for k in labels])
    logits = logits_per_image(jax.jit(model.apply)({"params": params}, images, tokens))
    expected = contrastive.sigmoid_loss(logits) if loss == "sigmoid" else contrastive.softmax_loss(logits)
    np.testing.assert_allclose(value, expected, rtol=1e-6)
    assert float(logged["logit_scale"]) == pytest.approx(np.log(10)) and float(logged["logit_bias"]) == -10


@pytest.mark.parametrize("overrides, message", [
    ({"data.name": "fashion_mnist"}, "set --config.data.name=captions"),
    ({"data.pp_train": "flip_lr|value_range(-1, 1)"}, "swaps 'left' and 'right'.*drop flip_lr"),
    ({"model.layout": "clip"}, "loss='sigmoid' needs the learned bias of model.layout='siglip'"),
    ({"contrastive.templates": ("a {colour} {item}", "a purple {item}")},
     "'purple' not in the caption vocabulary"),
    ({"contrastive.templates": ("a {shade} {item}",)}, "names 'shade'"),
    ({"model.max_length": 8}, "up to 10 tokens .* set --config.model.max_length=10 or more"),
    ({"model.vocab_size": 20}, "has 29 tokens, .*set --config.model.vocab_size=29 or more"),
    ({"model.image_size": 24}, "set --config.model.image_size=16"),
])
def test_a_bad_setup_is_refused_naming_the_fix(overrides, message):
    with pytest.raises(ValueError, match=message):
        built(tiny_config(**overrides))


def test_the_config_checks_pair_the_objective_with_a_dual_encoder_before_jax_starts():
    config = tiny_config()
    checks.config(config)
    config.model_name = "vit"
    with pytest.raises(ValueError, match="objective='contrastive' trains model_name='dual_encoder'"):
        checks.config(config)
    config = tiny_config(**{"objective": "supervised", "model_name": "vit"})
    with pytest.raises(ValueError, match="evals.zero_shot.every_steps=8 .* needs objective='contrastive'"):
        checks.config(config)


def _train_command(workdir):
    flags = [f"--config.{key}={','.join(map(str, value)) if isinstance(value, tuple) else value}"
             for key, value in TINY.items()]
    return [sys.executable, "-m", "vitjax", "train", "--config", f"{CONFIG}:base=synthetic,steps={STEPS}",
            "--workdir", str(workdir), "--config.log_every_steps=1", "--config.checkpoint_every_steps=1", *flags]


def _losses(workdir):
    return {row["step"]: row["loss"] for row in metrics_log.read_metrics(str(workdir)) if "loss" in row}


def test_vitjax_train_writes_finite_losses_and_resumes_bitwise_after_a_stop(tmp_path):
    whole = subprocess.Popen(_train_command(tmp_path / "whole"), cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    stopped = subprocess.Popen(_train_command(tmp_path / "stopped"), cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 300
    while stopped.poll() is None and time.time() < deadline and max(_losses(tmp_path / "stopped"), default=0) < 4:
        time.sleep(0.02)
    stopped.send_signal(signal.SIGTERM)
    out = stopped.communicate()[0]
    assert stopped.returncode == 75, out[-3000:]  # preempted: saved, resumable
    assert max(_losses(tmp_path / "stopped")) < STEPS
    resumed = subprocess.run(_train_command(tmp_path / "stopped"), cwd=ROOT, capture_output=True, text=True)
    out = whole.communicate()[0]
    assert whole.returncode == 0, out[-3000:]
    assert resumed.returncode == 0 and "resuming from step" in resumed.stdout, resumed.stderr[-3000:]
    losses = _losses(tmp_path / "whole")
    assert sorted(losses) == list(range(1, STEPS + 1)) and np.all(np.isfinite(list(losses.values())))
    assert _losses(tmp_path / "stopped") == losses
    assert_bitwise_equal(final_params(tmp_path / "stopped"), final_params(tmp_path / "whole"))
    logged = [row for row in metrics_log.read_metrics(str(tmp_path / "whole")) if "test_image_to_text_r5" in row]
    assert [row["step"] for row in logged] == [8, 16]  # config.evals.zero_shot during training
    assert all(0 <= row["test_zero_shot_held_out"] <= 1 for row in logged)
