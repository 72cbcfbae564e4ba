r"""An image encoder for LiT (locked-image tuning) on the caption data: a supervised ViT, an MAE or a DINO run
on the caption images, of configs/captions/dual_encoder.py's image-tower shape, whose encoder a dual
encoder then loads and locks (vitjax/interop/lit_init.py).

    vitjax train --config configs/captions/encoder.py:kind=vit --workdir runs/captions_encoder_vit
    vitjax train --config configs/captions/dual_encoder.py --workdir runs/captions_lit \
        --config.init_from=runs/captions_encoder_vit --config.contrastive.lock_image=True \
        --config.model.vision_pool=tok --config.model.activation=gelu

What experiments/contrastive.py trains for its LiT arms (issue 40 item 6). Expected: not known, no full run
yet; measured: tiny smoke runs and pilots only (experiments/contrastive.py's docstring); no result yet,
nothing here is a claim.

Choices:
- The encoder is the dual encoder's image tower as LiT loads it: patch 8 on the 48x48 RGB canvases (36
  tokens), width 64, depth 2, 4 heads, MLP 128, a CLS token read after the final norm (`pool='tok'`),
  learned position table, vitjax's exact GELU; the dual encoder then sets vision_pool='tok' and
  activation='gelu' to compute the same function.
- The same 20,000 training pairs as the dual encoder (data.captions: same seed, so the same images), of
  which 2,000 are held out for validation; the best-validation step is what a study exports and locks.
  The pairs' held-out colour-item combinations are never among them, so no encoder has seen one.
- kind=vit: supervised on the 400 compositions (the captions' ids; the caption's words are the labels a
  LiT tower then aligns with, as an ImageNet classifier's classes are for the paper's LiT).
- kind=mae: configs/fashion_mnist/mae.py's recipe (mask 0.75, per-patch normalised targets, decoder width
  64, depth 2, AdamW b2 0.95, weight decay 0.05).
- kind=dino: configs/fashion_mnist/dino.py's recipe with global crops of the whole 48-pixel canvas and 8
  local crops of 16 pixels (2x2 patches), no flips (they swap the captions' left and right) and no
  photometric jitter (grey images only, and colour is what the captions name).
- No augmentation otherwise, as the dual encoder: crops move items out of their named region.
"""
import os

from vitjax.config import base, load_module, parse_arg

KINDS = ("vit", "mae", "dino")
TOWER = dict(patch_size=8, width=64, depth=2, num_heads=4, mlp_dim=128)  # the dual encoder's vision_* fields
STEPS = {"vit": 1_500, "mae": 3_000, "dino": 3_000}


def get_config(arg=None):
    arg = parse_arg(arg, kind="vit", base="fashion_mnist")
    if arg.kind not in KINDS:
        raise ValueError(f"kind={arg.kind!r}: choose one of {', '.join(KINDS)}")
    here = os.path.dirname(os.path.abspath(__file__))
    recipe = load_module(os.path.join(os.path.dirname(here), "fashion_mnist", f"{arg.kind}.py"),
                         f"vitjax_config_captions_encoder_{arg.kind}")
    c = recipe.get_config() if arg.kind != "vit" else base()
    if arg.kind == "vit":
        c.model_name = "vit"
        c.update(dict(lr=1e-3, warmup_steps=100, batch_size=128))
    c.model.update(dict(variant=None, pool="tok", posemb="learned", **TOWER) if arg.kind != "mae" else
                   dict(variant=None, **TOWER))
    if arg.kind == "dino":
        c.dino.update(dict(global_crop_size=48, local_crop_size=16, flip=False, photometric=False))
        c.warmup_steps, c.warmup_epochs = 300, 0.0
    c.data.name = "captions"
    c.data.captions.update(dict(base=arg.base, canvas=48, num_train=20_000))
    c.data.pp_train = c.data.pp_eval = "value_range(-1, 1)"
    c.data.val_size = 2_000
    c.total_steps, c.total_epochs = STEPS[arg.kind], 0.0
    c.update(dict(eval_every_steps=500, log_every_steps=100, checkpoint_every_steps=500))
    return c
