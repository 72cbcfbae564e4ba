r"""DeiT's recipe at Fashion-MNIST scale: the distilled ViT student (configs/fashion_mnist/vit_distilled.py)
with the DeiT data side (RandAugment, random erasing, Mixup/CutMix) and its regularisation, fitted to
28x28 grey images.

    vitjax train --config configs/fashion_mnist/bit.py --workdir runs/fashion_mnist_bit      # the teacher
    vitjax train --config configs/fashion_mnist/deit.py --workdir runs/fashion_mnist_deit \
        --config.distillation.teacher=runs/fashion_mnist_bit

Expected, measured at the data-scaling study's protocol (1,200 steps of 128, test accuracy at the
best validation step; 2026-12-02, 2 CPU cores, ~6.5 min a run): 74.58 ± 1.25 % on 550 and
75.82 ± 1.30 % on 1.7k training images (n=3), against 63.50 / 73.46 for the same student without
this augmentation and 67.27 / 76.99 for its BiT teachers (experiments/README.md, part 6). Every run's
best step was its last or the one before: strong augmentation needs a longer schedule than the
ViT's to pay (DeiT trains 300 epochs of ImageNet); `:long` trains 40 epochs, as vit.py's. On 55k at
the study's 8 epochs (3,438 steps, ~16 min) it reaches only 83.52 % (n=2), 4.9 points under the
student without it and 7.7 under its teacher: too short a schedule for this recipe; `:long` on 55k is
not measured yet.

Choices, from DeiT (Touvron et al. 2021, Table 9) scaled to 28x28 grey images:
- RandAugment 2 ops at magnitude 7 with noise 0.5 (DeiT: rand-m9-mstd0.5), rotations capped at 15
  degrees and translations at 20% (4 px at m=7): clothes are photographed upright and centred, and
  DeiT's 45% translation pushed garments out of a 28-px frame. Solarize and posterize are left out
  (solarize turns a garment into an inverted outline on black; posterize does little on grey); colour
  is a no-op on one channel and drops out of the draw by itself.
- No horizontal flips (the dataset's shoes all face one way), a 2-px random crop as the study's
  regularisation arm.
- Random erasing p 0.25 (DeiT) over 2-25% of the image (DeiT: up to 33%, a third of a 28-px garment),
  per-pixel noise, on uint8 images before value_range so the noise stays in range.
- Mixup 0.2 / CutMix 1.0, one of them on half the batches (DeiT: 0.8 / 1.0 on every batch): CutMix boxes
  on the black background move label weight without moving garment pixels, a label noise that short
  runs on small sets pay for.
- Label smoothing 0.1, weight decay 0.05 (DeiT's AdamW value), stochastic depth 0.1 (DeiT-Ti/S).
- No repeated augmentation: it shows only n/3 distinct images per epoch, which hurts short runs.
"""
import os

from vitjax.config import load_module

RANDAUGMENT = ("randaugment(2, 7, mstd=0.5, rotate=15.0, translate=0.2, ops=('identity', 'auto_contrast', "
               "'equalize', 'rotate', 'contrast', 'brightness', 'sharpness', 'shear_x', 'shear_y', 'translate_x', "
               "'translate_y'))")


def get_config(arg=None):
    distilled = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "vit_distilled.py"),
                            "vitjax_config_vit_distilled")
    c = distilled.get_config(arg)
    c.data.pp_train = (f"{RANDAUGMENT}|random_crop(28, pad=2)|random_erasing(0.25, area=(0.02, 0.25))"
                       "|value_range(-1, 1)")
    c.data.mixup_alpha = 0.2
    c.data.cutmix_alpha = 1.0
    c.data.mixup_prob = 0.5
    c.data.mixup_switch_prob = 0.5
    c.label_smoothing = 0.1
    c.weight_decay = 0.05
    c.model.droppath_rate = 0.1
    return c
