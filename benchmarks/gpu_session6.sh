#!/usr/bin/env bash
# Calibration with the L2->SM port microbenchmark, then a fresh hold-out validate run (seed 2) for
# the model changes made since the last recorded runs. Repo root on the GPU machine:
#   source .devwheels/install.sh && bash benchmarks/gpu_session6.sh
set -uo pipefail
export PYTHONUNBUFFERED=1 PERFMODEL_CACHE=/tmp/perfmodel-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -m pytest -q -m gpu tests/test_gpu.py -x -k "calibrat" 2>&1 | tail -5 | tee "$OUT/pytest-gpu.log"
python3 -m perfmodel calibrate 2>&1 | tee "$OUT/calibrate.log"
python3 -m perfmodel validate --seed 2 2>&1 | tail -40 | tee "$OUT/validate.log"
tar czf "$OUT/results.tar.gz" results/
