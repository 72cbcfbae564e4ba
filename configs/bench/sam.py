r"""SAM's image encoder and its prompt answers, for `vitjax bench` beside segment-anything 1.0 (speed only).

    vitjax bench --config configs/bench/sam.py --rounds 5 --seconds 2 \
        --out experiments/results/bench/cpu_sam_b_1024.json
    vitjax bench --config configs/bench/sam.py:variant=B,res=512 --rounds 5     # the same blocks on a 32x32 grid
    vitjax bench --config configs/bench/sam.py --no_timm                        # vitjax alone (no torch needed)
Times, in alternating rounds of one process (vitjax/bench/sam_model.py):
- the image encoder's inference (`SAM.embed_image`, the 64x64x256 embedding of a 1024x1024 image for ViT-B)
  beside segment-anything's `image_encoder` holding the same weights: 'infer vitjax/segment-anything (image
  encoder)' in the summary's ratios, vitjax's images per second over segment-anything's (goal: >= 1.0 on
  the 2-core CPU, issue 39 item 7);
- the prompt-to-mask latency on a cached embedding: vitjax's Predictor and segment-anything's SamPredictor,
  each having embedded the image once, answering one foreground point, or one box, per call (three masks
  at the image's size, as numpy arrays): 'latency_ms_per_prompt' (ms, median over rounds) and the ratios
  'prompt point|box vitjax/segment-anything'.
Before timing, both encoders embed the benchmark's images and both predictors answer the point prompt, and
the bench stops unless they agree to 1e-4 (relative error): the ratio compares one function.
Expected (2026-12-06, AMD EPYC family 25 model 17, 2 vCPUs, nothing else running; experiments/results/bench/
README.md, "SAM"): the encoder 5.8-5.9 s per 1024x1024 image, 1.08-1.12x segment-anything's (goal >= 1.0:
met); a point or box prompt on a cached embedding 45-54 ms, 1.2-1.36x faster than SamPredictor's. Before
timing the two agreed to a relative error of 1.4e-6 (embeddings and logits).
Deterministic: XLA counts 980 GFLOPs for the encoder's forward pass of one 1024x1024 image (`sam.xla_flops`).

Arguments: `variant` (B, L or H: the released encoders, vitjax/models/sam.py), `res` (the model's
image_size: the square the encoder takes, a multiple of 16; 1024 is the released models'), `batch` (images
per encoder call). Every other SAM field can be set as --config.model.<field> (e.g. width, depth,
num_heads, global_attn_indexes, window_size for a small model; the tests do).

Choices:
- batch 1: SamPredictor and vitjax's Predictor embed one image at a time, which is how SAM is used; on the
  CPU, `vitjax bench` then keeps one XLA device (the data-parallel split needs a batch to split).
- Random weights, the same in both (segment-anything's initialisation plus seeded noise, read into vitjax
  by vitjax/interop/sam_weights.py): the speed of these dense networks does not depend on the values, and
  nothing is downloaded. The official checkpoints hold the same shapes at 1024.
- float32: segment-anything's own precision, and the precision in which the two are checked to agree.
- Inference only: SAM's encoder is trained in vitjax's SAM objective (configs/sam/), with canvases and
  masks this benchmark does not build; the issue asks for the encoder's and the prompts' cost.
"""
from vitjax.config import base, parse_arg


def get_config(arg=None):
    arg = parse_arg(arg, variant="B", res=1024, batch=1)
    c = base()
    c.model_name = "sam"
    c.model.variant = arg.variant
    c.model.image_size = arg.res
    c.batch_size = arg.batch
    c.eval_batch_size = arg.batch  # the CPU device split fits every batch of a config (vitjax/xla_cpu.py)
    c.total_steps = 1  # every config names one duration; the benchmark trains nothing
    return c
