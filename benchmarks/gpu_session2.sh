#!/usr/bin/env bash
# Full validate + calibrate + ncu counters of the ladder at 4096. Repo root on the GPU machine:
#   source .devwheels/install.sh && bash benchmarks/gpu_session2.sh
set -uo pipefail
export PYTHONUNBUFFERED=1 PERFMODEL_CACHE=/tmp/perfmodel-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m perfmodel calibrate 2>&1 | tee "$OUT/calibrate.log"
python3 -m perfmodel validate 2>&1 | tee "$OUT/validate.log"
NCU="ncu --clock-control none --target-processes all -k regex:sgemm"
$NCU --section SpeedOfLight --section WarpStateStats --section InstructionStats --section Occupancy \
     --section SchedulerStats --section MemoryWorkloadAnalysis --csv --page details python3 benchmarks/ncu_ladder.py 4096 \
     > "$OUT/ncu_details.csv" 2> "$OUT/ncu_details.err"
$NCU --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__inst_executed.sum,dram__bytes_read.sum,lts__t_bytes.sum,sm__cycles_elapsed.avg,gpu__time_duration.sum' \
     --csv --page raw python3 benchmarks/ncu_ladder.py 4096 > "$OUT/ncu_raw.csv" 2> "$OUT/ncu_raw.err"
tail -3 "$OUT/ncu_details.err" "$OUT/ncu_raw.err"
wc -l "$OUT"/ncu_*.csv
tar czf "$OUT/results.tar.gz" results/
