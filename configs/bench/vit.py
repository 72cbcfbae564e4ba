r"""A ViT on synthetic images, for `vitjax bench` (speed only: the data carry no real task).

    vitjax bench --config configs/bench/vit.py:variant=Ti/4,res=28,channels=1,batch=128
    vitjax bench --config configs/bench/vit.py:variant=Ti/16,res=224,batch=16
    vitjax bench --config configs/bench/vit.py:variant=B/16,res=224,batch=128 --config.dtype=bfloat16   # GPU
Expected (measured 2026-11-30 on 2 CPU cores, machine otherwise idle, by experiments/bench/cpu.sh;
experiments/results/bench/README.md has the rest): the vitjax train step at 98.1 img/s for Ti/4 at 28
(batch 128) and 16.9 img/s for Ti/16 at 224 (batch 16), 59% and 53% MFU, 0.97x and 0.88x timm's.

Arguments: `variant` (a ViT size and patch), `res` (square image size), `channels`, `batch`, `classes`.
Everything else is `base()`'s: Adam with decoupled weight decay and gradient clipping, as in the
training configs.

Choices:
- Synthetic images: the benchmark measures speed, and synthetic data needs no download at any size.
- scan=False: the training configs' unrolled stack; `--config.model.scan=True` compiles one block,
  faster for big models (ViT-B/16 on CPU: 6.1 s against 12.6 s, same README).
"""
from vitjax.config import base, parse_arg


def get_config(arg=None):
    arg = parse_arg(arg, variant="Ti/16", res=224, channels=3, batch=16, classes=10)
    c = base()
    c.model_name = "vit"
    c.model.variant = arg.variant
    c.model.pool = "tok"
    c.model.posemb = "learned"
    c.model.scan = False  # True: one scanned block (faster compiles, e.g. ViT-B/16 on CPU)
    c.model.remat_policy = None  # e.g. "nothing_saveable" to trade compute for activation memory
    synthetic_benchmark(c, arg)
    return c


def synthetic_benchmark(c, arg) -> None:
    """Synthetic `res` x `res` x `channels` images of `classes` classes, batch `batch`: the settings every
    benchmark config shares (configs/bench/swin.py too)."""
    c.data.name = "synthetic"
    c.data.synthetic.image_shape = (arg.res, arg.res, arg.channels)
    c.data.synthetic.num_classes = arg.classes
    c.data.synthetic.num_train = 1024
    c.data.synthetic.num_test = 128
    c.data.pp_train = "value_range(-1, 1)"
    c.data.pp_eval = "value_range(-1, 1)"
    c.batch_size = arg.batch
    c.total_steps = 100  # the benchmark runs its own loop; a duration is only needed to build the schedule
    c.warmup_steps = 10
