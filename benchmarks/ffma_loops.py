"""The 8x8 outer product of calibrate's ffma_outer (benchmarks/ffma/loops.cu) with its 64-FFMA body
unrolled 1, 2, 4 or 8 times per backward branch, with and without the loop-carried update of x, with
y folded into immediates (as calibrate's) or in registers (`_reg`: three register operands): the
FFMA rate by resident warps per SM (4 = one warp per scheduler). What a lone warp loses per loop
iteration shows as a rate that grows with the unrolling at 4 warps.

  python3 benchmarks/ffma_loops.py measure         # GPU: GFLOPS per loop and warps/SM, 5 interleaved rounds
  python3 benchmarks/ffma_loops.py simulate FILE   # CPU (nvcc, nvdisasm): the same loops' SASS replayed
                                                   # by model.schedule with one issue cycle per FFMA, beside
                                                   # the measurement FILE wrote by `measure`
  python3 benchmarks/ffma_loops.py slack FILE      # CPU: measured / replayed with the register-bank term at
                                                   # bank slacks of 0-4 clocks and none, at 8-24 warps per SM
"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from perfmodel.measure import build, sass

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "benchmarks" / "ffma" / "loops.cu"
LOOPS = ["outer_u1_dep", "outer_u2_dep", "outer_u4_dep", "outer_u8_dep", "outer_u1_free", "outer_u2_free", "outer_u4_free",
         "outer_u1_dep_reg", "outer_u2_dep_reg", "outer_u4_dep_reg", "outer_u1_free_reg", "outer_u2_free_reg", "outer_u4_free_reg"]
WARPS = [4, 8, 16, 24]
ROUNDS = 5


def measure() -> int:
    from perfmodel.measure.gpu import Gpu

    gpu = Gpu()
    drv = gpu.drv
    cubin = gpu.compiler.compile(SRC.read_text(), options=["-O3"], arch=gpu.arch, no_extern_c=True)
    mod = drv.module_from_buffer(cubin)
    f = {n: mod.get_function(n) for n in LOOPS}
    sms = gpu.sm_count
    out = drv.mem_alloc(4)
    iters = 4096
    s, e = drv.Event(), drv.Event()
    res = {n: {w: [] for w in WARPS} for n in LOOPS}
    for _ in range(ROUNDS):
        for n in LOOPS:
            for w in WARPS:
                if w // 4 > gpu.blocks_per_sm(cubin, n, 128):
                    continue
                run = lambda: f[n](out, np.int32(iters), block=(128, 1, 1), grid=(sms * (w // 4), 1))  # noqa: E731
                run()
                gpu.sync()
                s.record()
                run()
                e.record()
                e.synchronize()
                t = e.time_since(s) * 1e-3
                res[n][w].append(sms * (w // 4) * 128 * iters * 64 * 2 / t * 1e-9)
    table = {n: {str(w): float(np.median(v)) for w, v in ws.items() if v} for n, ws in res.items()}
    spread = {n: {str(w): float((max(v) - min(v)) / np.median(v) * 100) for w, v in ws.items() if v} for n, ws in res.items()}
    print(json.dumps(dict(gpu=gpu.name, sm_count=sms, gflops=table, spread_pct=spread), indent=1))
    return 0


def _programs(src: Path = SRC):
    """{loop: loop program} of the kernels in `src` (default benchmarks/ffma/loops.cu) built here for sm_90."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "loops.cubin"
        subprocess.run([build.find_nvcc(), "-cubin", "-O3", "-arch=sm_90", "-o", str(cubin), str(src)], check=True)
        listing = subprocess.run([sass.find_nvdisasm(), *sass.DISASM_ARGS, str(cubin)], capture_output=True, text=True,
                                 check=True).stdout
    out = {}
    for part in re.split(r"\n(?=\s*\.text\.)", listing):
        mm = re.match(r"\s*\.text\.(\w+):", part)
        if mm:
            out[mm.group(1)] = sass.loop_program(part)
    return out


