"""Where a kernel's local loads (spilled registers, local arrays) are served: Nsight Compute's L1 sector
hits of the local loads, beside the kernel time, the carveout the driver chose, the cp.async copies and
the stalls on long-scoreboard (L1TEX results) and instruction fetch, for configurations given as
`kernel:key=value,...` at one or more problem sizes (GPU machine; the raw CSV of each size under OUT).

    python3 benchmarks/ncu_local_hits.py OUT --mnk 4096,4096,4096 --mnk 4096,4096,4093 SPEC [SPEC ...]

The child mode of benchmarks/ncu_choices.py launches each configuration once; ncu profiles it."""
import argparse
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from ncu_choices import _mnk, _spec  # noqa: E402
from perfmodel.measure.ncu import parse_ncu  # noqa: E402

METRICS = [
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_hit.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", "smsp__inst_executed_op_local_ld.sum",
    "smsp__inst_executed_op_ldgsts.sum", "smsp__inst_executed.sum", "gpu__time_duration.sum",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio",
    "launch__shared_mem_config_size", "launch__registers_per_thread", "launch__occupancy_limit_registers",
]


def table(text: str, specs) -> list[dict]:
    """One row per configuration of an ncu --csv --page raw output (measure.ncu.parse_ncu), in launch order:
    time, registers, carveout, the local loads' sectors and L1 hit share, local loads per cp.async copy (nan
    without copies) and the two stalls."""
    out = []
    for spec, d in zip(specs, parse_ncu(text).values()):
        ld, hit = d["l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"], d["l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_hit.sum"]
        copies = d["smsp__inst_executed_op_ldgsts.sum"]
        out.append(dict(spec=spec, us=d["gpu__time_duration.sum"] / 1e3, registers=int(d["launch__registers_per_thread"]),
                        carveout=int(d["launch__shared_mem_config_size"]), local_sectors=ld,
                        l1_hit=hit / ld if ld else float("nan"),
                        local_per_copy=d["smsp__inst_executed_op_local_ld.sum"] / copies if copies > 0 else float("nan"),
                        long_scoreboard=d["smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"],
                        no_instruction=d["smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio"]))
    return out


def main(out: Path, sizes, specs) -> int:
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    child = Path(__file__).resolve().parent / "ncu_choices.py"
    out.mkdir(parents=True, exist_ok=True)
    print("| M x N x K | configuration | us | registers | carveout (B) | local load sectors | L1 hits | local loads per cp.async copy | long-scoreboard | no-instruction |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m, n, k in sizes:
        cmd = [ncu, "--clock-control", "none", "-k", "regex:sgemm", "--metrics", ",".join(METRICS), "--csv", "--page", "raw",
               sys.executable, str(child), "--child", f"{m},{n},{k}", *specs]
        r = subprocess.run(cmd, capture_output=True, text=True)
        (out / f"ncu-local-hits-{m}x{n}x{k}.csv").write_text(r.stdout)
        if r.returncode != 0:
            print(r.stderr[-2000:], file=sys.stderr)
            return 1
        for t in table(r.stdout, specs):
            print(f"| {m}x{n}x{k} | {t['spec']} | {t['us']:,.0f} | {t['registers']} | {t['carveout']} | {t['local_sectors']:,.0f} | "
                  f"{100 * t['l1_hit']:.1f} % | {t['local_per_copy']:.2f} | {t['long_scoreboard']:.2f} | {t['no_instruction']:.2f} |")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Where local loads are served (Nsight Compute; GPU machine).")
    ap.add_argument("out", type=Path, help="folder for the raw CSV of each size")
    ap.add_argument("--mnk", type=_mnk, action="append", required=True, help="M,N,K (repeat for several sizes)")
    ap.add_argument("specs", nargs="+", type=_spec, metavar="SPEC", help="kernel:key=value,...")
    a = ap.parse_args()
    sys.exit(main(a.out, a.mnk, a.specs))
