"""The tiny DINO run the DINO tests train (through `vitjax train`): 4 steps of the tiny ViT as DINO's
student, a checkpoint and a validation evaluation every 2 steps."""
from vitjax import cli

TINY = "tests/train/tiny_config.py:model=dino,steps=4"
ARGS = ["--config.checkpoint_every_steps=2", "--config.log_every_steps=1", "--config.warmup_steps=1",
        "--config.dino.freeze_last_layer_epochs=0", "--config.data.val_size=64", "--config.eval_every_steps=2"]


def train(workdir):
    cli.main(["train", "--config", TINY, "--workdir", workdir, *ARGS])
