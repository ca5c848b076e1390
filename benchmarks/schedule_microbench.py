"""Check the scheduler simulation (model.schedule) against calibrate's shared-memory-fed outer products,
measurements it was not built from (CPU; nvcc and nvdisasm). Each loop's SASS is simulated with the
calibration's FFMA-only rate at the same warps (8x8 or 16x8), the device's shared-memory latency and the
wavefronts per LDS.128 of the kernel's address pattern (microbench.cu: A reads 2 wavefronts, B reads
4 x spread), and compared with the measured smem-fed rate.
    PYTHONPATH=. python3 benchmarks/schedule_microbench.py [CALIBRATION.toml]"""
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from perfmodel.devices import attach_calibration, load_device
from perfmodel.model.figures import Figures
from perfmodel.measure import build, sass
from perfmodel.model.schedule import simulate

ROOT = Path(__file__).resolve().parent.parent
CAL = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "results" / "reference-calibration-h100-sxm.toml")
m = tomllib.loads(Path(CAL).read_text())["measured"]
dev = Figures(attach_calibration(load_device("h100-sxm"), CAL), calibrated=True).effective
peak = dev.peak_fp32_GFLOPS(m["sm_clock_MHz"])
lat = dev.latency

with tempfile.TemporaryDirectory() as tmp:
    cubin = Path(tmp) / "mb.cubin"
    subprocess.run([build.find_nvcc(), "-cubin", "-O3", "-arch=sm_90", "-o", str(cubin),
                    str(ROOT / "perfmodel" / "measure" / "microbench.cu")], check=True)
    listing = subprocess.run([sass.find_nvdisasm(), str(cubin)], capture_output=True, text=True, check=True).stdout
funcs = {}
for part in re.split(r"\n(?=\s*\.text\.)", listing):
    mm = re.match(r"\s*\.text\.(\w+):", part)
    if mm:
        funcs[mm.group(1)] = part

cases = [("ffma_outer_smem", 1, m["ffma_outer_GFLOPS_by_warps_per_sm"], m["smem_outer_GFLOPS_by_warps_per_sm"], (2 * 2 + 2 * 4) / 4),
         ("ffma_outer_smem_16x8", 1, m["ffma_outer_16x8_GFLOPS_by_warps_per_sm"], m["smem_outer_16x8_GFLOPS_by_warps_per_sm"],
          (4 * 2 + 2 * 4) / 6)]
for sb, table in sorted(m["smem_outer_GFLOPS_by_spread"].items()):
    cases.append((f"ffma_outer_smem_sb", int(sb), m["ffma_outer_GFLOPS_by_warps_per_sm"], table, (2 * 2 + 2 * 4 * int(sb)) / 4))
print(f"calibration {Path(CAL).name}; smem latency {lat.smem_latency_cycles} cycles, peak {peak:,.0f} GFLOPS\n")
print("| loop | spread | warps/SM | FFMA-only rate | simulated | measured | error |")
print("|---|---|---|---|---|---|---|")
errs = []
for fn, sb, ffma_only, measured, wf in cases:
    prog = sass.loop_program(funcs[fn])
    nf = prog["cls"].count("F")
    for w, meas in sorted(measured.items(), key=lambda t: int(t[0])):
        if w not in ffma_only:
            continue
        W = int(w) // 4
        cyc = simulate(prog, W, 1, peak / ffma_only[w], lat.smem_latency_cycles, lat.l1_latency_cycles,
                       lat.fma_latency_cycles, wf, 1.0, 4.0)
        g = 4 * W * 32 * nf * 2 / cyc * dev.compute.sm_count * m["sm_clock_MHz"] * 1e-3
        errs.append(100 * (g / meas - 1))
        print(f"| {fn} | {sb} | {w} | {ffma_only[w]:,.0f} | {g:,.0f} | {meas:,.0f} | {errs[-1]:+.1f} % |")
print(f"\n{len(errs)} points: mean |error| {sum(abs(e) for e in errs) / len(errs):.1f} %, range {min(errs):+.1f} ... {max(errs):+.1f} %")
