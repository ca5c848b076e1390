#!/usr/bin/env bash
# One device-machine session: GPU tests, then `perfmodel validate` (quick or full), then the
# edge-handling benchmark. Usage (on the GPU machine, repo root):
#   source .devwheels/install.sh && bash benchmarks/gpu_session.sh [quick|full]
set -uo pipefail
mode=${1:-quick}
export PYTHONUNBUFFERED=1 PERFMODEL_CACHE=/tmp/perfmodel-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,memory.total --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -m pytest -q -m gpu tests/test_gpu.py -x 2>&1 | tail -40 | tee "$OUT/pytest-gpu.log"
if [ "$mode" = full ]; then
  python3 -m perfmodel validate 2>&1 | tee "$OUT/validate.log"
else
  python3 -m perfmodel validate --quick 2>&1 | tee "$OUT/validate.log"
fi
python3 benchmarks/edge_overhead.py 2>&1 | tee "$OUT/edge.log"
run=$(ls -td results/*/ | head -1)
tar czf "$OUT/results.tar.gz" "$run"
echo "packed $run"
