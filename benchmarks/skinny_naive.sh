#!/usr/bin/env bash
# benchmarks/skinny_naive.py under Nsight Compute: for each kernel and shape the duration, active warps,
# the issue stalls per instruction, the L1 requests, sectors and hits of the global loads and the L2
# sectors they read (arguments go to the launch mode, e.g. --n 4096). Writes $OUT/skinny_naive_ncu.csv and prints a table.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
M="gpu__time_duration.sum,sm__cycles_elapsed.max,sm__warps_active.avg.per_cycle_active,smsp__inst_executed.sum"
M="$M,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
M="$M,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum"
M="$M,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"
M="$M,l1tex__m_xbar2l1tex_read_sectors.sum,l1tex__m_l1tex2xbar_req.sum"
M="$M,regex:smsp__average_warps_issue_stalled_(long_scoreboard|lg_throttle|mio_throttle|drain|membar|wait|not_selected|selected|no_instruction|short_scoreboard|imc_miss|branch_resolving|dispatch_stall)_per_issue_active\\.ratio"
ncu --clock-control none --target-processes all -k regex:sgemm --metrics "$M" --csv --page raw \
    python3 benchmarks/skinny_naive.py launch "$@" > "$OUT/skinny_naive_ncu.csv" 2> "$OUT/skinny_naive_ncu.err"
tail -3 "$OUT/skinny_naive_ncu.err"
python3 - "$OUT/skinny_naive_ncu.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
h = rows[hdr]; data = [r for r in rows[hdr + 2:] if len(r) == len(h)]
cols = [c for c in h if c.startswith(("l1tex", "lts", "gpu__", "sm__", "smsp")) and "peak" not in c]
short = lambda c: (c.replace("_pipe_lsu_mem_global_op_ld", "_ld").replace("smsp__average_warps_issue_stalled_", "st_")
                   .replace("_per_issue_active.ratio", "").replace(".sum", "").replace("srcunit_tex_op_", ""))
print("| launch | grid | " + " | ".join(short(c) for c in cols) + " |")
for i, r in enumerate(data):
    print(f"| {i} | {r[h.index('Grid Size')] if 'Grid Size' in h else ''} | " + " | ".join(r[h.index(c)] for c in cols) + " |")
PY
