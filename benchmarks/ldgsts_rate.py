"""How many warp-wide cp.async copies (LDGSTS) one SM issues per clock, by width: a microbenchmark of the copy path
alone (no FFMA, no shared loads). async_pipeline's interior body copies 16 bytes a lane (cp.async.cg, 512 B a warp)
and its edge body 4 bytes a lane (cp.async.ca with a source size of 4, or 0 beyond the matrix: zeros), four times as
many instructions for the same tile. The model's replay charges each copy its width in wavefronts (1 for 4 bytes, 4
for 16: model.schedule); this measures what each takes.

Every warp of a grid of 1-2 blocks per SM (up to 32 warps each) copies, `iters` times, from 16 regions of 4 KB that
stay in L1 and L2 into a shared-memory slot of its own: `w4` = 4 bytes a lane, the warp's 32 lanes one 128-byte line
(cp.async.ca, source size 4); `w4_zero` = the same with source size 0 (the edge body's copies beyond the matrix: no
global read, zeros written); `w16` = 16 bytes a lane, the warp's lanes four consecutive lines (cp.async.cg, 512 B).
Copies go in groups of 16 (one commit each), at most two groups a warp in flight (cp.async.wait_group 1), so many
copies are in flight whatever the warps. Prints, per pattern and warps per SM, the copies per clock per SM (median of
`reps` launches, the SM clock read from NVML after each) and the bytes they move, and writes them as JSON. GPU
machine (CuPy, nvidia-ml-py; sm_80 or newer).

    python3 benchmarks/ldgsts_rate.py OUT.json [--warps 4,8,16,32,64] [--iters 4096] [--reps 9]
"""
import argparse
import json
import statistics
import sys

SRC = r'''
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void __launch_bounds__(1024, 2) ldgsts_rate(const float* __restrict__ x, float* out, int iters,
                                                                  int mode, int step) {
    extern __shared__ __align__(16) float slot[];   // 1 KB a warp: two 512-byte destinations
    const int lane = threadIdx.x & 31, wib = threadIdx.x >> 5;
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const float* w = x + (warp & 15) * 1024;        // 16 regions of 4 KB (64 KB in all): L1- and L2-resident
    float* d = slot + wib * 256;
    for (int i = 0; i < iters; i += 16) {
        // a pass's 16 copies start at one of 4 places of the region, chosen with a step the compiler cannot see
        const float* p = w + ((((i >> 4) * step) & 3) * 128);
        if (mode == 0) {                            // w4: 4 bytes a lane, one line a warp
            #pragma unroll
            for (int j = 0; j < 16; ++j)
                asm volatile("cp.async.ca.shared.global [%0], [%1], 4, 4;" ::"r"(smem_addr(d + (j & 1) * 128 + lane)),
                             "l"(p + (j & 3) * 32 + lane));
        } else if (mode == 1) {                     // w4_zero: source size 0, zeros written
            #pragma unroll
            for (int j = 0; j < 16; ++j)
                asm volatile("cp.async.ca.shared.global [%0], [%1], 4, 0;" ::"r"(smem_addr(d + (j & 1) * 128 + lane)),
                             "l"(p + (j & 3) * 32 + lane));
        } else {                                    // w16: 16 bytes a lane, four lines a warp
            #pragma unroll
            for (int j = 0; j < 16; ++j)
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(d + (j & 1) * 128 + lane * 4)),
                             "l"(p + (j & 1) * 128 + lane * 4));
        }
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 1;");
    }
    asm volatile("cp.async.wait_group 0;");
    __syncwarp();
    if (d[lane] == 1234.5f) out[0] = d[lane];      // never true: keeps the copies
}
'''
MODES = {"w4": (0, 4), "w4_zero": (1, 4), "w16": (2, 16)}  # pattern: (mode, bytes a lane)


def main(out: str, warps: list[int], iters: int, reps: int) -> None:
    import cupy as cp
    import pynvml

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    dev = cp.cuda.Device(0)
    sms = dev.attributes["MultiProcessorCount"]
    name = pynvml.nvmlDeviceGetName(h)
    kern = cp.RawKernel(SRC, "ldgsts_rate", options=("-std=c++17",))
    x = cp.ones(16 * 1024 + 1024, dtype=cp.float32)
    o = cp.zeros(1, dtype=cp.float32)
    rows = []
    for mode, (m, width) in MODES.items():
        for w in warps:
            threads = min(w, 32) * 32
            blocks = sms * max(1, w // 32)
            shared = threads // 32 * 1024
            args = (x, o, cp.int32(iters), cp.int32(m), cp.int32(1))
            kern((blocks,), (threads,), args, shared_mem=shared)  # warm-up (and the L1 fill)
            cp.cuda.Device().synchronize()
            rates, clocks = [], []
            for _ in range(reps):
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                e0.record()
                kern((blocks,), (threads,), args, shared_mem=shared)
                e1.record()
                e1.synchronize()
                ms = cp.cuda.get_elapsed_time(e0, e1)
                mhz = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
                copies_per_sm = blocks * threads / 32 * iters / sms
                rates.append(copies_per_sm / (ms * 1e-3 * mhz * 1e6))
                clocks.append(mhz)
            r = dict(pattern=mode, bytes_per_lane=width, warps_per_sm=w, iters=iters,
                     copies_per_clock_per_sm=statistics.median(rates), min=min(rates), max=max(rates),
                     clocks_per_copy=1.0 / statistics.median(rates),
                     bytes_per_clock_per_sm=statistics.median(rates) * 32 * width,
                     sm_clock_MHz=statistics.median(clocks))
            rows.append(r)
            print(f"{mode:8} {w:3d} warps/SM: {r['copies_per_clock_per_sm']:.3f} copies a clock a SM "
                  f"({r['min']:.3f}-{r['max']:.3f}; {r['clocks_per_copy']:.2f} clocks a copy, "
                  f"{r['bytes_per_clock_per_sm']:.0f} B/clk), {r['sm_clock_MHz']:.0f} MHz", flush=True)
    with open(out, "x") as f:
        json.dump(dict(gpu=name, sms=sms, rows=rows), f, indent=1)
    print("\n| pattern | " + " | ".join(f"{w} warps" for w in warps) + " |")
    print("|---|" + "---:|" * len(warps))
    for mode in MODES:
        cells = [f"{r['clocks_per_copy']:.2f}" for r in rows if r["pattern"] == mode]
        print(f"| {mode} (clocks a copy) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--warps", default="4,8,16,32,64")
    ap.add_argument("--iters", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=9)
    a = ap.parse_args()
    try:
        ws = [int(v) for v in a.warps.split(",")]
    except ValueError:
        print(f"error: --warps {a.warps!r}: give warps per SM separated by commas, e.g. 8,16,32,64", file=sys.stderr)
        sys.exit(2)
    if any(w < 1 or w > 64 or (w > 32 and w % 32) for w in ws):
        print(f"error: --warps {a.warps!r}: each 1-32, or 64 (two blocks of 32 warps)", file=sys.stderr)
        sys.exit(2)
    if a.iters < 16 or a.iters % 16:
        print(f"error: --iters {a.iters}: a positive multiple of 16", file=sys.stderr)
        sys.exit(2)
    main(a.out, ws, a.iters, a.reps)
