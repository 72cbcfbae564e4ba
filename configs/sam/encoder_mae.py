r"""MAE pre-training of an encoder that fits configs/sam/tiny.py's image encoder, on the seen classes only.

    vitjax train --config configs/sam/encoder_mae.py --workdir runs/sam_encoder_mae
    vitjax export runs/sam_encoder_mae/checkpoint_best --out sam_encoder_mae.npz
    vitjax train --config configs/sam/tiny.py --workdir runs/sam_from_mae --config.init_from=sam_encoder_mae.npz

What experiments/sam_init.py pre-trains for its MAE arm (issue 39 item 6). Expected: not known, no full run
yet; measured: a 150-step pilot only (2026-12-04, 2 cores shared with a sweep, load ~5: ~1,700 img/s, so ~6
minutes for the 4,297 steps); no result yet, nothing here is a claim.

Choices:
- configs/fashion_mnist/mae.py (width 64, depth 6, 4 heads, MLP 128; decoder 2 blocks of 64; mask ratio 0.75,
  norm_pix_loss; AdamW b2 0.95, lr 2e-3, 20 epochs) at patch 8, SAM's tiny patch: the encoder's blocks and
  patch embedding then have SAM's shapes, so every one of them maps (vitjax/interop/sam_init.py).
- Images resized from 28 to 32 pixels (a 4x4 grid of 8-pixel patches, 16 tokens, 4 visible): an item is
  then 32 pixels wide, inside the 20-40 pixels the canvases draw items at, so a patch covers as much of an
  item in pre-training as in SAM's training. Patch 7 on 28 pixels would fit no 64-pixel canvas.
- The canvases' seen classes only (vitjax/data/canvases.py SEEN_CLASSES, 30,000 training images, 2,500 of
  them held out for validation, 500 a class): the encoder never sees an item of the classes SAM is tested
  on as unseen, so "unseen" stays unseen for every arm of the study.
"""
import os

from vitjax.config import load_module
from vitjax.data.canvases import SEEN_CLASSES

SIZE = 32  # pixels: Fashion-MNIST's 28 resized, a whole number of SAM's 8-pixel patches
PATCH = 8  # configs/sam/tiny.py's model.patch_size


def get_config(arg=None):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    mae = load_module(os.path.join(here, "fashion_mnist", "mae.py"), "vitjax_config_mae")
    c = mae.get_config(arg)
    c.model.patch_size = PATCH
    c.data.classes = SEEN_CLASSES
    c.data.val_size = 2_500
    c.data.pp_train = c.data.pp_eval = f"resize({SIZE})|value_range(-1, 1)"
    c.eval_every_steps = 1_000
    return c
