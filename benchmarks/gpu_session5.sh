#!/usr/bin/env bash
# Kernels after the edge-path change: A/B against seed 000 V3, all GPU tests, edge-handling cost.
set -uo pipefail
export PYTHONUNBUFFERED=1 PERFMODEL_CACHE=/tmp/perfmodel-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
which nvdisasm cuobjdump; ls /usr/local/cuda/bin | grep -E "nvdisasm|cuobjdump"
python3 benchmarks/ab_kernel.py double_buffer benchmarks/ab/seed000_v3.cu 2>&1 | tee "$OUT/ab-seed.log"
python3 -m pytest -q -m gpu tests/test_gpu.py 2>&1 | tail -5 | tee "$OUT/pytest-gpu.log"
python3 benchmarks/edge_overhead.py 2>&1 | tee "$OUT/edge.log"
