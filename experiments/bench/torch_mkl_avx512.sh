#!/usr/bin/env bash
# `vitjax bench` with the PyTorch side's oneMKL on its AVX-512 code path on an AMD processor.
#
#   experiments/bench/torch_mkl_avx512.sh --config configs/bench/swin.py:variant=T,res=224,batch=8 --no_pipeline
#
# The torch wheel's oneMKL picks its kernels by vendor: on AMD processors it runs its generic code path,
# and torch's float32 matmul reaches half of XLA's (AMD EPYC family 26: 208-222 against 467-499 GFLOP/s),
# which makes any timm comparison there a comparison of BLAS libraries. oneMKL asks one internal
# function whether the processor is Intel's; preloading a library whose function of that name says
# yes puts it on its AVX-512 path (502-512 GFLOP/s on the same host). The library is built here, needs
# a C compiler, and changes nothing in JAX, whose matmuls do not go through oneMKL. vitjax keeps
# tcmalloc beside it (vitjax/xla_cpu.py); the JSON records LD_PRELOAD under `machine`.
# Measured with it: experiments/results/bench/README.md, "Swin-T against timm with oneMKL at full speed".
set -euo pipefail
cd "$(dirname "$0")/../.."
VITJAX=${VITJAX:-.venv/bin/vitjax}
SHIM_DIR=$(mktemp -d)
trap 'rm -rf "$SHIM_DIR"' EXIT
echo 'int mkl_serv_intel_cpu_true(void) { return 1; }' > "$SHIM_DIR/shim.c"
${CC:-cc} -shared -fPIC -O2 -o "$SHIM_DIR/libmkl_intel_path.so" "$SHIM_DIR/shim.c"
LD_PRELOAD="$SHIM_DIR/libmkl_intel_path.so${LD_PRELOAD:+ $LD_PRELOAD}" "$VITJAX" bench "$@"
