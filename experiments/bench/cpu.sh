#!/usr/bin/env bash
# The CPU benchmarks of issue 6, each vitjax vs timm side by side in one process (alternating rounds),
# plus the ViT-B/16 compile time, Swin-T beside timm's SwinTransformer and Swin-T's cost against image size
# next to ViT-S/16's, the MAE and DINO train steps beside the supervised one of the same ViT, and SAM's image
# encoder and prompt latency beside segment-anything's. Run on an otherwise idle machine; about 30 minutes on
# 2 cores before the SAM line was added (its time not measured yet).
#
#   experiments/bench/cpu.sh [--rounds 7 --seconds 2 ...]     # extra arguments go to every `vitjax bench`
#
# Writes experiments/results/bench/cpu_*.json and prints each table. `vitjax` runs under tcmalloc
# where the system has it (vitjax/xla_cpu.py), and timm then does too: both are in the one process.
set -euo pipefail
cd "$(dirname "$0")/../.."
VITJAX=${VITJAX:-.venv/bin/vitjax}
PYTHON=${PYTHON:-.venv/bin/python}
OUT=experiments/results/bench

# ViT-Ti (width 192, depth 12, 3 heads) at 28x28 with patch 4, batch 128; and at 224x224, patch 16, batch 16.
"$VITJAX" bench --config configs/bench/vit.py:variant=Ti/4,res=28,channels=1,batch=128 --out $OUT/cpu_ti4_28_b128.json "$@"
"$VITJAX" bench --config configs/bench/vit.py:variant=Ti/16,res=224,batch=16 --out $OUT/cpu_ti16_224_b16.json "$@"
# The default Fashion-MNIST config as `vitjax train` runs it (its real input pipeline included).
"$VITJAX" bench --config configs/fashion_mnist/vit.py --out $OUT/cpu_fashion_mnist_vit.json "$@"
# Compile time of a ViT-B/16 train step (scanned blocks: one block compiled, not twelve).
"$VITJAX" bench --config configs/bench/vit.py:variant=B/16,res=224,batch=16 --config.model.scan=True \
    --compile_only --out $OUT/cpu_b16_224_compile_scan.json
"$VITJAX" bench --config configs/bench/vit.py:variant=B/16,res=224,batch=16 \
    --compile_only --out $OUT/cpu_b16_224_compile_unrolled.json
# Swin-T (patch 4, window 7) at 224, batch 8, beside timm's SwinTransformer holding the same weights.
"$VITJAX" bench --config configs/bench/swin.py:variant=T,res=224,batch=8 --out $OUT/cpu_swin_t_224_b8.json "$@"
# Cost against image size: Swin-T and ViT-S/16 at 224, 448 and 896, forward FLOPs (XLA) and inference img/s
# at batch 1, alternating in one process; ViT-S/16 at 896 (~320 GFLOPs per image) is counted, not timed.
"$PYTHON" experiments/bench/swin_cost.py --rounds 5 --seconds 2 --out $OUT/cpu_swin_cost.json
# The label-free objectives' train steps beside the supervised step of the same ViT (configs/fashion_mnist/
# mae.py and dino.py train the default ViT's backbone), on one fixed batch: MAE (encoder on a quarter of the
# patches, plus its decoder), DINO (2 global and 8 local crops through the student, 2 through the teacher).
"$VITJAX" bench --config configs/fashion_mnist/mae.py --beside configs/fashion_mnist/vit.py --no_timm --no_infer \
    --no_pipeline --out $OUT/cpu_fashion_mnist_mae_beside_vit.json "$@"
"$VITJAX" bench --config configs/fashion_mnist/dino.py --beside configs/fashion_mnist/vit.py --no_timm --no_infer \
    --no_pipeline --out $OUT/cpu_fashion_mnist_dino_beside_vit.json "$@"
# ViT-Ti/4's MAE (a 2-block, 64-wide decoder) beside the same ViT-Ti/4's supervised step.
"$VITJAX" bench --config configs/bench/mae.py:variant=Ti/4,res=28,channels=1,batch=128,decoder_width=64,decoder_depth=2,decoder_heads=4 \
    --beside configs/bench/vit.py:variant=Ti/4,res=28,channels=1,batch=128 --no_timm --no_infer \
    --no_pipeline --out $OUT/cpu_mae_ti4_28_b128_beside_vit.json "$@"
# SAM ViT-B's image encoder at 1024 beside segment-anything's holding the same weights, and the prompt-to-mask
# latency on a cached embedding, vitjax's Predictor beside SamPredictor (issue 39 item 7; configs/bench/sam.py).
"$VITJAX" bench --config configs/bench/sam.py --out $OUT/cpu_sam_b_1024.json "$@"
