#!/usr/bin/env bash
# ViT-B/16 at 224x224, bf16 compute, on one GPU: vitjax vs timm eager vs timm + torch.compile, with MFU
# against a bf16 matmul measured in the same run (and the datasheet peak: H100/H200 989 TFLOP/s dense).
#
#   experiments/bench/gpu.sh [BATCH] [ROUNDS]        # defaults: 128, 5
#
# Needs a CUDA jaxlib of the project's jax version (pip install "jax[cuda12]==$(python -c 'import jax;
# print(jax.__version__)')"), and torch + timm with CUDA (the pinned torch 2.14.1 wheel is a CUDA build).
# Writes experiments/results/bench/gpu_vit_b16_224_bf16_b${BATCH}.json and prints the table. About 5-8
# minutes on an H100/H200, most of it compiling (XLA, then torch.compile twice: train and eval mode).
# Then (PROFILE=0 skips it) traces 5 vitjax train steps into runs/profile_gpu_b16_224_bf16 and writes
# the per-op table to experiments/results/bench/gpu_profile_vit_b16_224_bf16_b${BATCH}.json (~1 more
# minute); it runs after the comparison so that its failure cannot cost the comparison's results.
# TensorFlow is not needed: the batches are synthetic and stay on the GPU (--no_pipeline).
set -euo pipefail
cd "$(dirname "$0")/../.."
BATCH=${1:-128}
ROUNDS=${2:-5}
PYTHON=${PYTHON:-.venv/bin/python}
OUT=experiments/results/bench/gpu_vit_b16_224_bf16_b${BATCH}.json

# cuDNN's fused attention is asked for by name (the models choose nothing by backend).
# JAX would otherwise reserve 75% of the GPU up front and leave PyTorch too little.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
"$PYTHON" - <<'PY'
import jax, torch
assert jax.default_backend() == "gpu", f"jax sees no GPU (backend {jax.default_backend()}): install a CUDA jaxlib"
assert torch.cuda.is_available(), "torch sees no GPU"
print("jax", jax.__version__, jax.devices()[0].device_kind, "| torch", torch.__version__, torch.cuda.get_device_name())
PY
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,memory.total --format=csv || true

"$PYTHON" -m vitjax bench \
    --config "configs/bench/vit.py:variant=B/16,res=224,channels=3,batch=${BATCH},classes=1000" \
    --config.dtype=bfloat16 --config.model.attention_implementation=cudnn \
    --timm_compile on --no_pipeline --rounds "$ROUNDS" --seconds 3 \
    --out "$OUT"

# The trace reader is TensorFlow's: without TensorFlow (the device image has none) the profile is skipped.
HAS_TF=$("$PYTHON" -c 'import importlib.util as u; print(int(u.find_spec("tensorflow") is not None))')
if [ "${PROFILE:-$HAS_TF}" != 0 ]; then
    "$PYTHON" -m vitjax bench \
        --config "configs/bench/vit.py:variant=B/16,res=224,channels=3,batch=${BATCH},classes=1000" \
        --config.dtype=bfloat16 --config.model.attention_implementation=cudnn \
        --no_timm --no_infer --no_pipeline --rounds 1 --seconds 1 \
        --profile runs/profile_gpu_b16_224_bf16 \
        --out "experiments/results/bench/gpu_profile_vit_b16_224_bf16_b${BATCH}.json"
fi
