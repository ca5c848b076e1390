"""How many warp-wide global loads one SM's L1 takes per clock when they hit in it: a microbenchmark of the
load path alone (no FFMA, no shared memory). Every warp of a grid of 1-2 blocks per SM (up to 32 warps each, at
most 32 registers a thread so that two blocks fit) loads, `iters` times, from 16 regions of 4 KB that stay in L1 (16 loads a pass, immediate offsets): `line` = 32 consecutive floats (one 128-byte line, 4 sectors),
`broadcast` = one word for all 32 lanes (one sector), `pair` = the two alternately (a warp's k step of the
coalesced kernel: a broadcast word of A and a line of B). Four accumulators per thread, so no add chain
paces a warp; iters is rounded to passes of 16. Prints, per pattern and warps per SM, the loads per clock per SM (median of `reps` launches,
the SM clock read from NVML after each) and writes them as JSON. GPU machine (CuPy, nvidia-ml-py).

    python3 benchmarks/ldg_rate.py OUT.json [--warps 8,16,32,64] [--iters 4096] [--reps 9]
"""
import argparse
import json
import statistics
import sys

SRC = r'''
extern "C" __global__ void __launch_bounds__(1024, 2) ldg_rate(const float* __restrict__ x, float* out, int iters, int mode, int step) {
    const int lane = threadIdx.x & 31;
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const float* w = x + (warp & 15) * 1024;      // 16 regions of 4 KB (64 KB in all): L1-resident
    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
    for (int i = 0; i < iters; i += 16) {
        // a pass's 16 lines start at one of 16 lines of the region, chosen with a step the compiler cannot
        // see (1 at run time): no load repeats an address it could keep in a register
        const float* p = w + ((((i >> 4) * step) & 15) * 32);
        const float* pl = p + lane;                // line: 32 consecutive floats
        if (mode == 0) {
            #pragma unroll
            for (int j = 0; j < 16; j += 4) { a0 += pl[j * 32]; a1 += pl[j * 32 + 32]; a2 += pl[j * 32 + 64]; a3 += pl[j * 32 + 96]; }
        } else if (mode == 1) {                    // broadcast: one word for the warp
            #pragma unroll
            for (int j = 0; j < 16; j += 4) { a0 += p[j * 32]; a1 += p[j * 32 + 32]; a2 += p[j * 32 + 64]; a3 += p[j * 32 + 96]; }
        } else {                                   // pair: a broadcast word, then a line
            #pragma unroll
            for (int j = 0; j < 16; j += 4) { a0 += p[j * 32]; a1 += pl[j * 32 + 32]; a2 += p[j * 32 + 64]; a3 += pl[j * 32 + 96]; }
        }
    }
    float s = a0 + a1 + a2 + a3;
    if (s == 1234.5f) out[0] = s;                  // never true: keeps the loads
}
'''
MODES = {"line": 0, "broadcast": 1, "pair": 2}


def once(mode: str, warps: list[int], iters: int) -> None:
    import cupy as cp

    sms = cp.cuda.Device(0).attributes["MultiProcessorCount"]
    kern = cp.RawKernel(SRC, "ldg_rate")
    x, o = cp.ones(16 * 1024 + 64, dtype=cp.float32), cp.zeros(1, dtype=cp.float32)
    for w in warps:
        kern((sms * max(1, w // 32),), (min(w, 32) * 32,), (x, o, cp.int32(iters), cp.int32(MODES[mode]), cp.int32(1)))
    cp.cuda.Device().synchronize()


def main(out: str, warps: list[int], iters: int, reps: int) -> None:
    import cupy as cp
    import pynvml

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    dev = cp.cuda.Device(0)
    sms = dev.attributes["MultiProcessorCount"]
    name = pynvml.nvmlDeviceGetName(h)
    kern = cp.RawKernel(SRC, "ldg_rate")
    x = cp.ones(16 * 1024 + 64, dtype=cp.float32)
    o = cp.zeros(1, dtype=cp.float32)
    rows = []
    for mode, m in MODES.items():
        for w in warps:
            threads = min(w, 32) * 32
            blocks = sms * max(1, w // 32)
            args = (x, o, cp.int32(iters), cp.int32(m), cp.int32(1))
            kern((blocks,), (threads,), args)  # warm-up (and the L1 fill)
            cp.cuda.Device().synchronize()
            rates, clocks = [], []
            for _ in range(reps):
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                e0.record()
                kern((blocks,), (threads,), args)
                e1.record()
                e1.synchronize()
                ms = cp.cuda.get_elapsed_time(e0, e1)
                mhz = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
                loads_per_sm = blocks * threads / 32 * iters / sms
                rates.append(loads_per_sm / (ms * 1e-3 * mhz * 1e6))
                clocks.append(mhz)
            r = dict(pattern=mode, warps_per_sm=w, iters=iters, loads_per_clock_per_sm=statistics.median(rates),
                     min=min(rates), max=max(rates), sm_clock_MHz=statistics.median(clocks))
            rows.append(r)
            print(f"{mode:9} {w:3d} warps/SM: {r['loads_per_clock_per_sm']:.3f} loads a clock a SM "
                  f"({r['min']:.3f}-{r['max']:.3f}), {r['sm_clock_MHz']:.0f} MHz", flush=True)
    with open(out, "w") as f:
        json.dump(dict(gpu=name, sms=sms, rows=rows), f, indent=1)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--warps", default="8,16,32,64")
    ap.add_argument("--iters", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--once", metavar="PATTERN", choices=sorted(MODES),
                    help="launch PATTERN once per --warps value, untimed (for Nsight Compute), and write nothing")
    a = ap.parse_args()
    try:
        ws = [int(v) for v in a.warps.split(",")]
    except ValueError:
        print(f"error: --warps {a.warps!r}: give warps per SM separated by commas, e.g. 8,16,32,64", file=sys.stderr)
        sys.exit(2)
    if any(w < 1 or w > 64 or (w > 32 and w % 32) for w in ws):
        print(f"error: --warps {a.warps!r}: each 1-32, or 64 (two blocks of 32 warps)", file=sys.stderr)
        sys.exit(2)
    if a.once:
        once(a.once, ws, a.iters)
    else:
        main(a.out, ws, a.iters, a.reps)
