"""A tiny ViT on learnable synthetic data: seconds per run, for end-to-end tests.

    vitjax train --config tests/train/tiny_config.py --workdir /tmp/tiny
    vitjax train --config tests/train/tiny_config.py:model=mae --workdir /tmp/tiny_mae   # MAE pre-training
    vitjax train --config tests/train/tiny_config.py:model=dino --workdir /tmp/tiny_dino   # DINO pre-training
"""
from vitjax.config import base, parse_arg


def get_config(arg=None):
    arg = parse_arg(arg, model="vit", steps=30)
    c = base()
    c.model_name = arg.model
    if c.model_name in ("vit", "mae", "dino"):
        c.model.patch_size = 4
        c.model.width = 32
        c.model.depth = 1
        c.model.num_heads = 2
        c.model.mlp_dim = 64
    if c.model_name == "mae":  # the ViT's encoder, a one-block decoder of half its width
        c.objective = "mae"
        c.model.variant = None
        c.model.decoder_width = 16
        c.model.decoder_depth = 1
        c.model.decoder_heads = 2
        c.model.decoder_mlp_dim = 32
    elif c.model_name == "dino":  # a small head, 2 local crops of 8 px (2x2 patches) beside the 16 px globals
        c.objective = "dino"
        c.model.head_out_dim = 64
        c.model.head_hidden_dim = 32
        c.model.head_bottleneck_dim = 16
        c.dino.local_crops = 2
        c.dino.local_crop_size = 8
        # Grey images only, and these are RGB: the train step with them is tested on grey images in
        # tests/objectives/test_dino_objective.py, the ops in test_photometric.py.
        c.dino.photometric = False
    elif c.model_name != "vit":
        c.model.variant = "R26x1"
        c.model.stem = "small"
    c.data.name = "synthetic"
    c.data.synthetic.num_train = 512
    c.data.synthetic.num_test = 128
    c.data.synthetic.image_shape = (16, 16, 3)
    c.data.synthetic.num_classes = 4
    c.data.pp_train = "value_range(-1, 1)"
    c.data.pp_eval = "value_range(-1, 1)"
    c.batch_size = 32
    c.eval_batch_size = 64
    c.total_steps = arg.steps
    c.warmup_steps = 5
    c.lr = 3e-3
    c.log_every_steps = 5
    c.checkpoint_every_steps = 10
    return c
