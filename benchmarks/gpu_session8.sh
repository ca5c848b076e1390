#!/usr/bin/env bash
# Session 3: a fresh hold-out validate run (seed 7, with its own calibration incl. the spread table)
# for the final model (pipe overlap + 16x8 FFMA rate), then the GPU test suite. Repo root on the GPU machine:
#   source .devwheels/install.sh && bash benchmarks/gpu_session8.sh
set -uo pipefail
export PYTHONUNBUFFERED=1 PERFMODEL_CACHE=/tmp/perfmodel-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -m perfmodel validate --seed 7 > "$OUT/validate.log" 2>&1; echo "validate rc $?"
tail -40 "$OUT/validate.log"
tar czf "$OUT/results.tar.gz" results/
timeout 300 python3 -m pytest -q -m gpu tests/test_gpu.py 2>&1 | tail -5 | tee "$OUT/pytest-gpu.log"
