#!/usr/bin/env bash
# Fragment-prefetch A/B for double_buffer, GPU tests, and a hold-out validate (new random configs).
set -uo pipefail
export PYTHONUNBUFFERED=1 PERFMODEL_CACHE=/tmp/perfmodel-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 benchmarks/ab_kernel.py double_buffer benchmarks/ab/08_double_buffer_fragment_prefetch.cu 2>&1 | tee "$OUT/ab.log"
python3 -m pytest -q -m gpu tests/test_gpu.py 2>&1 | tail -5 | tee "$OUT/pytest-gpu.log"
python3 -m perfmodel validate --seed 1 2>&1 | tee "$OUT/validate.log" | grep -v '^\s*\[' | grep -v compiled | tail -30
run=$(ls -td results/2*seed1*/ | head -1)
tar czf "$OUT/run.tar.gz" "$run"
echo "packed $run"
