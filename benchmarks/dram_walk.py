"""What DRAM bandwidth does a GEMM's tile walk get, against a contiguous stream? (GPU; run from the
repository root.) A kernel that only loads, with no arithmetic, reads a 1 GiB row-major matrix once
(more than the L2 holds, flushed before each repetition) in one of three orders:

  stream  block b reads its own contiguous chunk, TILE bytes per step (calibrate's DRAM pattern)
  a-walk  block b owns R rows and walks along them (or along its slice of them), W bytes of each row
          per step: the k-tile walk of a row-major A (R = bm rows of bk * 4 bytes, rows ROW bytes apart)
  b-walk  block b owns W bytes of the rows of its slice of the rows and walks down them, R rows per
          step: the walk of a row-major B (R = bk rows of bn * 4 bytes; the rows cut into slices, as
          split-K cuts K, so that there are four blocks per resident block slot)

Each thread issues its 16-byte loads of D steps together and then sums them (D steps in flight per
block, as a kernel with D tiles of prefetch has), blocks per SM held at BPS by dynamic shared memory
(a GEMM's residency). Prints GB/s (median and range of 5 repetitions) and the bytes each SM has in
flight (BPS x D x step bytes); writes JSON to $OUT/dram_walk.json (default /tmp/out). `lone`: blocks of one warp
(32 threads, each E = 8-16 float4 a step) walking 128 rows of 32 or 64 bytes a step, and the stream with such blocks,
at 2-16 blocks an SM (split_k's one-warp 128 x 16 tiles).
    PYTHONPATH=. python3 benchmarks/dram_walk.py [quick|lone]"""
import json
import os
import sys
from pathlib import Path

import numpy as np

from perfmodel.measure.gpu import Gpu

SRC = r"""
// one step of one block: E float4 per thread; element e of the step -> (row, float4 column)
extern "C" __global__ void walk(const float4* __restrict__ x, long long row_f4, int mode, int steps, int bands, float* out) {
    extern __shared__ float hold[];  // only to hold the residency at BPS blocks per SM
    const int tid = threadIdx.x;
    float acc = 0.0f;
    for (int s0 = 0; s0 < steps; s0 += D) {
        float4 v[D * E];
#pragma unroll
        for (int d = 0; d < D; ++d)
#pragma unroll
            for (int q = 0; q < E; ++q) {
                const int e = q * NTHR + tid, s = s0 + d;
                long long idx;
                if (mode == 0)       // stream: the block's contiguous chunk, STEP_F4 float4 per step
                    idx = ((long long)blockIdx.x * steps + s) * (R * W_F4) + e;
                else if (mode == 1)  // a-walk: rows [R (b % bands), + R), float4 columns W_F4 (slice steps + s), slice b / bands
                    idx = ((long long)(blockIdx.x % bands) * R + e / W_F4) * row_f4 +
                          ((long long)(blockIdx.x / bands) * steps + s) * W_F4 + e % W_F4;
                else  // b-walk: band b % bands of W_F4 float4 columns, rows [R (slice steps + s), + R), slice b / bands
                    idx = (((long long)(blockIdx.x / bands) * steps + s) * R + e / W_F4) * row_f4 +
                          (long long)(blockIdx.x % bands) * W_F4 + e % W_F4;
                v[d * E + q] = __ldcg(&x[idx]);
            }
#pragma unroll
        for (int i = 0; i < D * E; ++i) acc += v[i].x + v[i].y + v[i].z + v[i].w;
    }
    if (acc == 12345.0f) out[0] = acc + hold[0];
}
"""
MATRIX = 1 << 30  # bytes read once per launch: 1 GiB, 20 x the H100's L2


