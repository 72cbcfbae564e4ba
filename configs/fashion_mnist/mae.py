r"""MAE pre-training of the default Fashion-MNIST ViT (configs/fashion_mnist/vit.py).

    vitjax train --config configs/fashion_mnist/mae.py --workdir runs/fashion_mnist_mae
    vitjax analyze --workdir runs/fashion_mnist_mae            # reconstructions of test images
    vitjax train --config configs/fashion_mnist/vit.py --workdir runs/fashion_mnist_mae_ft \
        --config.init_from=runs/fashion_mnist_mae               # fine-tune the encoder as a classifier
Expected (measured 2026-12-03 on 2 CPU cores, seed 0, as experiments/self_supervised.py:part=mae runs
it): 8,594 steps (20 epochs of the 55,000 images, batch 128) in 1,003 s at ~1,150 img/s (a 3-minute test
run shared the cores; an earlier run alone took 1,069 s); validation reconstruction loss 0.428 / 0.396 /
0.378 / 0.370 at steps 2k / 4k / 6k / 8k and 0.3699 at the last (best) step, test loss 0.3704: lower at
every evaluation, so a longer schedule is the first thing to try. The frozen encoder's CLS feature in
the weighted k-NN (k=20, T=0.07, the 55k training images as memory bank, `vitjax eval --knn_only`):
top-1 84.04%, top-5 99.30%. Fine-tuned on N labelled images (configs/fashion_mnist/vit.py with
init_from, the data-scaling protocol's budgets, test accuracy at best validation, seeds 0-2, 0-1 at 55k):
79.06 ± 0.53 / 83.09 ± 0.60 / 86.06 ± 0.34 / 91.13 ± 0.18% at 550 / 1.7k / 5.5k / 55k, against 63.69 /
74.23 / 79.90 / 88.03 for the ViT from scratch and 67.27 / 76.99 / 83.99 / 91.20 for the BiT
(experiments/README.md, Part 7; results and reconstructions in experiments/results/self_supervised/).
Linear few-shot probe (`vitjax eval --fewshot_only`, 3 draws): 58.20 / 71.23 / 74.56 / 76.85% at 1 / 5 /
10 / 25 images a class.

The model, from jax.eval_shape (parameters) and XLA's cost analysis of the compiled forward pass of
one 28x28 image (no model kernels), measured 2026-12-01:
- encoder: the default ViT's (patch 4: 7x7 = 49 tokens plus CLS, width 64, depth 6, 4 heads, MLP
  128), 202,112 parameters: the ViT's 205,962 less its learned position embedding (50 x 64) and its
  10-class head, since MAE's table is fixed;
- decoder: 72,336 parameters; the whole MAE forward pass 14.1 MFLOPs against the ViT classifier's
  21.5: the encoder sees 12 of the 49 patches.
A fine-tuning or linear-probe ViT takes the encoder with `vitjax.models.mae.encoder_params`
(`MAE.classifier(10)` is that ViT).

Choices:
- Mask ratio 0.75 and norm_pix_loss: the paper's defaults (its ablations: 75% best for fine-tuning
  and linear probing; per-patch normalised targets better than raw pixels). round(0.25 x 49) = 12
  patches stay visible.
- Decoder width 64, depth 2, 4 heads, MLP 128: the encoder's block shape, two blocks. The paper's
  decoder is narrower than its encoder (512 against 768-1280) with 8 blocks; here the decoder runs on
  all 50 tokens, so two blocks already do more token-block work than the encoder's six on 13 (100
  against 78). A narrower decoder (32) is the paper's proportion, untried.
- AdamW with b2 0.95 and weight decay 0.05 as the official pre-training; the default ViT's learning
  rate, warmup, cosine decay and batch size, untuned. 20 epochs: MAE pre-trains for hundreds of epochs
  on ImageNet; this is a first run's budget, to be revised when it has run.
- A validation split of 5,000 training images, evaluated every 2,000 steps: the best checkpoint is the
  one with the lowest validation reconstruction loss (with fixed masks, so steps compare), and the
  test loss is reported at it; the other 55,000 images pre-train.
- No augmentation: the official random-resized crops suit ImageNet photos more than centred 28x28
  items, and its flips do not suit Fashion-MNIST (its shoes all face one way).
"""
from vitjax.config import base, parse_arg


def get_config(arg=None):
    parse_arg(arg)
    c = base()
    c.model_name = "mae"
    c.model.variant = None
    c.model.patch_size = 4
    c.model.width = 64
    c.model.depth = 6
    c.model.num_heads = 4
    c.model.mlp_dim = 128
    c.model.decoder_width = 64
    c.model.decoder_depth = 2
    c.model.decoder_heads = 4
    c.model.decoder_mlp_dim = 128
    c.model.mask_ratio = 0.75
    c.model.norm_pix_loss = True
    c.objective = "mae"  # the model's mask_ratio and norm_pix_loss are its settings

    c.data.name = "fashion_mnist"
    c.data.pp_train = "value_range(-1, 1)"
    c.data.pp_eval = "value_range(-1, 1)"
    c.data.val_size = 5000
    c.eval_every_steps = 2000

    c.batch_size = 128
    c.total_epochs = 20.0
    c.warmup_steps = 200
    c.lr = 2e-3
    c.optimizer.b2 = 0.95
    c.weight_decay = 0.05
    c.log_every_steps = 100
    c.checkpoint_every_steps = 1000
    return c
