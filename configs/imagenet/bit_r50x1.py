r"""BiT-M R50x1 pre-training, the BiT recipe (Kolesnikov et al. 2020, Section 3.2).

    vitjax train --config configs/imagenet/bit_r50x1.py --workdir /mnt/shared/runs/bit_r50x1_i21k
Expected (the paper's figure; not measured with vitjax, no accelerator run of this config exists
yet): ImageNet-21k, 90 epochs -> about 80% ImageNet top-1 after BiT-HyperRule fine-tuning (BiT-M
R50x1 in the BiT paper).

Arguments: `variant` (a BiT size, e.g. R101x1), `data` (a tfds name), `epochs`.

Choices:
- SGD with momentum 0.9, batch 4096, lr 0.03 * batch / 256, linear warmup for 5k steps, weight decay
  1e-4, no dropout, Inception crops and flips: the BiT paper's recipe.
- A cosine decay in place of the paper's steps (x0.1 at 30, 60, 80 epochs), which it approximates.
- Size: ~4.1 GFLOP per image forward, 25.5M parameters; ImageNet-21k for 90 epochs is ~1 day on a
  TPU v3-32 / 8 A100s in bf16. Data as in configs/imagenet/vit_b16.py.
"""
from vitjax.config import base, parse_arg


def get_config(arg=None):
    arg = parse_arg(arg, variant="R50x1", data="imagenet21k", epochs=90.0)
    c = base()
    c.model_name = "bit"
    c.model.variant = arg.variant
    c.dtype = "bfloat16"

    c.data.name = arg.data
    c.data.test_split = "validation"
    c.data.pp_train = "decode|inception_crop(224)|flip_lr|value_range(-1, 1)"
    c.data.pp_eval = "decode|resize(256)|central_crop(224)|value_range(-1, 1)"

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
