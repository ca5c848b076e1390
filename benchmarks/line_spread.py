"""What a warp load costs by the lines it touches (GPU; cupy compiles with NVRTC): warp-wide float4 loads (512 bytes a
warp load, as the tile kernels' LDG.128) whose 32 lanes read whole lines (8 lanes a line: 4 lines of 4 sectors) or
one sector of each of 16 lines (2 lanes a line, as a k-tile of A 8 floats wide is read), served by the L2 (the L1
bypassed, `ld.global.cg`, or through it, `ld.global.nc`, from a 32 MB buffer the L2 holds and the L1 cannot). One block per SM of
W warps, U loads in flight a warp. Bytes and warp loads a clock per SM (clock64, median over the SMs): where the
16-line loads bring fewer bytes a clock than the 4-line ones at the same loads in flight, the L2 or the path to it
works by the line (or sector request), not by the byte.

    python3 benchmarks/line_spread.py OUT.json [--warps 8,16,32] [--unroll 2,4,8,16]
    python3 benchmarks/line_spread.py --table OUT.json      (CPU) the table again from a recorded file
"""
import argparse
import json
import sys

import numpy as np

from load_inflight import _ints, block_spans, read_record

SRC = r"""
template <int U, int LPL, bool CG>  // LPL: lanes a line (8: 4 whole lines a warp load; 2: one sector of 16 lines)
__device__ __forceinline__ void run(const float4* __restrict__ buf, unsigned rows, int passes, long long* rec, float* sink) {
    // the buffer as rows of 32 float4 (512 B, four lines)
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    const unsigned group = lane / LPL, within = lane % LPL;
    // LPL 8: the 4 groups read 4 consecutive lines of one row; LPL 2: the 16 groups read the first sector of 16 rows
    const unsigned off = LPL == 8 ? group * 8 + within : group * 32 + within;
    unsigned row = (blockIdx.x * 977u + warp * 131u) % (rows - 16 * U * 17u);
    float acc = 0.0f;
    __syncthreads();
    long long t0 = clock64();
#pragma unroll 1
    for (int p = 0; p < passes; ++p) {
        const float4* q = buf + (size_t)row * 32 + off;
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = CG ? __ldcg(q + u * 17 * 16 * 32) : __ldg(q + u * 17 * 16 * 32);
#pragma unroll
        for (int u = 0; u < U; ++u) acc += v[u].x + v[u].y + v[u].z + v[u].w;
        row += U * 17u * 16u + warps * 16u;
        if (row >= rows - 16 * U * 17u) row -= rows - 16 * U * 17u - 1;
    }
    long long t1 = clock64();
    __syncthreads();
    if (acc == 12345.678f) sink[0] = acc;
    if (lane == 0) {
        long long* r = rec + 3 * (blockIdx.x * warps + warp);
        unsigned sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        r[0] = sm; r[1] = t0; r[2] = t1;
    }
}
"""
UNROLLS = (2, 4, 8, 16)
CASES = (("cg", 8), ("cg", 2), ("nc", 8), ("nc", 2))
KERNELS = "".join(
    f'extern "C" __global__ void {path}_{lpl}_{u}(const float4* buf, unsigned rows, int passes, long long* rec, float* sink) '
    f'{{ run<{u}, {lpl}, {"true" if path == "cg" else "false"}>(buf, rows, passes, rec, sink); }}\n'
    for path, lpl in CASES for u in UNROLLS)
HEADER = f"{'path':<4} {'lines a load':>12} {'warps':>5} {'loads':>5} {'warp loads/clk/SM':>18} {'bytes/clk/SM':>12} {'lines/clk/SM':>12}"


def summarise(rec: np.ndarray, warps: int, unroll: int, passes: int) -> dict:
    """The median rate of a block's warp loads (a clock) and the bytes they bring (load_inflight.block_spans)."""
    rate = float(np.median(warps * unroll * passes / block_spans(rec, warps)))
    return dict(loads_per_clock=rate, bytes_per_clock=512.0 * rate)


def line(path, lpl, w, u, s) -> str:
    lines = 32 // lpl
    return (f"{path:<4} {lines:>12} {w:>5} {u:>5} {s['loads_per_clock']:>18.3f} {s['bytes_per_clock']:>12.1f} "
            f"{s['loads_per_clock'] * lines:>12.2f}")


def table(path: str) -> int:
    d = read_record(path)
    print(f"{d['device']}: {d['sms']} SMs, one block per SM, {d['passes']} passes")
    print(HEADER)
    for r in d["runs"]:
        print(line(r["path"], r["lanes_per_line"], r["warps"], r["unroll"],
                   summarise(np.asarray(r["records"], dtype=np.int64), r["warps"], r["unroll"], d["passes"])))
    return 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        return table(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--warps", default="8,16,32", help="warps a block (4-32, multiples of 4)")
    ap.add_argument("--unroll", default="2,4,8,16", help=f"loads a warp has in flight ({','.join(map(str, UNROLLS))})")
    a = ap.parse_args()
    try:
        warps = _ints(a.warps, range(4, 33, 4), "warps")
        unrolls = _ints(a.unroll, UNROLLS, "unroll")
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    import cupy as cp

    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    mod = cp.RawModule(code=SRC + KERNELS, options=("-std=c++17",))
    rows = (32 << 20) // 512  # a 32 MB buffer of 512-byte rows: the L2 holds it
    buf = cp.ones(rows * 128, cp.float32)
    sink = cp.zeros(1, cp.float32)
    passes = 128
    out = dict(device=cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), sms=sms, passes=passes, runs=[])
    print(f"{out['device']}: {sms} SMs, one block per SM, {passes} passes")
    print(HEADER)
    for path, lpl in CASES:
        for w in warps:
            for u in unrolls:
                kern = mod.get_function(f"{path}_{lpl}_{u}")
                rec = cp.zeros(3 * sms * w, cp.int64)
                args = (buf, np.uint32(rows), np.int32(passes), rec, sink)
                kern((sms,), (32 * w,), args)  # warm: the lines into the L2
                kern((sms,), (32 * w,), args)
                cp.cuda.runtime.deviceSynchronize()
                r = cp.asnumpy(rec).reshape(sms * w, 3)
                s = summarise(r, w, u, passes)
                out["runs"].append(dict(path=path, lanes_per_line=lpl, warps=w, unroll=u, records=r.tolist(), **s))
                print(line(path, lpl, w, u, s), flush=True)
    with open(a.out, "x") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
