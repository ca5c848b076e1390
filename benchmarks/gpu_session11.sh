#!/usr/bin/env bash
# Session 3, final model (with the tile-loop load phase): a fresh hold-out validate run (seed 9, own calibration) and model-guided tuning
# (top 10 of every valid config at 4096 + 100 random, seed 3) ranked with calibration 133331, then the
# GPU suite. Repo root on the GPU machine:
#   source .devwheels/install.sh && bash benchmarks/gpu_session11.sh
set -uo pipefail
export PYTHONUNBUFFERED=1 PERFMODEL_CACHE=/tmp/perfmodel-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m perfmodel validate --seed 9 > "$OUT/validate.log" 2>&1; echo "validate rc $?"
python3 -m perfmodel sweep --device h100-sxm --size 4096 --measure 10 --sample 100 --seed 3 \
    --calibration results/calibration-20261122-133331-h100-sxm.toml > "$OUT/sweep-measure.log" 2>&1; echo "sweep rc $?"
d=$(ls -dt results/*-tune-seed3 | head -1); cp "$OUT/sweep-measure.log" "$d/"
v=$(ls -dt results/*-seed9 | head -1)
tar czf "$OUT/results.tar.gz" "$d" "$v"
timeout 300 python3 -m pytest -q -m gpu tests/test_gpu.py 2>&1 | tail -3 | tee "$OUT/pytest-gpu.log"
tail -1 "$OUT/validate.log"; grep -v compiled "$OUT/sweep-measure.log" | grep "(top\|best"
