"""How long a read of S bytes from DRAM takes as one kernel, against the launch and S over the stream rate (GPU; cupy
compiles with NVRTC). The model charges a DRAM-bound kernel its launch plus its bytes at the calibrated stream rate
(`perfmodel calibrate` reads 4 GiB); a skinny product (a few rows of A against a 64 MB B) is such a kernel, and the
few-rows probe (benchmarks/gemv_probe.py) streams its B at about 2.5 GB/ms where the calibration says 4.4.

Two reads, each launch timed alone after the L2 is flushed (a write of twice its size, as perfmodel times):
  linear   every SM's blocks walk the buffer grid-stride, four 16-byte loads a thread in flight (ld.global.cg), the
           grid 8 blocks of 256 threads an SM: the most a plain stream asks of DRAM at once;
  columns  the probe's map without A and its FFMAs: the buffer as K rows of N floats, block b reads columns
           32 b .. 32 b + 31 of every row, its 32 warps splitting the rows, each warp 16 rows' loads in flight
           (N / 32 blocks: 128 at N = 4096).
and an empty kernel timed the same way (the launch). `--flush` sets what the L2 holds before each launch: `dirty`
(the write of twice its size: dirty lines the read must write back as it evicts them), `clean` (that write, then
the linear read of the whole written buffer: every dirty line written back, the L2 full of clean lines) or `reads`
(no write: a linear read of 512 MiB elsewhere, the L2 full of clean lines of other data). Per size: the median of 15 launches, the read's GB/s, and the
time left after the launch and the bytes at the 4 GiB linear read's own rate.

    python3 benchmarks/dram_stream.py OUT.json [--mb 2,8,32,64,128,512,4096] [--columns-n 4096,8192] [--flush dirty|clean|reads]
    python3 benchmarks/dram_stream.py --table OUT.json      (CPU) the table again from a recorded file
    python3 benchmarks/dram_stream.py --writeback DIRTY.json CLEAN.json
        (CPU) the device file's memory.flush_writeback_us_by_MiB: per size of the linear read below the 4 GiB one,
        the microseconds it took after the flush beyond those it took after the flush read back (launch and
        bytes alike in both, so what is left is the write-back of the dirty lines the read evicted)
"""
import argparse
import json
import os
import sys

import numpy as np

from gemv_probe import _ints
from load_inflight import read_record

SRC = r"""
extern "C" __global__ void empty() {}

extern "C" __global__ void __launch_bounds__(256) read_linear(const float4* __restrict__ x, long long n4,
                                                             float* __restrict__ sink) {
    const int U = 4;
    float acc = 0.0f;
    const long long step = (long long)gridDim.x * blockDim.x * U;
    long long i = (long long)blockIdx.x * blockDim.x * U + threadIdx.x;
    for (; i + (U - 1) * blockDim.x < n4; i += step) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = __ldcg(x + i + u * blockDim.x);
#pragma unroll
        for (int u = 0; u < U; ++u) acc += v[u].x + v[u].y + v[u].z + v[u].w;
    }
    for (; i < n4; i += blockDim.x) {  // the last partial step (sizes not a multiple of the grid's step)
        const float4 v = __ldcg(x + i);
        acc += v.x + v.y + v.z + v.w;
    }
    if (acc == 12345.678f) sink[0] = acc;
}

extern "C" __global__ void __launch_bounds__(1024) read_columns(const float* __restrict__ B, int N, int K,
                                                               float* __restrict__ sink) {
    const int U = 16;
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32, warps = blockDim.x / 32;
    const int per = (K + warps - 1) / warps, k0 = w * per, k1 = min(K, k0 + per);
    const float* col = B + blockIdx.x * 32 + lane;
    float acc = 0.0f;
    int k = k0;
    for (; k + U <= k1; k += U) {
        float v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = __ldcg(col + (size_t)(k + u) * N);
#pragma unroll
        for (int u = 0; u < U; ++u) acc += v[u];
    }
    for (; k < k1; ++k) acc += __ldcg(col + (size_t)k * N);
    if (acc == 12345.678f) sink[0] = acc;
}
"""
REPS = 15
HEADER = (f"{'read':<8} {'MB':>6} {'blocks':>6} {'us (median)':>11} {'min-max':>15} {'GB/s':>7} "
          f"{'us - launch - bytes at the 4 GiB rate':>38}")


def seconds(r: dict) -> float:
    return float(np.median(r["seconds"]))


def stream_rate(d: dict) -> float:
    """Bytes a second of the largest linear read (the calibration's own 4 GiB stream where recorded)."""
    big = max((r for r in d["runs"] if r["kernel"] == "linear"), key=lambda r: r["bytes"])
    return big["bytes"] / seconds(big)