def cases(mode):
    """mode: "full", "quick" or "lone" (the docstring's). Each case: (pattern, R rows per step, W bytes per row per
    step, row bytes, D steps in flight, blocks per SM)."""
    if mode == "lone":  # blocks of one warp (split_k's 128 x 16 tiles of 8 x 8: A's 128 rows of bk = 8 or 16 floats)
        return [(m, 128 if m != "stream" else 32, w, 16384 if m != "stream" else 0, d, bps)
                for bps in (2, 4, 6, 8, 16) for d in (1, 2) for m, w in (("stream", 256), ("a-walk", 32), ("a-walk", 64))]
    quick = mode == "quick"
    out = []
    for bps in (2, 4) if quick else (1, 2, 4, 8):
        for d in (1, 2) if quick else (1, 2, 4):
            out.append(("stream", 32, 256, 0, d, bps))                      # 8 KB steps
            for w in ((32, 64) if quick else (32, 64, 128, 256, 512)):    # A: rows of bk = 8 ... 128 floats
                out.append(("a-walk", min(256, 16384 // w), w, 16384, d, bps))  # (bm = 256 rows, or 16 KB a step)
            for w in ((256, 1024) if quick else (256, 512, 1024)):        # B: bk = 8 rows of bn = 64, 128, 256
                out.append(("b-walk", 8, w, 32768, d, bps))
    return out


def main():
    mode = sys.argv[1] if sys.argv[1:] in (["quick"], ["lone"]) else "full"
    out_dir = Path(os.environ.get("OUT", "/tmp/out"))
    out_dir.mkdir(parents=True, exist_ok=True)
    gpu = Gpu()
    drv = gpu.drv
    buf = drv.mem_alloc(MATRIX)
    drv.memset_d32(buf, 0, MATRIX // 4)
    flush = drv.mem_alloc(256 << 20)
    res = drv.mem_alloc(64)
    smem_per_sm = gpu.dev.get_attribute(drv.device_attribute.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
    start, stop = drv.Event(), drv.Event()
    rows = []
    print(f"{gpu.name}: {MATRIX >> 20} MiB read once per launch, L2 flushed before each; GB/s median (range) of 5", flush=True)
    for pattern, r, w, row_bytes, d, bps in cases(mode):
        step = r * w
        w_f4 = w // 16
        nthr = 32 if mode == "lone" else min(256, step // 16)
        e = step // 16 // nthr
        bands = 1
        if pattern == "stream":
            blocks = 4 * gpu.sm_count * bps
            steps = MATRIX // (blocks * step)
            row_f4 = 0
        elif pattern == "a-walk":
            row_f4 = row_bytes // 16
            bands = MATRIX // (r * row_bytes)  # row bands, the rows cut into slices as split-K cuts K where
            slices = max(1, -(-4 * gpu.sm_count * bps // bands))  # there are fewer than four per block slot
            blocks = bands * slices
            steps = row_bytes // (w * slices)
        else:
            row_f4 = row_bytes // 16
            bands = row_bytes // w  # the rows cut into slices (split-K) so that every SM has blocks to hold
            slices = max(1, -(-4 * gpu.sm_count * bps // bands))
            blocks = bands * slices
            steps = MATRIX // (row_bytes * r * slices)
        steps -= steps % d
        opts = ["-O3", f"-DD={d}", f"-DE={e}", f"-DNTHR={nthr}", f"-DR={r}", f"-DW_F4={w_f4}"]
        fn = drv.module_from_buffer(gpu.compiler.compile(SRC, options=opts, arch=gpu.arch, no_extern_c=True)).get_function("walk")
        shm = smem_per_sm // bps - 1024  # the block's reservation leaves room for bps blocks and no more
        fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shm)
        code = {"stream": 0, "a-walk": 1, "b-walk": 2}[pattern]
        gbps = []
        for rep in range(5):
            drv.memset_d32(flush, rep + 1, (256 << 20) // 4)
            start.record()
            fn(buf, np.int64(row_f4), np.int32(code), np.int32(steps), np.int32(bands), res, block=(nthr, 1, 1), grid=(blocks, 1), shared=shm)
            stop.record()
            stop.synchronize()
            ms = stop.time_since(start)
            gbps.append(blocks * steps * step / (ms * 1e-3) / 1e9)
        inflight = bps * d * step
        row = dict(mode=pattern, rows_per_step=r, bytes_per_row=w, row_bytes=row_bytes, steps_in_flight=d, blocks_per_sm=bps,
                   threads=nthr, blocks=blocks, steps=steps, step_bytes=step, inflight_bytes_per_sm=inflight,
                   GBps_median=float(np.median(gbps)), GBps_min=float(min(gbps)), GBps_max=float(max(gbps)))
        rows.append(row)
        print(f"{pattern:7s} R={r:4d} W={w:5d} D={d} BPS={bps} in flight/SM {inflight / 1024:7.1f} KB: "
              f"{row['GBps_median']:7.0f} GB/s ({row['GBps_min']:.0f}-{row['GBps_max']:.0f})", flush=True)
    (out_dir / "dram_walk.json").write_text(json.dumps(dict(device=gpu.name, matrix_bytes=MATRIX, rows=rows), indent=1))
    # each pattern's ceiling: its best rate over the residencies and depths, against the stream's
    best = {}
    for r in rows:
        key = (r["mode"], r["bytes_per_row"])
        best[key] = max(best.get(key, 0.0), r["GBps_median"])
    stream = max(v for (m, _), v in best.items() if m == "stream")
    print(f"\n| pattern | bytes per row per step | best GB/s | share of the stream's {stream:.0f} |\n|---|---:|---:|---:|")
    for (m, w), v in sorted(best.items()):
        if m != "stream":
            print(f"| {m} | {w} | {v:.0f} | {v / stream:.3f} |")


if __name__ == "__main__":
    main()
