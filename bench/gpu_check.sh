#!/usr/bin/env bash
# One short check for a lent GPU (15 device-minutes a session): the fast decoder against the model's own
# forward on cuda in bf16, and 20 GRPO steps on cuda (bf16 autocast, fp32 weights) of SmolLM2-135M's
# architecture with its real tokenizer and chat template, printing s/step and tokens/s; the same short run
# under distributed.strategy ddp and fsdp through torchrun (2 ranks if 2 GPUs are visible); then 12 steps each
# of the synchronous trainer and of asynchronous rollouts (max_staleness 1) side by side. Never a test.
# Prepare here first: `bash bench/gpu_prep.sh`; then on the device: carry [.whl, .gpu], run this.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} || exit 1
fi
export PYTHONPATH=src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
MODEL=${RLVR_GPU_MODEL:-.gpu/smollm2} timeout 570 python3 bench/gpu_check.py 2>&1 | tee "${OUT:-/tmp}/gpu_check.log"
