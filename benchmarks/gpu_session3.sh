#!/usr/bin/env bash
# GPU tests + full validate with calibration and ncu counters. Repo root on the GPU machine:
#   source .devwheels/install.sh && bash benchmarks/gpu_session3.sh
set -uo pipefail
export PYTHONUNBUFFERED=1 PERFMODEL_CACHE=/tmp/perfmodel-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pytest -q -m gpu tests/test_gpu.py 2>&1 | tail -15 | tee "$OUT/pytest-gpu.log"
python3 -m perfmodel validate --ncu 2>&1 | tee "$OUT/validate.log" | grep -v '^\s*\[' | grep -v compiled
run=$(ls -td results/2*/ | head -1)
tar czf "$OUT/run.tar.gz" "$run"
echo "packed $run"
