"""The tiny SAM run the SAM training tests train (through `vitjax train`): a 32-pixel canvas of 2 synthetic
items, a one-global-block encoder of width 16, one click round; seconds per step.

    vitjax train --config tests/objectives/sam_tiny_config.py --workdir /tmp/sam_tiny
"""
from vitjax.config import base, parse_arg


def get_config(arg=None):
    arg = parse_arg(arg, steps=6)
    c = base()
    c.model_name, c.objective = "sam", "sam"
    c.model.update(dict(variant=None, image_size=32, patch_size=8, width=16, depth=2, num_heads=2,
                        global_attn_indexes=(1,), window_size=2, prompt_width=16, mask_in_chans=4,
                        decoder_depth=1, decoder_heads=2, decoder_mlp_dim=32, iou_head_hidden=16))
    c.data.name = "canvases"
    c.data.pp_train = c.data.pp_eval = ""
    c.data.synthetic.update(dict(num_train=64, num_test=32, image_shape=(8, 8, 1), num_classes=10))
    c.data.canvases.update(dict(base="synthetic", canvas=32, num_items=2, scale=(8, 16), num_train=32,
                                num_test=8))
    c.sam.clicks = 1
    c.sam.eval_clicks = (1, 2)
    c.batch_size = 8
    c.eval_batch_size = 8
    c.total_steps = arg.steps
    c.warmup_steps = 1
    c.log_every_steps = 1
    c.checkpoint_every_steps = 2
    return c
