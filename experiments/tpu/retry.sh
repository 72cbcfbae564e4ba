#!/usr/bin/env bash
# Runs a command until it ends other than preempted: vitjax exits with status 75
# (vitjax.train.preemption.PREEMPTED_EXIT_CODE) after a SIGTERM checkpoint, and re-running the same
# command resumes it. Any other status (0 included) ends the loop with that status.
#
#   experiments/tpu/retry.sh .venv/bin/vitjax train --config configs/... --workdir gs://BUCKET/runs/x
#
# Why: on a TPU VM a maintenance event or a spot notice sends SIGTERM; where the VM survives, this
# resumes at once. A spot TPU that is taken away is gone with its disk: recreate it (docs/scaling.md)
# and run this same line again; the gs:// workdir holds the checkpoints.
set -u
attempt=1
until "$@"; do
    code=$?
    if [ "$code" -ne 75 ]; then
        exit "$code"
    fi
    attempt=$((attempt + 1))
    echo "retry.sh: preempted (exit 75); attempt $attempt of: $*" >&2
done
