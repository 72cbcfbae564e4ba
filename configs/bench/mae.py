r"""An MAE on synthetic images, for `vitjax bench` beside the same ViT's supervised step (speed only).

    vitjax bench --config configs/bench/mae.py:variant=B/16,batch=8 --beside configs/bench/vit.py:variant=B/16,batch=8 --no_timm
    vitjax bench --config configs/bench/mae.py:variant=Ti/4,res=28,channels=1,batch=128,decoder_width=64,decoder_depth=2,decoder_heads=4 \
        --beside configs/bench/vit.py:variant=Ti/4,res=28,channels=1,batch=128 --no_timm
    vitjax bench --config configs/bench/mae.py:variant=B/16,batch=8 --no_infer    # beside the official MAE in PyTorch
Same arguments as configs/bench/vit.py (`variant`, `res`, `channels`, `batch`, `classes`), so the two
commands' encoders are the same ViT, plus the decoder (`decoder_width`, `decoder_depth`,
`decoder_heads`; the official ViT-B/16 MAE's 512, 8, 16 by default, heavier than a Ti encoder: the
second command scales it down with the encoder) and `mask_ratio` (0.75). The
summary's ratio 'train vitjax/vitjax[configs/bench/vit.py...]' is the MAE step's images per second
over the supervised ViT's. Without `--no_timm` the step is timed beside the official MAE's computation
in PyTorch, built from timm's blocks (vitjax/bench/torch_mae.py): 'train vitjax/timm'.
Expected (measured 2026-12-03 on 2 idle CPU cores, experiments/bench/cpu.sh's line for the Fashion-MNIST
configs, --rounds 5): configs/fashion_mnist/mae.py's step (the default ViT's encoder on 12 of 49
patches, a 2-block 64-wide decoder on all 49) at 1,253 img/s beside configs/fashion_mnist/vit.py's
supervised step at 760: 1.74x, not 4x, for the reasons below
(experiments/results/bench/cpu_fashion_mnist_mae_beside_vit.json). The configs/bench lines above are
not measured.

Why the ratio is not 4x although the encoder sees a quarter of the patches:
- The decoder runs on every token (the visible ones and a mask token in each masked place), so its
  cost does not shrink with the mask ratio. Counting the blocks' dense layers (width squared per token,
  blocks times tokens): ViT-B/16's official decoder (8 blocks of 512) costs 8 x 512^2 / (12 x 768^2),
  about 30% of the encoder on the full sequence, and the encoder on 50 of 197 tokens about 25%: the
  MAE step does about 55% of the supervised one's block arithmetic, a speed-up under 2x before
  anything else. The smaller the encoder against the decoder, the smaller the gain; the paper's "3x
  or more" is for its large encoders (ViT-L, ViT-H), whose decoder is relatively lighter.
- Costs that do not scale with the visible tokens remain: the patch embedding of every patch, the
  masking (a sort of uniform noise per image, gathers and the un-shuffle), the per-patch loss
  targets, and the optimiser's update of every parameter (the decoder's too).
- Attention is quadratic in tokens, so the encoder's attention shrinks ~16x but its dense layers,
  which dominate at these lengths, only ~4x; at small widths and short sequences (28x28 images) fixed
  per-step overheads weigh more still.

Choices: synthetic images and `base()`'s optimiser, as configs/bench/vit.py (whose `synthetic_benchmark`
this config shares), so the only difference between the two steps is the model and its objective.
"""
import os

from vitjax.config import base, load_module, parse_arg

_vit = load_module(os.path.join(os.path.dirname(os.path.abspath(__file__)), "vit.py"))


def get_config(arg=None):
    arg = parse_arg(arg, variant="Ti/16", res=224, channels=3, batch=16, classes=10, decoder_width=512,
                    decoder_depth=8, decoder_heads=16, mask_ratio=0.75)
    c = base()
    c.model_name = "mae"
    c.objective = "mae"
    c.model.variant = arg.variant
    c.model.decoder_width = arg.decoder_width
    c.model.decoder_depth = arg.decoder_depth
    c.model.decoder_heads = arg.decoder_heads
    c.model.mask_ratio = arg.mask_ratio
    c.model.norm_pix_loss = True
    c.model.scan = False  # as configs/bench/vit.py
    c.model.remat_policy = None
    _vit.synthetic_benchmark(c, arg)
    return c
