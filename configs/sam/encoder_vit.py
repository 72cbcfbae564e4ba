r"""A supervised ViT whose encoder fits configs/sam/tiny.py's image encoder, trained on the seen classes only.

    vitjax train --config configs/sam/encoder_vit.py --workdir runs/sam_encoder_vit
    vitjax export runs/sam_encoder_vit/checkpoint_best --out sam_encoder_vit.npz
    vitjax train --config configs/sam/tiny.py --workdir runs/sam_from_vit --config.init_from=sam_encoder_vit.npz

What experiments/sam_init.py trains for its supervised arm (issue 39 item 6). Expected: not known, no full run
yet; measured: a 150-step pilot only (2026-12-04, 2 cores shared with a sweep, load ~5: ~1,700 img/s, so ~3
minutes for the 1,504 steps); no result yet, nothing here is a claim.

Choices: configs/fashion_mnist/vit.py (width 64, depth 6, 4 heads, MLP 128, learned position embedding,
CLS token; Adam, lr 2e-3, 7 epochs of batch 128) with configs/sam/encoder_mae.py's changes for SAM: patch
8 on images resized to 32 pixels, the canvases' 5 seen classes only (a 5-way classifier), 2,500 training
images held out for validation and the best-validation step kept (`checkpoint_best`, what the study
exports).
"""
import os

from vitjax.config import load_module


def get_config(arg=None):
    here = os.path.dirname(os.path.abspath(__file__))
    vit = load_module(os.path.join(os.path.dirname(here), "fashion_mnist", "vit.py"), "vitjax_config_vit")
    mae = load_module(os.path.join(here, "encoder_mae.py"), "vitjax_config_sam_encoder_mae")
    c = vit.get_config(arg)
    c.model.patch_size = mae.PATCH
    c.data.classes = mae.SEEN_CLASSES
    c.data.val_size = 2_500
    c.data.pp_train = c.data.pp_eval = f"resize({mae.SIZE})|value_range(-1, 1)"
    c.eval_every_steps = 500
    return c
