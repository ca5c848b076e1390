"""The SM clock under an FFMA-bound load (GPU machine): calibrate's outer-product loop (and its variant
with three register operands per FFMA) on every SM at 4, 8 and 16 warps per SM, each block timing its
loop by the SM's cycle counter and by the GPU's nanosecond timer (benchmarks/ffma/clock.cu); cycles / ns
is the clock the SM ran at. Launches of about 100 ms, back to back for about 3 s per loop and warp count
(the board warms), and the GFLOPS the same launches reach by event timing, beside nvidia-smi's clock
and power sampled during the run.

    python3 benchmarks/ffma_clock.py OUT.json            # GPU
    python3 benchmarks/ffma_clock.py --table OUT.json    # CPU: the table again
    python3 benchmarks/ffma_clock.py --replay OUT.json   # CPU (nvcc, nvdisasm): each loop's measured rate (the
                                                         # median launch after the first) beside its SASS replayed
                                                         # by model.schedule, as benchmarks/ffma_loops.py simulate
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

SRC = Path(__file__).resolve().parent / "ffma" / "clock.cu"
LOOPS = ("outer_clock_imm", "outer_clock_reg")
WARPS = (4, 8, 16)
SECONDS = 3.0


def main(out: Path) -> int:
    from perfmodel.measure.gpu import Gpu

    gpu = Gpu()
    drv = gpu.drv
    cubin = gpu.compiler.compile(SRC.read_text(), options=["-O3"], arch=gpu.arch, no_extern_c=True)
    mod = drv.module_from_buffer(cubin)
    sms = gpu.sm_count
    sink = drv.mem_alloc(4)
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw", "--format=csv,noheader",
                            "-lms", "100"], stdout=subprocess.PIPE, text=True)
    res = {}
    s, e = drv.Event(), drv.Event()
    for name in LOOPS:
        fn = mod.get_function(name)
        for w in WARPS:
            blocks = sms * (w // 4)
            rec = drv.mem_alloc(16 * blocks)
            iters = 2048
            fn(sink, rec, np.int32(iters), block=(128, 1, 1), grid=(blocks, 1))
            gpu.sync()
            s.record()
            fn(sink, rec, np.int32(iters), block=(128, 1, 1), grid=(blocks, 1))
            e.record()
            e.synchronize()
            iters = int(iters * 0.1 / (e.time_since(s) * 1e-3)) // 2 * 2  # about 100 ms a launch
            launches = []
            t_start = drv.Event()
            t_start.record()
            while True:
                s.record()
                fn(sink, rec, np.int32(iters), block=(128, 1, 1), grid=(blocks, 1))
                e.record()
                e.synchronize()
                r = np.zeros(2 * blocks, np.int64)
                drv.memcpy_dtoh(r, rec)
                cyc, ns = r[0::2].astype(float), r[1::2].astype(float)
                t = e.time_since(s) * 1e-3
                launches.append(dict(clock_MHz=float(np.median(cyc / ns * 1e3)), clock_MHz_min=float(np.min(cyc / ns * 1e3)),
                                     clock_MHz_max=float(np.max(cyc / ns * 1e3)),
                                     GFLOPS=blocks * 128 * iters * 64 * 2 / t * 1e-9, seconds=t))
                if e.time_since(t_start) * 1e-3 > SECONDS:
                    break
            res[f"{name}|{w}"] = dict(iters=iters, launches=launches)
            rec.free()
    smi.terminate()
    samples = [ln.strip() for ln in smi.communicate()[0].splitlines() if ln.strip()]
    out.write_text(json.dumps(dict(gpu=gpu.name, sm_count=sms, loops=res, nvidia_smi=samples), indent=1))
    print(table(json.loads(out.read_text())))
    return 0


def table(data: dict) -> str:
    rows = [f"{data['gpu']}, {data['sm_count']} SMs",
            "| loop | warps/SM | launches | SM clock, first launch (MHz) | SM clock, median of the rest (min-max over blocks) | GFLOPS (events), median |",
            "|---|---|---|---|---|---|"]
    for key, v in data["loops"].items():
        name, w = key.split("|")
        ls = v["launches"]
        rest = ls[1:] or ls
        rows.append(f"| {name} | {w} | {len(ls)} | {ls[0]['clock_MHz']:.0f} | {np.median([x['clock_MHz'] for x in rest]):.0f} "
                    f"({min(x['clock_MHz_min'] for x in rest):.0f}-{max(x['clock_MHz_max'] for x in rest):.0f}) | "
                    f"{np.median([x['GFLOPS'] for x in rest]):,.0f} |")
    clocks = [float(x.split(",")[1].split()[0]) for x in data["nvidia_smi"] if "MHz" in x]
    power = [float(x.split(",")[2].split()[0]) for x in data["nvidia_smi"] if " W" in x]
    if clocks:
        rows.append(f"nvidia-smi during the run: SM clock {min(clocks):.0f}-{max(clocks):.0f} MHz (median {np.median(clocks):.0f}), "
                    f"power {min(power):.0f}-{max(power):.0f} W (median {np.median(power):.0f}), {len(clocks)} samples")
    return "\n".join(rows)


def replay(data: dict) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ffma_loops import _programs
    from perfmodel.devices import load_device
    from perfmodel.model.schedule import simulate

    dev = load_device("h100-sxm")
    lat, mhz = dev.latency, dev.compute.sm_clock_boost_MHz
    peak = dev.peak_fp32_GFLOPS(mhz)
    progs = _programs(SRC)
    rows = [f"{data['gpu']}; % of the datasheet peak ({peak:,.0f} GFLOPS at {mhz:.0f} MHz); replayed: model.schedule at one "
            "issue cycle per FFMA with the control codes' stall counts, without and with the register-bank term",
            "| loop | warps/SM | measured | replayed | with register banks | measured / with banks |", "|---|---|---|---|---|---|"]
    for key, v in data["loops"].items():
        name, w = key.split("|")
        W = int(w) // 4
        g = float(np.median([x["GFLOPS"] for x in (v["launches"][1:] or v["launches"])]))
        args = (progs[name], W, 1, 1.0, lat.smem_latency_cycles, lat.l1_latency_cycles, lat.fma_latency_cycles, 1.0, 1.0, 4.0)
        gs = [4 * W * 32 * 128 * 2 / simulate(*args, banks=b) * dev.compute.sm_count * mhz * 1e-3 for b in (0, 2)]
        rows.append(f"| {name} | {w} | {100 * g / peak:.1f} % | {100 * gs[0] / peak:.1f} % | {100 * gs[1] / peak:.1f} % | "
                    f"{g / gs[1]:.3f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--replay":
        print(replay(json.loads(Path(sys.argv[2]).read_text())))
        sys.exit(0)
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        print(table(json.loads(Path(sys.argv[2]).read_text())))
        sys.exit(0)
    sys.exit(main(Path(sys.argv[1])))