def slack(path: str) -> int:
    from perfmodel.devices import load_device
    from perfmodel.model import schedule

    m = json.loads(Path(path).read_text())
    dev = load_device("h100-sxm")
    lat = dev.latency
    peak = dev.peak_fp32_GFLOPS(dev.compute.sm_clock_boost_MHz)
    progs = _programs()
    print("measured / replayed with the register-bank term, over the loops and 8-24 warps per SM (min-max, median)\n")
    print("| slack (clocks) | two-register loops | three-register loops (`_reg`) | calibrate's loop |")
    print("|---|---|---|---|")
    for sl in (0.0, 1.0, 2.0, 3.0, 4.0, 1e9):
        schedule.BANK_SLACK = sl
        ratio = {}
        for n, ws in m["gflops"].items():
            product = 64 * int(re.search(r"_u(\d+)_", n).group(1))
            for w, g in ws.items():
                if int(w) < 8:
                    continue
                W = int(w) // 4
                cyc = schedule.simulate(progs[n], W, 1, 1.0, lat.smem_latency_cycles, lat.l1_latency_cycles,
                                        lat.fma_latency_cycles, 1.0, 1.0, 4.0, banks=2)
                gs = 4 * W * 32 * product * 2 / cyc * dev.compute.sm_count * dev.compute.sm_clock_boost_MHz * 1e-3
                ratio[(n, w)] = g / gs
        cols = []
        for sel in (lambda n: "_reg" not in n, lambda n: "_reg" in n, lambda n: n == "outer_u2_dep"):
            v = [r for (n, _), r in ratio.items() if sel(n)]
            cols.append(f"{min(v):.3f}-{max(v):.3f} ({float(np.median(v)):.3f})" if v else "")
        print(f"| {'unbounded (the term never holds issue)' if sl > 1e6 else f'{sl:.0f}'} | " + " | ".join(cols) + " |")
    return 0


def simulate(path: str) -> int:
    from perfmodel.devices import load_device
    from perfmodel.model.schedule import simulate as sim

    m = json.loads(Path(path).read_text())
    loops = [n for n in LOOPS if n in m["gflops"]]
    dev = load_device("h100-sxm")
    peak = dev.peak_fp32_GFLOPS(dev.compute.sm_clock_boost_MHz)
    progs = _programs()
    lat = dev.latency
    print(f"{m['gpu']}; % of the datasheet peak ({peak:,.0f} GFLOPS at {dev.compute.sm_clock_boost_MHz:.0f} MHz); "
          f"simulated: model.schedule with one issue cycle per FFMA and the control codes' stall counts; both count "
          f"the product's 64 FFMAs per pass, not the x updates\n")
    print("| loop | instructions (FFMA) | stall-count cycles | warps/SM | measured | spread | simulated | with register banks |")
    print("|---|---|---|---|---|---|---|---|")
    for n in loops:
        prog = progs[n]
        nf = prog["cls"].count("F")
        product = 64 * int(re.search(r"_u(\d+)_", n).group(1))  # the product's FFMAs per pass, as measured
        for w, g in m["gflops"][n].items():
            W = int(w) // 4
            args = (prog, W, 1, 1.0, lat.smem_latency_cycles, lat.l1_latency_cycles, lat.fma_latency_cycles, 1.0, 1.0, 4.0)
            gs = [4 * W * 32 * product * 2 / sim(*args, banks=b) * dev.compute.sm_count * dev.compute.sm_clock_boost_MHz * 1e-3
                  for b in (0, dev.compute.register_banks or 0)]
            print(f"| {n} | {len(prog['cls'])} ({nf}) | {sum(prog['stall'])} | {w} | {100 * g / peak:.1f} % | "
                  f"{m['spread_pct'][n][w]:.1f} % | {100 * gs[0] / peak:.1f} % | {100 * gs[1] / peak:.1f} % |")
    return 0


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "measure"
    sys.exit(measure() if mode == "measure" else slack(sys.argv[2]) if mode == "slack" else simulate(sys.argv[2]))
