r"""Fine-tune a pre-trained ViT-B/16 at a higher resolution: the ViT paper's transfer recipe.

    vitjax train --config configs/finetune/vit_b16.py:data=imagenet2012 --workdir runs/ft_in1k \
        --config.init_from=ViT-B_16.npz            # an official .npz or a vitjax pre-training run
    vitjax train --config configs/finetune/vit_b16.py:data=cifar10,res=384 --workdir runs/ft_c10 \
        --config.init_from=ViT-B_16.npz
Expected (paper Table 5, ImageNet-21k pre-training; not measured with vitjax, no accelerator run of
this config exists yet): about 84% ImageNet top-1 and about 99% CIFAR-10 at 384.

Arguments: `data` (imagenet2012, cifar10 or cifar100: each has its recipe below), `res`.

Choices:
- SGD with momentum 0.9, batch 512, cosine decay after 500 warmup steps, global-norm clipping at 1,
  no weight decay, base lr 0.01 (CIFAR, 10k steps) or 0.03 (ImageNet, 20k steps): the paper's
  fine-tuning recipe.
- The head is replaced by a zero-initialised one and the position embeddings resized to the new
  grid (bilinear, CLS kept): the pre-trained head has the wrong classes, the grid the wrong size.
- Size: at 384 a B/16 step costs ~3.3x the 224 step (577 tokens); ImageNet for 20k steps is ~10 h
  on a TPU v3-8 or 8 A100s in bf16; CIFAR-10 for 10k steps ~2 h on one A100.
"""
from vitjax.config import base, parse_arg

RECIPES = {
    # data: (lr, steps, classes are read from the dataset)
    "imagenet2012": (0.03, 20_000),
    "cifar10": (0.01, 10_000),
    "cifar100": (0.01, 10_000),
}


def get_config(arg=None):
    arg = parse_arg(arg, data="cifar10", res=384)
    name = arg.data
    if name not in RECIPES:
        raise ValueError(f"no fine-tuning recipe for {name!r}; choose one of {sorted(RECIPES)}")
    lr, steps = RECIPES[name]
    res = arg.res
    c = base()
    c.model_name = "vit"
    c.model.variant = "B/16"
    c.model.scan = True
    c.dtype = "bfloat16"
    c.init_from = ""  # set on the command line: the pre-trained .npz or run

    c.data.name = name
    c.data.test_split = "validation" if name == "imagenet2012" else "test"
    c.data.pp_train = f"decode|inception_crop({res})|flip_lr|value_range(-1, 1)"
    c.data.pp_eval = f"decode|resize({res})|value_range(-1, 1)"

    c.batch_size = 512
    c.eval_batch_size = 512
    c.total_steps = steps
    c.warmup_steps = 500
    c.optimizer.name = "sgd"
    c.optimizer.momentum = 0.9
    c.lr = lr
    c.schedule = "cosine"
    c.weight_decay = 0.0
    c.grad_clip_norm = 1.0
    c.log_every_steps = 50
    c.eval_every_steps = 2000
    c.checkpoint_every_steps = 1000
    return c
