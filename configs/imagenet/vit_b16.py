r"""ViT-B/16 pre-training at 224, the ViT paper's recipes (Dosovitskiy et al. 2021, Table 3 / Appendix B.1).

    vitjax train --config configs/imagenet/vit_b16.py --workdir /mnt/shared/runs/vit_b16_i1k
    vitjax train --config configs/imagenet/vit_b16.py:data=imagenet21k --workdir /mnt/shared/runs/vit_b16_i21k
Expected (the paper's figures; not measured with vitjax, no accelerator run of this config exists yet):
ImageNet-21k, 90 epochs -> about 84% ImageNet top-1 after fine-tuning at 384
(configs/finetune/vit_b16.py; paper Table 5). ImageNet-1k alone is the paper's small-data point,
where ViT-B/16 stays below 80% and BiT wins (Fig. 3).

Arguments: `data` ('imagenet2012', the default: tfds has its builder, or 'imagenet21k', which needs a
builder of your own; picks the recipe), `epochs` (0: the recipe's),
`split` (the one split of your ImageNet-21k builder), `sharding` ('data', 'fsdp' or 'fsdp_tp').

The recipe per dataset (`RECIPES`), each number from the paper:
- Both: Adam (b1 0.9, b2 0.999), batch 4096, 10k steps of linear warmup, global-norm clipping at 1
  (Appendix B.1); dropout 0.1 (Table 3, both rows of ViT-B/16); the pre-logits layer of the paper's
  pre-training head (Section 3.1).
- imagenet2012: 300 epochs, lr 3e-3, cosine decay, weight decay 0.3 (Table 3, ImageNet rows).
- imagenet21k: 90 epochs, lr 1e-3, linear decay, weight decay 0.03 (Table 3, ImageNet-21k rows).
Weight decay is decoupled here (added after Adam's scaling, then times the lr: vitjax/train/optimizer.py);
`epochs` overrides the recipe's epochs and nothing else.

Validation (the laptop study's protocol, experiments/protocol.py): the trainer picks the step by a
validation split streamed once per evaluation (`data.val_split`), and reports test accuracy at it.
- imagenet2012: the last 1% of train (12,812 images, big_vision's "minival") validates, the other
  99% trains; the official validation set is the test split.
- imagenet21k (one split, `split`, default 'full' as big_vision's builder names it): its first 51,200
  examples validate (big_vision's held-out size), the next 51,200 test, the rest (~14.1M of fall11's
  14.2M) trains.
Evaluations every 5,000 steps: ~19 (ImageNet) or ~62 (ImageNet-21k) per run, each a fraction of a
percent of an epoch.

Choices:
- Scanned blocks: one compiled block, faster compiles, the same (stacked) parameters.
- Size: ~17.6 GFLOP per image forward; 90 epochs of ImageNet-21k (14M images) is ~3 days on a TPU
  v3-32 / v4-32 or 8 A100s with bf16; use `sharding=fsdp` when the 86M-parameter Adam state (1 GB)
  and activations do not fit.
- Data: tfds has no `imagenet21k` builder: the user builds one (one split, `split`);
  `imagenet2012` needs its manual download in `$TFDS_DATA_DIR/downloads/manual`.
"""
from vitjax.config import base, parse_arg

RECIPES = {
    "imagenet2012": dict(epochs=300.0, lr=3e-3, schedule="cosine", weight_decay=0.3),
    "imagenet21k": dict(epochs=90.0, lr=1e-3, schedule="linear", weight_decay=0.03),
}
I21K_HELD_OUT = 51_200  # big_vision's ImageNet-21k validation size; as many again are the test split


def imagenet_splits(dataset, split="full"):
    """{train_split, val_split, test_split} of `dataset`: disjoint, validation never trained on."""
    if dataset == "imagenet2012":
        return dict(train_split="train[:99%]", val_split="train[99%:]", test_split="validation")
    n = I21K_HELD_OUT
    return dict(train_split=f"{split}[{2 * n}:]", val_split=f"{split}[:{n}]", test_split=f"{split}[{n}:{2 * n}]")


def imagenet_data(c, dataset, split="full"):
    """Sets `c.data` for 224-px Inception-crop training on `dataset` with its validation split."""
    c.data.name = dataset
    c.data.update(imagenet_splits(dataset, split))
    c.data.pp_train = "decode|inception_crop(224)|flip_lr|value_range(-1, 1)"
    c.data.pp_eval = "decode|resize(256)|central_crop(224)|value_range(-1, 1)"


def get_config(arg=None):
    arg = parse_arg(arg, data="imagenet2012", epochs=0.0, split="full", sharding="data")
    if arg.data not in RECIPES:
        raise ValueError(f"data={arg.data!r}: the recipes are for {', '.join(RECIPES)}")
    recipe = RECIPES[arg.data]
    c = base()
    c.model_name = "vit"
    c.model.variant = "B/16"
    c.model.representation_size = 768
    c.model.dropout_rate = 0.1
    c.model.scan = True  # one compiled block: faster compiles, same parameters (stacked)
    c.dtype = "bfloat16"
    imagenet_data(c, arg.data, arg.split)

    c.batch_size = 4096
    c.eval_batch_size = 1024
    c.total_epochs = arg.epochs or recipe["epochs"]
    c.warmup_steps = 10_000
    c.optimizer.name = "adam"
    c.lr, c.schedule, c.weight_decay = recipe["lr"], recipe["schedule"], recipe["weight_decay"]
    c.grad_clip_norm = 1.0
    c.mesh.data = -1
    c.sharding = arg.sharding
    c.log_every_steps = 100
    c.eval_every_steps = 5000
    c.checkpoint_every_steps = 1000
    return c
