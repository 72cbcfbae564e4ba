"""What a default training run loads of vitjax: the trainer's import closure stays small, and a ViT run
loads no other model family, objective or weight converter (they load when a config names them)."""
import json
import subprocess
import sys

from tests.paths import ROOT

MAX_TRAINER_CLOSURE = 40  # issue 37: 77 modules before the second structure pass, 39 after it

CHECK = """
import json, sys, tempfile
def loaded():
    return sorted(m for m in sys.modules if m == "vitjax" or m.startswith("vitjax."))
from vitjax.train import trainer
at_import = loaded()
from tests.train import tiny_config
config = tiny_config.get_config()
config.total_steps, config.warmup_steps, config.eval_every_steps = 2, 1, 0
trainer.train(config, tempfile.mkdtemp())
print(json.dumps({"import": at_import, "run": loaded()}))
"""

# Modules that only a config naming them needs.
NAMED_ONLY = ("vitjax.models.swin", "vitjax.models.mae", "vitjax.models.dino", "vitjax.models.sam",
              "vitjax.models.dual_encoder", "vitjax.models.text", "vitjax.interop.", "vitjax.objectives.dino",
              "vitjax.objectives.mae", "vitjax.objectives.distillation", "vitjax.objectives.contrastive",
              "vitjax.analysis", "vitjax.bench", "vitjax.sweep")


def test_the_trainer_loads_few_modules_and_a_vit_run_no_other_family():
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(loaded["import"]) <= MAX_TRAINER_CLOSURE, loaded["import"]
    assert "vitjax.models.vit" in loaded["run"] and "vitjax.objectives.supervised" in loaded["run"]
    assert not [m for m in loaded["run"] if m.startswith(NAMED_ONLY)], loaded["run"]
