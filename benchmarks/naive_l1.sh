#!/usr/bin/env bash
# benchmarks/naive_l1.py [KERNEL] (default naive) under Nsight Compute: L1 requests, sectors, hits and data-stage wavefronts of the
# global loads, L2 sectors and the duration, per K; then the host-timed speeds. Writes $OUT/KERNEL_l1.csv,
# and $OUT/KERNEL_l1_time.md.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
KERNEL=${1:-naive}
M="l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
M="$M,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,l1tex__data_pipe_lsu_wavefronts_mem_lgds_cmd_read.sum"
M="$M,regex:smsp__average_warps_issue_stalled_(long_scoreboard|mio_throttle|lg_throttle|wait|not_selected|selected|no_instruction|math_pipe_throttle|dispatch_stall|short_scoreboard)_per_issue_active\\.ratio,lts__t_sectors_srcunit_tex_op_read.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__inst_executed.sum,l1tex__t_sectors.sum.peak_sustained,l1tex__data_pipe_lsu_wavefronts.sum.peak_sustained"
ncu --clock-control none --target-processes all -k regex:sgemm --metrics "$M" --csv --page raw \
    python3 benchmarks/naive_l1.py launch "$KERNEL" > "$OUT/${KERNEL}_l1.csv" 2> "$OUT/${KERNEL}_l1.err"
tail -2 "$OUT/${KERNEL}_l1.err"
python3 benchmarks/naive_l1.py time "$KERNEL" | tee "$OUT/${KERNEL}_l1_time.md"
python3 - "$OUT/${KERNEL}_l1.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
h = rows[hdr]; data = [r for r in rows[hdr + 2:] if len(r) == len(h)]
cols = [c for c in h if c.startswith(("l1tex", "lts", "gpu__", "sm__cycles", "smsp")) and not c.endswith((".avg", ".max", ".min")) and "peak" not in c]
print("| launch | " + " | ".join(c.replace("_pipe_lsu_mem_global_op_ld", "_ld").replace(".sum", "") for c in cols) + " |")
for i, r in enumerate(data):
    print(f"| {i} | " + " | ".join(r[h.index(c)] for c in cols) + " |")
PY
