r"""ViT-B/16 pre-training at 224, the ViT paper's recipe (Dosovitskiy et al. 2021, Table 3 / Appendix B).

    vitjax train --config configs/imagenet/vit_b16.py --workdir /mnt/shared/runs/vit_b16_i21k
    vitjax train --config configs/imagenet/vit_b16.py:data=imagenet2012,epochs=300 --workdir ...
Expected (the paper's figures; not measured with vitjax, no accelerator run of this config exists yet):
ImageNet-21k, 90 epochs -> about 84% ImageNet top-1 after fine-tuning at 384
(configs/finetune/vit_b16.py; paper Table 5). ImageNet-1k alone is the paper's small-data point,
where ViT-B/16 stays below 80% and BiT wins (Fig. 3).

Arguments: `data` (a tfds name), `epochs`, `sharding` ('data', 'fsdp' or 'fsdp_tp'; vitjax/parallel.py).

Choices:
- Adam (b1 0.9, b2 0.999), batch 4096, lr 1e-3 with 10k linear warmup then linear decay, decoupled
  weight decay 0.03, global-norm clipping at 1: the paper's recipe (Table 3, ImageNet-21k).
- Dropout 0.1 on ImageNet-21k only, and the pre-logits layer of the paper's pre-training head.
- Scanned blocks: one compiled block, faster compiles, the same (stacked) parameters.
- Size: ~17.6 GFLOP per image forward; 90 epochs of ImageNet-21k (14M images) is ~3 days on a TPU
  v3-32 / v4-32 or 8 A100s with bf16; use `sharding=fsdp` when the 86M-parameter Adam state (1 GB)
  and activations do not fit.
- Data: tfds `imagenet21k` must be built by the user (no public builder downloads it);
  `imagenet2012` needs its manual download in `$TFDS_DATA_DIR/downloads/manual`.
"""
from vitjax.config import base, parse_arg


def get_config(arg=None):
    arg = parse_arg(arg, data="imagenet21k", epochs=90.0, sharding="data")
    c = base()
    c.model_name = "vit"
    c.model.variant = "B/16"
    c.model.representation_size = 768
    c.model.dropout_rate = 0.1 if arg.data == "imagenet21k" else 0.0
    c.model.scan = True  # one compiled block: faster compiles, same parameters (stacked)
    c.dtype = "bfloat16"

    c.data.name = arg.data
    c.data.train_split = "train"
    c.data.test_split = "validation"
    c.data.pp_train = "decode|inception_crop(224)|flip_lr|value_range(-1, 1)"
    c.data.pp_eval = "decode|resize(256)|central_crop(224)|value_range(-1, 1)"

    c.batch_size = 4096
    c.eval_batch_size = 1024
    c.total_epochs = arg.epochs
    c.warmup_steps = 10_000
    c.optimizer.name = "adam"
    c.lr = 1e-3
    c.schedule = "linear"
    c.weight_decay = 0.03
    c.grad_clip_norm = 1.0
    c.mesh.data = -1
    c.sharding = arg.sharding
    c.log_every_steps = 100
    c.eval_every_steps = 5000
    c.checkpoint_every_steps = 1000
    return c
