#!/usr/bin/env bash
# Installs vitjax on a Cloud TPU VM, whose image ships Python 3.10 (vitjax and jax 0.10 need >= 3.11):
# uv, a uv-managed CPython 3.11 in REPO/.venv, then the project and jax[tpu] pinned by constraints.txt.
#
#   bash experiments/tpu/install.sh [REPO]      # REPO: the vitjax checkout (default: .)
#
# Then check with: REPO/.venv/bin/python -c "import jax; print(jax.devices())". docs/scaling.md says more.
set -euo pipefail
cd "${1:-.}"
if ! command -v uv >/dev/null; then
    curl -LsSf https://astral.sh/uv/install.sh | sh
    export PATH="$HOME/.local/bin:$PATH"
fi
jax_pin=$(grep -E '^jax==' constraints.txt)        # the jax the project is tested with
uv venv --python 3.11 .venv
uv pip install --python .venv -c constraints.txt -e . "jax[tpu]==${jax_pin#jax==}"
