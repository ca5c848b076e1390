#!/usr/bin/env bash
# Session 3: model-guided tuning with the final model (its top 10 of every valid config at 4096 and a new
# random sample of 100, seed 1), ranked with calibration 125959. Repo root on the GPU machine:
#   source .devwheels/install.sh && bash benchmarks/gpu_session9.sh
set -uo pipefail
export PYTHONUNBUFFERED=1 PERFMODEL_CACHE=/tmp/perfmodel-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m perfmodel sweep --device h100-sxm --size 4096 --measure 10 --sample 100 --seed 1 \
    --calibration results/calibration-20261122-125959-h100-sxm.toml > "$OUT/sweep-measure.log" 2>&1; echo "sweep rc $?"
d=$(ls -dt results/*-tune-seed1 | head -1); cp "$OUT/sweep-measure.log" "$d/"
tar czf "$OUT/results.tar.gz" "$d"
grep -v "compiled" "$OUT/sweep-measure.log" | tail -14
