"""`perfmodel validate --ncu`: hardware counters of the ladder at 4096 through Nsight Compute.

Runs `ncu` on a child process that launches each ladder kernel once (this module's __main__),
keeps the raw CSV, and summarises per kernel: warp instructions, FFMA thread instructions, DRAM
and L2 bytes, shared-memory wavefronts, and the warp stall reasons per issued instruction."""
from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

from ..catalogue import KernelConfig, ladder_on
from .gpu import Gpu, Problem

METRICS = ",".join([
    "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio",
    "smsp__inst_executed.sum", "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "sm__cycles_elapsed.avg", "gpu__time_duration.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
])


def run_ncu(out_dir: Path, size: int = 4096) -> dict | None:
    ncu = shutil.which("ncu") or ("/usr/local/cuda/bin/ncu" if Path("/usr/local/cuda/bin/ncu").exists() else None)
    if ncu is None:
        print("warning: ncu not found; --ncu skipped", file=sys.stderr)
        return None
    cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "-k", "regex:sgemm", "--metrics", METRICS,
           "--csv", "--page", "raw", sys.executable, "-m", "perfmodel.measure.ncu", str(size)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    (out_dir / "ncu_raw.csv").write_text(r.stdout)
    if r.returncode != 0:
        print(f"warning: ncu failed: {r.stderr.strip()[-400:]}", file=sys.stderr)
        return None
    summary = parse_ncu(r.stdout)
    (out_dir / "ncu.json").write_text(json.dumps(dict(size=size, kernels=summary), indent=1))
    return summary


def parse_ncu(text: str) -> dict:
    """ncu --csv --page raw output (mixed with the child's 'kernel NAME' lines) -> {kernel: {metric: value}}."""
    lines = [ln for ln in text.splitlines(keepends=True) if ln.startswith('"')]
    order = [ln.split()[1] for ln in text.splitlines() if ln.startswith("kernel ")]
    rows = list(csv.reader(io.StringIO("".join(lines))))
    if len(rows) < 3:
        return {}
    hdr, body = rows[0], rows[2:]
    summary = {}
    for name, row in zip(order, body):
        vals = {}
        for h, v in zip(hdr, row):
            try:
                vals[h] = float(v.replace(",", ""))
            except ValueError:
                continue
        summary[name] = vals
    return summary


if __name__ == "__main__":  # the profiled child: each ladder kernel once at SIZE^3
    S = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    gpu = Gpu()
    prob = Problem(gpu, S, S, S)
    for k in ladder_on(gpu.cc):
        cfg = KernelConfig.make(k)
        fn = gpu.function(cfg)
        print(f"kernel {k}", flush=True)
        gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, S, S, S)()
        gpu.sync()
