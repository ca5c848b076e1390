"""Hardware counters (Nsight Compute) of design-choice variants at 4096: shared-memory instructions,
wavefronts and bank conflicts, and the warp stall reasons per issued instruction, for configurations
given as `kernel:key=value,...` (GPU machine; writes the raw CSV and a JSON summary under OUT).

    python3 benchmarks/ncu_choices.py OUT double_buffer: double_buffer:a_transposed=no,frag_width=1 ...
    python3 benchmarks/ncu_choices.py --size 1000 OUT SPEC ...   (M = N = K = 1000; default 4096)
    python3 benchmarks/ncu_choices.py --mnk 8192,8192,64 OUT SPEC ...   (M, N and K apart)
    python3 benchmarks/ncu_choices.py --global-loads OUT SPEC ...   (+ the L1's global-load counters:
        requests, sectors, hits, tag-stage and data-stage wavefronts, bank conflicts; those this ncu knows)
    python3 benchmarks/ncu_choices.py --local OUT SPEC ...   (+ local-memory bytes and where they hit: L1, L2,
        and the DRAM's reads and writes)
The child mode (`--child`) launches each configuration once; ncu profiles it."""
import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

METRICS = ",".join([
    "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio",
    "smsp__inst_executed.sum", "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "sm__cycles_elapsed.avg", "gpu__time_duration.sum", "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.pct_of_peak_sustained_active", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.sum", "sm__cycles_active.avg", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
])

# how the warps and the issued instructions divide among an SM's schedulers, and the DRAM's reads (always asked;
# names this ncu does not know are dropped)
SCHEDULERS = [
    "smsp__warps_launched.sum", "smsp__warps_launched.max", "smsp__warps_launched.min",
    "smsp__inst_executed.max", "smsp__inst_executed.avg", "smsp__issue_active.max", "smsp__issue_active.avg",
    "dram__bytes_read.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
]

# the L1 tag and data stages' work for global loads (--global-loads); names this ncu does not know are dropped
GLOBAL_LOADS = [
    "smsp__inst_executed_op_global_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_lg_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__m_xbar2l1tex_read_sectors_mem_lg_op_ld.sum", "l1tex__f_wavefronts.sum", "l1tex__lsuin_requests.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_requests_srcunit_tex_op_read.sum",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "smsp__inst_executed_op_ldgsts.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum", "l1tex__m_xbar2l1tex_read_sectors_mem_global_op_ldgsts.sum",
]


# local memory (spills, local arrays): the L1's bytes and hits, what the L2 sees from the SMs, the DRAM (--local)
LOCAL = [
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_hit.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", "l1tex__t_sectors_pipe_lsu_mem_local_op_st_lookup_hit.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
    "lts__t_sectors_srcunit_tex_aperture_device_op_read_lookup_miss.sum",
    "dram__bytes_read.sum", "dram__bytes_write.sum", "smsp__inst_executed_op_local_ld.sum", "smsp__inst_executed_op_local_st.sum",
]


def known_metrics(ncu: str, names: list[str]) -> list[str]:
    """The names (metric.rollup) whose metric this ncu lists (--query-metrics); an unknown name fails a run."""
    r = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True)
    have = {ln.split()[0] for ln in r.stdout.splitlines() if ln.strip()}
    return [n for n in names if n.split(".", 1)[0] in have]


def parse(spec: str):
    from perfmodel.catalogue import KernelConfig

    kernel, _, rest = spec.partition(":")
    kw = {}
    for kv in filter(None, rest.split(",")):
        k, v = kv.split("=")
        kw[k] = int(v) if v.isdigit() else v
    return KernelConfig.make(kernel, **kw)


def child(mnk: tuple[int, int, int], specs: list[str], launches: int = 1) -> None:
    """Each configuration launched `launches` times in a row on the same A, B and C (ncu_stall_pcs --warm
    profiles the second, which finds A and B where the first left them)."""
    from perfmodel.measure.gpu import Gpu, Problem

    gpu = Gpu()
    M, N, K = mnk
    prob = Problem(gpu, M, N, K)
    for s in specs:
        cfg = parse(s)
        fn = gpu.function(cfg)
        print(f"kernel {cfg.label()}", flush=True)
        run = gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, M, N, K)
        for _ in range(launches):
            run()
        gpu.sync()


def top_stalls(v: dict, n: int) -> list[tuple[str, float]]:
    """The n largest warp stall reasons of one kernel's ncu summary: (reason, cycles per issued instruction)."""
    return sorted(((k.split("issue_stalled_")[1].split("_per")[0], x) for k, x in v.items() if "issue_stalled" in k),
                  key=lambda t: -t[1])[:n]


def local_device():
    """The shipped device file of this machine's GPU 0 (None where it is not a shipped device)."""
    import pycuda.driver as drv

    from perfmodel.devices import load_device
    from perfmodel.measure.detect import match_shipped

    drv.init()
    d = drv.Device(0)
    name = match_shipped(d.name(), "{}.{}".format(*d.compute_capability()))
    return None if name is None else load_device(name)