def summary(d: dict) -> list[str]:
    launch = seconds(next(r for r in d["runs"] if r["kernel"] == "empty"))
    rate = stream_rate(d)
    how = {"dirty": "the L2 flushed before each", "clean": "the L2 flushed and the flush read back before each",
           "reads": "512 MiB of other data read before each"}[d.get("flush", "dirty")]
    out = [f"{d['device']}: {d['sms']} SMs, {REPS} launches each, {how}; the launch (an empty "
           f"kernel) {launch * 1e6:.2f} us; the 4 GiB linear read {rate / 1e9:,.0f} GB/s", HEADER]
    for r in sorted((r for r in d["runs"] if r["kernel"] != "empty"), key=lambda r: (r["kernel"], r["bytes"])):
        t = np.asarray(r["seconds"])
        extra = seconds(r) - launch - r["bytes"] / rate
        out.append(f"{r['kernel']:<8} {r['bytes'] / 2**20:>6,.0f} {r['blocks']:>6} {seconds(r) * 1e6:>11.2f} "
                   f"{f'{t.min() * 1e6:.2f}-{t.max() * 1e6:.2f}':>15} {r['bytes'] / seconds(r) / 1e9:>7,.0f} {extra * 1e6:>38.2f}")
    return out


def writeback_table(dirty: dict, clean: dict) -> dict[str, float]:
    """{MiB: us} of the linear reads below the largest: median time after the dirty flush less after the clean one."""
    def times(d):
        return {r["bytes"] >> 20: seconds(r) for r in d["runs"] if r["kernel"] == "linear"}
    td, tc = times(dirty), times(clean)
    big = max(td)
    return {str(mb): round((td[mb] - tc[mb]) * 1e6, 2) for mb in sorted(set(td) & set(tc)) if mb < big}


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        print("\n".join(summary(read_record(sys.argv[2]))))
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "--writeback":
        dirty, clean = (read_record(p) for p in sys.argv[2:])
        if dirty.get("flush", "dirty") != "dirty" or clean.get("flush") != "clean":
            print("error: --writeback takes a --flush dirty record, then a --flush clean one", file=sys.stderr)
            return 2
        table = writeback_table(dirty, clean)
        print("flush_writeback_us_by_MiB = { " + ", ".join(f'"{k}" = {v}' for k, v in table.items()) + " }")
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="a new JSON file")
    ap.add_argument("--mb", default="2,8,32,64,128,512,4096", help="sizes of the linear read in MiB (1-8192)")
    ap.add_argument("--columns-n", default="4096,8192",
                    help="row lengths of the column read (multiples of 32); each reads 64 MiB")
    ap.add_argument("--flush", choices=("dirty", "clean", "reads"), default="dirty",
                    help="what the L2 holds before each launch (see the description)")
    a = ap.parse_args()
    try:
        mbs = _ints(a.mb, "mb", 1, 8192)
        ns = _ints(a.columns_n, "columns-n", 32, 1 << 20)
        if any(n % 32 for n in ns):
            raise ValueError(f"error: --columns-n takes multiples of 32, not {a.columns_n!r}")
        if 4096 not in mbs:
            raise ValueError("error: --mb must hold 4096: the 4 GiB read is the stream rate the others are set against")
        if os.path.exists(a.out):
            raise ValueError(f"error: {a.out} exists; dram_stream.py writes a new file only")
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    import cupy as cp

    cp.cuda.set_allocator(None)
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms = props["multiProcessorCount"]
    flush = cp.empty(2 * props["l2CacheSize"] // 4, cp.float32)
    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    empty, linear, columns = (mod.get_function(n) for n in ("empty", "read_linear", "read_columns"))
    buf = cp.ones(max(mbs) << 20 >> 2, cp.float32)
    other = cp.ones(512 << 20 >> 2, cp.float32) if a.flush == "reads" else None
    sink = cp.zeros(1, cp.float32)
    out = dict(device=props["name"].decode(), sms=sms, reps=REPS, flush=a.flush, runs=[])
    grid = 8 * sms

    def prepare():
        if a.flush == "reads":
            linear((grid,), (256,), (other, np.int64(other.size // 4), sink))
            return
        flush.fill(1.0)
        if a.flush == "clean":
            linear((grid,), (256,), (flush, np.int64(flush.size // 4), sink))

    def timed(fn) -> list[float]:
        fn()
        cp.cuda.Device().synchronize()
        s, e, ts = cp.cuda.Event(), cp.cuda.Event(), []
        for _ in range(REPS):
            prepare()
            s.record()
            fn()
            e.record()
            e.synchronize()
            ts.append(cp.cuda.get_elapsed_time(s, e) * 1e-3)
        return ts

    out["runs"].append(dict(kernel="empty", bytes=0, blocks=1, seconds=timed(lambda: empty((1,), (32,), ()))))
    for mb in mbs:
        n4 = (mb << 20) // 16
        r = dict(kernel="linear", bytes=mb << 20, blocks=grid,
                 seconds=timed(lambda: linear((grid,), (256,), (buf, np.int64(n4), sink))))
        out["runs"].append(r)
        print(f"  linear {mb} MiB: {seconds(r) * 1e6:.2f} us", flush=True)
    for n in ns:
        k = (64 << 20) // (4 * n)
        r = dict(kernel="columns", bytes=4 * n * k, blocks=n // 32, N=n, K=k,
                 seconds=timed(lambda: columns((n // 32,), (1024,), (buf, np.int32(n), np.int32(k), sink))))
        out["runs"].append(r)
        print(f"  columns N = {n}: {seconds(r) * 1e6:.2f} us", flush=True)
    with open(a.out, "x") as f:
        json.dump(out, f)
    print("\n".join(summary(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
