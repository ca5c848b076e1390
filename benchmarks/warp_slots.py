"""Which warp scheduler the warps of small blocks land on (GPU only; cupy compiles the kernel with NVRTC).

The model's replay (model.schedule) and its occupancy regimes take the resident warps of an SM as spread
evenly over its warp schedulers: five one-warp blocks as 2 + 1 + 1 + 1 warps, four as one warp a
scheduler ('lone'). On sm_70 and newer a warp's scheduler is its slot (%warpid) mod 4. This measures where
the warps of b blocks of W warps on one SM go: a grid of SMs x b blocks, shared memory sized so that b fit
an SM and b + 1 do not; every warp runs the same issue-bound loop (`chains` independent FFMA chains a
thread) and lane 0 records %smid, %warpid, and clock64() before and after its loop. Two loops: 8 chains
(a few registers a thread) and 200 chains (about 230 registers a thread, near the 255 of the catalogue's
large thread tiles, where a scheduler's register file holds two warps).

For each (loop, W, b): the SMs whose every warp was resident at once (their loops overlapped), the most
warps any scheduler held on such an SM (median over SMs), how many SMs had a scheduler with more warps than
ceil(b W / 4) (the even spread), and a warp's loop time over the lone warp's (b = 1, W = 1; median and max):
about 1 where each warp has its scheduler, about k where k warps share one.

    python3 benchmarks/warp_slots.py OUT.json [--iters N] [--warps 1,2] [--blocks 1,2,3,4,5,6,8]
    python3 benchmarks/warp_slots.py --table OUT.json     (CPU) the table again from a recorded file
"""
import argparse
import json
import sys
from math import ceil

import numpy as np

SRC = r"""
template <int CHAINS>
__device__ void run(long long* rec, int iters, float* sink) {
    extern __shared__ float pad[];
    float a[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) a[j] = threadIdx.x * 1e-7f + j;
    long long t0 = clock64();
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < CHAINS; ++j) a[j] = fmaf(a[j], 0.9999f, 1e-3f);
    }
    long long t1 = clock64();
    unsigned slot, sm;
    asm volatile("mov.u32 %0, %%warpid;" : "=r"(slot));
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) s += a[j];
    if (s == 12345.678f) { pad[threadIdx.x] = s; sink[0] = pad[(threadIdx.x + 1) % blockDim.x]; }
    if (threadIdx.x % 32 == 0) {
        long long* r = rec + 4 * (blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32);
        r[0] = sm; r[1] = slot; r[2] = t0; r[3] = t1;
    }
}
extern "C" __global__ void chains8(long long* rec, int iters, float* sink) { run<8>(rec, iters, sink); }
extern "C" __global__ void chains200(long long* rec, int iters, float* sink) { run<200>(rec, iters, sink); }
"""
LOOPS = {"chains8": 8, "chains200": 200}
SCHEDULERS = 4


def summarise(rec: np.ndarray, warps: int, b: int, solo: float) -> dict:
    """rec: (warps of the grid, 4) = smid, slot, start, end (clock64 of that SM)."""
    most, uneven, overlapped, ratios = [], 0, 0, []
    even = ceil(b * warps / SCHEDULERS)
    for sm in np.unique(rec[:, 0]):
        r = rec[rec[:, 0] == sm]
        if len(r) != b * warps or r[:, 2].max() >= r[:, 3].min():  # not b blocks, or not all resident at once
            continue
        overlapped += 1
        per = np.bincount(r[:, 1] % SCHEDULERS, minlength=SCHEDULERS)
        most.append(int(per.max()))
        uneven += int(per.max() > even)
        ratios.extend(((r[:, 3] - r[:, 2]) / solo).tolist())
    return dict(sms_overlapped=overlapped, most_per_scheduler=float(np.median(most)) if most else float("nan"),
                even=even, sms_uneven=uneven,
                time_ratio_median=float(np.median(ratios)) if ratios else float("nan"),
                time_ratio_max=float(np.max(ratios)) if ratios else float("nan"))


HEADER = (f"{'loop':<10} {'regs':>4} {'W':>2} {'b':>2} {'SMs all resident':>16} {'most warps/scheduler':>20} "
          f"{'even':>4} {'SMs uneven':>10} {'time / lone warp (median, max)':>30}")


def line(loop, regs, w, b, s) -> str:
    return (f"{loop:<10} {regs:>4} {w:>2} {b:>2} {s['sms_overlapped']:>16} {s['most_per_scheduler']:>20.1f} {s['even']:>4} "
            f"{s['sms_uneven']:>10} {s['time_ratio_median']:>18.2f}, {s['time_ratio_max']:.2f}")


def table(path: str) -> int:
    d = json.loads(open(path).read())
    print(f"{d['device']}: {d['sms']} SMs, {d['iters']} iterations")
    print(HEADER)
    for r in d["runs"]:
        rec = np.stack([r["smid"], r["slot"], r["start"], r["end"]], axis=1).astype(np.int64)
        print(line(r["loop"], r["registers"], r["warps"], r["b"], summarise(rec, r["warps"], r["b"], r["solo_cycles"])))
    return 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        return table(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--warps", default="1,2", help="warps a block (comma-separated)")
    ap.add_argument("--blocks", default="1,2,3,4,5,6,8", help="blocks an SM holds (comma-separated)")
    a = ap.parse_args()
    import cupy as cp

    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    smem_sm = dev.attributes["MaxSharedMemoryPerMultiprocessor"]
    optin = dev.attributes["MaxSharedMemoryPerBlockOptin"]
    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    sink = cp.zeros(1, cp.float32)
    out = dict(device=cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), sms=sms, iters=a.iters, runs=[])
    print(f"{out['device']}: {sms} SMs, {smem_sm} B shared memory per SM, {a.iters} iterations")
    print(HEADER)
    for loop, chains in LOOPS.items():
        kern = mod.get_function(loop)
        kern.max_dynamic_shared_size_bytes = optin
        regs = int(kern.num_regs)
        iters = max(a.iters * 8 // chains, 1) if chains > 8 else a.iters * 25  # similar loop lengths
        solo = None
        for w in map(int, a.warps.split(",")):
            for b in map(int, a.blocks.split(",")):
                if w * b > 64:
                    continue
                smem = min(smem_sm // b - 2048 if b > 1 else smem_sm // 2 + 1024, optin)  # b blocks fit, b + 1 do not
                g = sms * b
                rec = cp.zeros(4 * g * w, cp.int64)
                kern((g,), (32 * w,), (rec, np.int32(iters), sink), shared_mem=smem)
                cp.cuda.runtime.deviceSynchronize()
                kern((g,), (32 * w,), (rec, np.int32(iters), sink), shared_mem=smem)  # the second run is kept
                cp.cuda.runtime.deviceSynchronize()
                r = cp.asnumpy(rec).reshape(g * w, 4)
                if solo is None:  # b = 1, W = 1 first: the lone warp's loop time
                    solo = float(np.median(r[:, 3] - r[:, 2]))
                s = summarise(r, w, b, solo)
                out["runs"].append(dict(loop=loop, chains=chains, registers=regs, iters=iters, warps=w, b=b, smem=smem,
                                        solo_cycles=solo, **s, smid=r[:, 0].tolist(), slot=r[:, 1].tolist(),
                                        start=r[:, 2].tolist(), end=r[:, 3].tolist()))
                print(line(loop, regs, w, b, s), flush=True)
    with open(a.out, "x") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
