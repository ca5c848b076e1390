#!/usr/bin/env bash
# ncu counters for a few configurations the model misses (see benchmarks/ncu_configs.py).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
M=$(python3 -c "from perfmodel.measure.ncu import METRICS; print(METRICS)")
X=""
if [ "${1:-}" = capped ] || [ "${1:-}" = localarrays ]; then  # the local-memory metrics this ncu knows (a name it does not know fails the run)
  for m in l1tex__t_sectors_pipe_lsu_mem_local_op_ld l1tex__t_sectors_pipe_lsu_mem_local_op_st \
           l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_hit l1tex__t_requests_pipe_lsu_mem_local_op_ld \
           smsp__inst_executed_op_local_ld smsp__inst_executed_op_local_st; do
    ncu --query-metrics 2>/dev/null | grep -q "^$m " && X="$X,$m.sum"
  done
fi
[ "${1:-}" = depth ] && X=",sm__cycles_active.avg,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_read.sum"
[ "${1:-}" = scalar ] && X=",l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__data_pipe_lsu_wavefronts.sum"
ncu --clock-control none --target-processes all -k regex:sgemm --metrics "$M,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active$X" \
    --csv --page raw python3 benchmarks/ncu_configs.py "$@" > "$OUT/ncu_configs.csv" 2> "$OUT/ncu_configs.err"
tail -2 "$OUT/ncu_configs.err"
