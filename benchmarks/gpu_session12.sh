#!/usr/bin/env bash
# Session 4, the simulated compute phase: a fresh hold-out validate run (seed 10, own calibration) and
# model-guided tuning (sweep's top 20 re-predicted from their binaries, top 10 measured + 100 random,
# seed 4) ranked with calibration 133331, then the GPU suite. Repo root on the GPU machine:
#   source .devwheels/install.sh && bash benchmarks/gpu_session12.sh
set -uo pipefail
export PYTHONUNBUFFERED=1 PERFMODEL_CACHE=/tmp/perfmodel-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m perfmodel sweep --device h100-sxm --size 4096 --measure 10 --sample 100 --seed 4 \
    --calibration results/calibration-20261122-133331-h100-sxm.toml > "$OUT/sweep-measure.log" 2>&1; echo "sweep rc $?"
d=$(ls -dt results/*-tune-seed4 | head -1); cp "$OUT/sweep-measure.log" "$d/"
tar czf "$OUT/results-tune.tar.gz" "$d"
python3 -m perfmodel validate --seed 10 > "$OUT/validate.log" 2>&1; echo "validate rc $?"
v=$(ls -dt results/*-seed10 | head -1)
tar czf "$OUT/results.tar.gz" "$d" "$v"
timeout 240 python3 -m pytest -q -m gpu tests/test_gpu.py 2>&1 | tail -3 | tee "$OUT/pytest-gpu.log"
tail -1 "$OUT/validate.log"; grep -v compiled "$OUT/sweep-measure.log" | grep "(top\|best"
