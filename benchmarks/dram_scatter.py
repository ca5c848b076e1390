"""What latency does a GEMM tile load see when its data comes from DRAM? (GPU; one-off check behind the
model's load latency.) BLOCKS blocks of 128 threads (one per SM at most) each load an 8 KB tile per
iteration into shared memory (four 16-byte loads per thread issued together, as the tiled kernels do),
wait for it at a barrier and load the next, with nothing else to do; 32 iterations. The tile is either
the block's own contiguous stream (8 KB after 8 KB, as calibrate's tile loop reads) or a GEMM tile
walk: k-tile `it` of a 256 x 8 tile of a row-major A with K = 4096, i.e. 32 bytes of each of 256 rows
16 KB apart, the next k-tile the next 32 bytes of the same rows. Each is timed with its footprint
resident in the L2 (read just before) and in DRAM only (the L2 flushed before each repetition).
Prints cycles per tile (median over the blocks; median and range of 5 repetitions).
    python3 benchmarks/dram_scatter.py [BLOCKS]   (default: one block on every SM)"""
import sys

import numpy as np

from perfmodel.measure.gpu import Gpu

SRC = r"""
extern "C" __global__ void tile_fetch(const float4* __restrict__ src, int gemm, int row_f4, int iters,
                                      long long* cycles, float* out) {
    __shared__ __align__(16) float4 tile[512];
    const int tid = threadIdx.x;
    float acc = 0.0f;
    __syncthreads();
    long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
        float4 v[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int e = r * 128 + tid;  // 16-byte element of the 8 KB tile
            const unsigned long long idx = gemm
                // k-tile `it` of a 256 x 8 tile of A: 32 bytes of each of the block's 256 rows, rows row_f4 x 16 B apart
                ? ((unsigned long long)blockIdx.x * 256ull + (e >> 1)) * (unsigned long long)row_f4 + it * 2 + (e & 1)
                // the block's own contiguous stream, 8 KB per iteration
                : ((unsigned long long)blockIdx.x * iters + it) * 512ull + e;
            v[r] = __ldcg(&src[idx]);
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) tile[r * 128 + tid] = v[r];
        __syncthreads();
        acc += tile[(tid * 7 + it) & 511].x;
        __syncthreads();
    }
    long long t1 = clock64();
    if (tid == 0) cycles[blockIdx.x] = (t1 - t0) / iters;
    if (acc == 12345.0f) out[0] = acc;
}
"""

gpu = Gpu()
drv = gpu.drv
fn = drv.module_from_buffer(gpu.compiler.compile(SRC, options=["-O3"], arch=gpu.arch, no_extern_c=True)).get_function("tile_fetch")
blocks = int(sys.argv[1]) if len(sys.argv) > 1 else gpu.sm_count
out, cyc = drv.mem_alloc(64), drv.mem_alloc(8 * max(blocks, 1))
flush = drv.mem_alloc(256 << 20)
ITERS, ROW = 32, 16384  # a 256 x 8 tile of A per k-tile, K = 4096 (rows 16 KB apart)
region = blocks * 256 * ROW
buf = drv.mem_alloc(region)
drv.memset_d32(buf, 0, region // 4)
print(f"{gpu.name}: {blocks} blocks of 128 threads, one 8 KB tile per iteration, {ITERS} iterations "
      f"(cycles per tile, median over blocks; median and range of 5 repetitions)")
for name, gemm in (("contiguous stream", 0), ("GEMM tile walk (256 rows x 32 B, rows 16 KB apart)", 1)):
    row = []
    for where in ("L2-resident", "DRAM-resident"):
        vals = []
        for rep in range(5):
            if where == "DRAM-resident":
                drv.memset_d32(flush, rep, (256 << 20) // 4)  # push the footprint out of the L2
            else:
                fn(buf, np.int32(gemm), np.int32(ROW // 16), np.int32(ITERS), cyc, out, block=(128, 1, 1), grid=(blocks, 1))
            fn(buf, np.int32(gemm), np.int32(ROW // 16), np.int32(ITERS), cyc, out, block=(128, 1, 1), grid=(blocks, 1))
            gpu.sync()
            cc = np.zeros(blocks, np.int64)
            drv.memcpy_dtoh(cc, cyc)
            vals.append(float(np.median(cc)))
        row.append(f"{where} {np.median(vals):.0f} ({min(vals):.0f}-{max(vals):.0f})")
    print(f"{name}: " + "; ".join(row), flush=True)
