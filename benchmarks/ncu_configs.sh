#!/usr/bin/env bash
# ncu counters for a few configurations the model misses (see benchmarks/ncu_configs.py).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
M=$(python3 -c "from perfmodel.measure.ncu import METRICS; print(METRICS)")
X=""
[ "${1:-}" = scalar ] && X=",l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__data_pipe_lsu_wavefronts.sum"
ncu --clock-control none --target-processes all -k regex:sgemm --metrics "$M,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active$X" \
    --csv --page raw python3 benchmarks/ncu_configs.py "$@" > "$OUT/ncu_configs.csv" 2> "$OUT/ncu_configs.err"
tail -2 "$OUT/ncu_configs.err"
