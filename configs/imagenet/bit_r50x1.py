r"""BiT-M R50x1 pre-training, the BiT recipe (Kolesnikov et al. 2020, Section 3.2 "Upstream Pre-Training").

    vitjax train --config configs/imagenet/bit_r50x1.py --workdir /mnt/shared/runs/bit_r50x1_i1k
    vitjax train --config configs/imagenet/bit_r50x1.py:data=imagenet21k --workdir /mnt/shared/runs/bit_r50x1_i21k
Expected (the paper's figure; not measured with vitjax, no accelerator run of this config exists
yet): ImageNet-21k, 90 epochs -> about 80% ImageNet top-1 after BiT-HyperRule fine-tuning (BiT-M
R50x1 in the BiT paper).

Arguments: `variant` (a BiT size, e.g. R101x1), `data` ('imagenet2012', the default, or 'imagenet21k'),
`epochs`, `split` (the one split of your ImageNet-21k builder).

The recipe, the same for BiT-S (ImageNet) and BiT-M (ImageNet-21k), from Section 3.2: SGD with momentum
0.9, batch 4096, lr 0.03 * batch / 256, 5k steps of linear warmup, weight decay 1e-4, 90 epochs, no
dropout, Inception crops and flips. One deviation: a cosine decay in place of the paper's steps (x0.1
at 30, 60 and 80 epochs), which it approximates; vitjax has no step schedule.

Validation: the splits of configs/imagenet/vit_b16.py (`imagenet_splits`: ImageNet's last 1% of train,
or ImageNet-21k's first 51,200 examples, streamed once per evaluation every 5,000 steps), so the
two families are selected and tested on the same examples.

Choices:
- Size: ~4.1 GFLOP per image forward, 25.5M parameters; ImageNet-21k for 90 epochs is ~1 day on a
  TPU v3-32 / 8 A100s in bf16. Data as in configs/imagenet/vit_b16.py.
"""
import os

from vitjax.config import base, load_module, parse_arg

_vit = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "vit_b16.py"))


def get_config(arg=None):
    arg = parse_arg(arg, variant="R50x1", data="imagenet2012", epochs=90.0, split="full")
    if arg.data not in _vit.RECIPES:
        raise ValueError(f"data={arg.data!r}: the splits are known for {', '.join(_vit.RECIPES)}")
    c = base()
    c.model_name = "bit"
    c.model.variant = arg.variant
    c.dtype = "bfloat16"
    _vit.imagenet_data(c, arg.data, arg.split)

    c.batch_size = 4096
    c.eval_batch_size = 1024
    c.total_epochs = arg.epochs
    c.warmup_steps = 5000
    c.optimizer.name = "sgd"
    c.optimizer.momentum = 0.9
    c.lr = 0.03 * c.batch_size / 256
    c.schedule = "cosine"
    c.weight_decay = 1e-4
    c.grad_clip_norm = 0.0
    c.log_every_steps = 100
    c.eval_every_steps = 5000
    c.checkpoint_every_steps = 1000
    return c