def misfits(specs: list[str], device) -> list[str]:
    """What keeps each configuration off the device (KernelConfig.device_violations: static shared memory,
    threads, registers), found before ncu compiles anything; nothing without a device file."""
    out = []
    for s in specs if device is not None else []:
        problems = parse(s).device_violations(device)
        if problems:
            out.append(f"{s}: does not fit {device.name}: " + "; ".join(m for _, m in problems))
    return out


def main(out: Path, specs: list[str], mnk: tuple[int, int, int] = (4096, 4096, 4096), global_loads: bool = False,
         local: bool = False) -> int:
    from perfmodel.measure.ncu import parse_ncu

    bad = misfits(specs, local_device())
    if bad:
        print("error: " + bad[0] + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""), file=sys.stderr)
        return 2
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    metrics = METRICS + "," + ",".join(known_metrics(ncu, SCHEDULERS + (GLOBAL_LOADS if global_loads else [])
                                                           + (LOCAL if local else [])))
    cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "-k", "regex:sgemm", "--metrics", metrics,
           "--csv", "--page", "raw", sys.executable, __file__, "--child", ",".join(map(str, mnk)), *specs]
    r = subprocess.run(cmd, capture_output=True, text=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ncu_choices_raw.csv").write_text(r.stdout)
    if r.returncode != 0:
        print(r.stderr[-2000:])
        return 1
    summary = parse_ncu(r.stdout)
    (out / "ncu_choices.json").write_text(json.dumps(dict(M=mnk[0], N=mnk[1], K=mnk[2], kernels=summary), indent=1))
    for name, v in summary.items():
        stalls = top_stalls(v, 5)
        print(f"{name}\n  inst {v.get('smsp__inst_executed.sum', 0):.3g} lds {v.get('smsp__inst_executed_op_shared_ld.sum', 0):.3g} "
              f"ldsWF {v.get('l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum', 0):.3g} "
              f"ldsBC {v.get('l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum', 0):.3g} "
              f"sts {v.get('smsp__inst_executed_op_shared_st.sum', 0):.3g} stsWF {v.get('l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum', 0):.3g} "
              f"stsBC {v.get('l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum', 0):.3g} "
              f"us {v.get('gpu__time_duration.sum', 0) / 1e3:.0f} issue% {v.get('smsp__issue_active.avg.pct_of_peak_sustained_active', 0):.1f} "
              f"fma% {v.get('sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active', 0):.1f}\n  stalls " +
              " ".join(f"{k}={x:.2f}" for k, x in stalls))
        if global_loads:
            g = v.get("smsp__inst_executed_op_global_ld.sum", 0) or float("nan")
            print("  per global load instruction: " + " ".join(
                f"{m.split('__', 1)[1].rsplit('.', 1)[0]}={v[m] / g:.2f}" for m in GLOBAL_LOADS[1:] if m in v and "pct" not in m))
        if local:
            print("  " + " ".join(f"{m.split('__', 1)[1].rsplit('.', 1)[0]}={v[m]:.4g}" for m in LOCAL if m in v))
    return 0


def _mnk(text: str) -> tuple[int, int, int]:
    try:
        m, n, k = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not M,N,K (three positive integers)")
    if min(m, n, k) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: M, N and K must be at least 1")
    return m, n, k


def _spec(text: str) -> str:
    try:
        parse(text)
    except Exception as e:  # the catalogue names what is wrong with the configuration
        raise argparse.ArgumentTypeError(f"{text!r}: {e}")
    return text


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] in ("--child", "--child-twice"):
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        child(_mnk(sys.argv[2]), sys.argv[3:], launches=2 if sys.argv[1] == "--child-twice" else 1)
        sys.exit(0)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    ap = argparse.ArgumentParser(description="Nsight Compute counters of catalogue configurations (GPU machine).")
    ap.add_argument("out", type=Path, help="folder for the raw CSV and the JSON summary")
    ap.add_argument("specs", nargs="+", type=_spec, metavar="SPEC", help="kernel:key=value,... (e.g. tiled_2d: or double_buffer:bm=128,bn=256,bk=16,tm=16)")
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--size", type=int, help="M = N = K (default 4096)")
    size.add_argument("--mnk", type=_mnk, help="M,N,K")
    ap.add_argument("--global-loads", action="store_true", help="also the L1's global-load counters (tag and data stages)")
    ap.add_argument("--local", action="store_true", help="also local-memory bytes, their L1 and L2 hits, and the DRAM's traffic")
    a = ap.parse_args()
    if a.size is not None and a.size < 1:
        ap.error(f"--size {a.size}: must be at least 1")
    mnk = a.mnk or ((a.size,) * 3 if a.size else (4096, 4096, 4096))
    sys.exit(main(a.out, a.specs, mnk, a.global_loads, a.local))
