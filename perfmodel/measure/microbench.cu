// Microbenchmarks for `perfmodel calibrate`. Each measures one device figure the model uses.
extern "C" {

// Shared by the outer-product microbenchmarks: one k step of an 8x8 thread tile fed from shared memory
// (four LDS.128: A at a0 and a1, B at b0 and b1, then 64 FFMAs), and the reduction that keeps the
// accumulators alive.
__device__ __forceinline__ void outer8x8_step(float (&acc)[8][8], const float* a0, const float* a1, const float* b0,
                                              const float* b1) {
    float x[8], y[8];
    *(float4*)&x[0] = *(const float4*)a0;
    *(float4*)&x[4] = *(const float4*)a1;
    *(float4*)&y[0] = *(const float4*)b0;
    *(float4*)&y[4] = *(const float4*)b1;
#pragma unroll
    for (int m = 0; m < 8; ++m)
#pragma unroll
        for (int n = 0; n < 8; ++n) acc[m][n] = fmaf(x[m], y[n], acc[m][n]);
}

__device__ __forceinline__ void keep8x8(const float (&acc)[8][8], float* out) {
    float s = 0;
#pragma unroll
    for (int m = 0; m < 8; ++m)
#pragma unroll
        for (int n = 0; n < 8; ++n) s += acc[m][n];
    if (s == 12345.0f) out[0] = s;
}

// Independent FFMA chains: 8 per thread, 16x unrolled -> peak FP32 issue when occupancy is full.
__global__ void ffma_independent(float* out, int iters) {
    float a[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = threadIdx.x * 1e-7f + j;
    const float b = 0.999999f, c = 1e-7f;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < 16; ++u)
#pragma unroll
            for (int j = 0; j < 8; ++j) a[j] = fmaf(a[j], b, c);
    }
    float s = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) s += a[j];
    if (s == 12345.0f) out[0] = s;  // keep the work alive
}

// The SGEMM inner loop's operand pattern: an 8x8 outer product of two register vectors
// accumulated into 64 registers (acc[m][n] += x[m] * y[n]), no memory traffic.
__global__ void ffma_outer(float* out, int iters) {
    float acc[8][8], x[8], y[8];
#pragma unroll
    for (int m = 0; m < 8; ++m) {
        x[m] = threadIdx.x * 1e-7f + m;
        y[m] = 1.0f - m * 1e-7f;
#pragma unroll
        for (int n = 0; n < 8; ++n) acc[m][n] = 0.0f;
    }
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int m = 0; m < 8; ++m)
#pragma unroll
            for (int n = 0; n < 8; ++n) acc[m][n] = fmaf(x[m], y[n], acc[m][n]);
#pragma unroll
        for (int m = 0; m < 8; ++m) { x[m] = acc[m][m] * 1e-30f + x[m]; }
    }
    keep8x8(acc, out);
}

// The same with a 16x8 thread tile (128 accumulators, as the 16x8 configurations of the ladder): more
// independent FFMAs per operand load, so the rate at few warps can differ from the 8x8 one. ~170
// registers: at most 8-12 warps fit an SM, so it is measured at 4 and 8.
__global__ void ffma_outer_16x8(float* out, int iters) {
    float acc[16][8], x[16], y[8];
#pragma unroll
    for (int m = 0; m < 16; ++m) {
        x[m] = threadIdx.x * 1e-7f + m;
#pragma unroll
        for (int n = 0; n < 8; ++n) acc[m][n] = 0.0f;
    }
#pragma unroll
    for (int n = 0; n < 8; ++n) y[n] = 1.0f - n * 1e-7f;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int m = 0; m < 16; ++m)
#pragma unroll
            for (int n = 0; n < 8; ++n) acc[m][n] = fmaf(x[m], y[n], acc[m][n]);
#pragma unroll
        for (int m = 0; m < 16; ++m) { x[m] = acc[m][m % 8] * 1e-30f + x[m]; }
    }
    float s = 0;
#pragma unroll
    for (int m = 0; m < 16; ++m)
#pragma unroll
        for (int n = 0; n < 8; ++n) s += acc[m][n];
    if (s == 12345.0f) out[0] = s;
}

// The SGEMM inner loop fed from shared memory: per k step each thread reads its 8 A and 8 B values
// as four LDS.128 (A as in bank_conflict_free's quadrant layout, broadcast along a row; B at row offsets
// b0 and b1 of a row `bw` floats wide) and accumulates the 8x8 outer product; a barrier every 8 k steps
// (one k-tile) keeps the loads in the loop. No global traffic. Shared by the two kernels below.
__device__ __forceinline__ void smem_outer_loop(const float (*As)[128], const float* Bs, int bw, int b0, int b1, int ty,
                                                int iters, float* out) {
    float acc[8][8];
#pragma unroll
    for (int m = 0; m < 8; ++m)
#pragma unroll
        for (int n = 0; n < 8; ++n) acc[m][n] = 0.0f;
    __syncthreads();
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            float x[8], y[8];
            *(float4*)&x[0] = *(const float4*)&As[k][ty * 4];
            *(float4*)&x[4] = *(const float4*)&As[k][64 + ty * 4];
            *(float4*)&y[0] = *(const float4*)&Bs[k * bw + b0];
            *(float4*)&y[4] = *(const float4*)&Bs[k * bw + b1];
#pragma unroll
            for (int m = 0; m < 8; ++m)
#pragma unroll
                for (int n = 0; n < 8; ++n) acc[m][n] = fmaf(x[m], y[n], acc[m][n]);
        }
        __syncthreads();
    }
    keep8x8(acc, out);
}

// Conflict-free B (16 consecutive bytes per lane, quadrant layout), 128-thread blocks (16 x 8 threads).
__global__ void ffma_outer_smem(float* out, int iters) {
    __shared__ __align__(16) float As[8][128];
    __shared__ __align__(16) float Bs[8][128];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    for (int i = tid; i < 8 * 128; i += blockDim.x) {
        (&As[0][0])[i] = 1.0f + i * 1e-7f;
        (&Bs[0][0])[i] = 1.0f - i * 1e-7f;
    }
    smem_outer_loop(As, &Bs[0][0], 128, tx * 4, 64 + tx * 4, ty, iters, out);
}

// The same loop with a 16x8 thread tile: per k step four LDS.128 of A (lane pairs share them, 2
// wavefronts each) and the two conflict-free LDS.128 of B (4 each) feed 128 FFMAs; how well a thread
// with twice the independent FFMAs per load hides the loads at 4 and 8 warps/SM.
__global__ void ffma_outer_smem_16x8(float* out, int iters) {
    __shared__ __align__(16) float As[8][128];
    __shared__ __align__(16) float Bs[8][128];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    for (int i = tid; i < 8 * 128; i += blockDim.x) {
        (&As[0][0])[i] = 1.0f + i * 1e-7f;
        (&Bs[0][0])[i] = 1.0f - i * 1e-7f;
    }
    float acc[16][8];
#pragma unroll
    for (int m = 0; m < 16; ++m)
#pragma unroll
        for (int n = 0; n < 8; ++n) acc[m][n] = 0.0f;
    __syncthreads();
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            float x[16], y[8];
#pragma unroll
            for (int q = 0; q < 4; ++q) *(float4*)&x[4 * q] = *(const float4*)&As[k][32 * q + ty * 4];
            *(float4*)&y[0] = *(const float4*)&Bs[k][tx * 4];
            *(float4*)&y[4] = *(const float4*)&Bs[k][64 + tx * 4];
#pragma unroll
            for (int m = 0; m < 16; ++m)
#pragma unroll
                for (int n = 0; n < 8; ++n) acc[m][n] = fmaf(x[m], y[n], acc[m][n]);
        }
        __syncthreads();
    }
    float s = 0;
#pragma unroll
    for (int m = 0; m < 16; ++m)
#pragma unroll
        for (int n = 0; n < 8; ++n) s += acc[m][n];
    if (s == 12345.0f) out[0] = s;
}

// The same with the B reads spread `sb` x 16 bytes apart (sb = 1: conflict-free, 2: two wavefronts per
// quarter-warp, 4: four), so the shared-memory pipe goes from about half busy to the bottleneck while
// the FFMA stream stays the same: how the issue and shared-memory pipes overlap when both are nearly
// full, at each warp count.
__global__ void ffma_outer_smem_sb(float* out, int iters, int sb) {
    __shared__ __align__(16) float As[8][128];
    __shared__ __align__(16) float Bs[8][512];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    for (int i = tid; i < 8 * 128; i += blockDim.x) (&As[0][0])[i] = 1.0f + i * 1e-7f;
    for (int i = tid; i < 8 * 512; i += blockDim.x) (&Bs[0][0])[i] = 1.0f - i * 1e-7f;
    smem_outer_loop(As, &Bs[0][0], 512, (tx * 4 * sb) & 511, (tx * 4 * sb + 256) & 511, ty, iters, out);
}

// Dependent FFMA latency: one chain, clock64 around it (one thread).
__global__ void ffma_latency(float* out, long long* cycles, int iters) {
    float a = threadIdx.x + 1.0f;
    const float b = 0.999999f, c = 1e-7f;
    long long t0 = clock64();
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < 64; ++u) a = fmaf(a, b, c);
    }
    long long t1 = clock64();
    out[0] = a;
    cycles[0] = t1 - t0;
}

// Pointer chase through global memory, L1 bypassed (ld.global.cg): L2 or DRAM latency.
__global__ void chase_global(const unsigned* __restrict__ next, int steps, unsigned* out, long long* cycles) {
    unsigned j = 0;
    for (int i = 0; i < 256; ++i) j = __ldcg(&next[j]);  // warm TLB / caches
    long long t0 = clock64();
    for (int i = 0; i < steps; ++i) j = __ldcg(&next[j]);
    long long t1 = clock64();
    out[0] = j;
    cycles[0] = t1 - t0;
}

// Pointer chase in shared memory: shared-memory load latency.
__global__ void chase_smem(const unsigned* __restrict__ init, int steps, unsigned* out, long long* cycles) {
    __shared__ unsigned s[1024];
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) s[i] = init[i];
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned j = 0;
        long long t0 = clock64();
        for (int i = 0; i < steps; ++i) j = s[j];
        long long t1 = clock64();
        out[0] = j;
        cycles[0] = t1 - t0;
    }
}

// Shared-memory bandwidth: conflict-free LDS.128 in a loop; bytes per clock per SM.
__global__ void smem_bandwidth(float* out, long long* cycles, int iters) {
    __shared__ float4 s[2048];
    for (int i = threadIdx.x; i < 2048; i += blockDim.x) s[i] = make_float4(i, i + 1, i + 2, i + 3);
    __syncthreads();
    float4 acc = make_float4(0, 0, 0, 0);
    long long t0 = clock64();
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            float4 v = s[(threadIdx.x + u * 128 + i) & 2047];
            acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
        }
    }
    __syncthreads();
    long long t1 = clock64();
    if (acc.x + acc.y + acc.z + acc.w == 1.2345f) out[0] = acc.x;
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

// Streaming read bandwidth (float4, grid-stride, L1 bypassed): DRAM for a buffer >> L2,
// L2 when a buffer that fits in L2 is read repeatedly.
__global__ void read_bandwidth(const float4* __restrict__ p, size_t n4, int repeats, float* out) {
    float acc = 0;
    for (int r = 0; r < repeats; ++r)
        for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
            float4 v = __ldcg(&p[i]);
            acc += v.x + v.y + v.z + v.w;
        }
    if (acc == 1.2345f) out[0] = acc;
}

// Load phase of a tile under full load: every block (256 threads) loads f4 float4 per thread from an
// L2-resident, power-of-two region (L1 bypassed), stores them to shared memory and meets at a barrier;
// thread 0 reports the cycles per phase. Launched on every SM at once, like the blocks of a GEMM.
// Addresses are masked, not reduced with a runtime modulo: the modulo's ~20 instructions per load
// doubled the phase (1,290 vs 635 cycles for 4 KB; benchmarks/load_phase_scaling.py).
__global__ void tile_phase(const float4* __restrict__ src, int f4, int iters, unsigned mask_f4, long long* cycles,
                           float* out) {
    __shared__ float4 s[2048];
    const int tid = threadIdx.x, nt = blockDim.x;
    float acc = 0.0f;
    __syncthreads();
    long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
        const unsigned base = (blockIdx.x * 8191u + (unsigned)it * 131071u) * (unsigned)(nt * 8);
        float4 v[8];
#pragma unroll
        for (int r = 0; r < 8; ++r)
            if (r < f4) v[r] = __ldcg(&src[(base + r * nt + tid) & mask_f4]);
#pragma unroll
        for (int r = 0; r < 8; ++r)
            if (r < f4) s[r * nt + tid] = v[r];
        __syncthreads();
        acc += s[(tid + it) & 2047].x;
        __syncthreads();
    }
    long long t1 = clock64();
    if (tid == 0) cycles[blockIdx.x] = (t1 - t0) / iters;
    if (acc == 1.2345f) out[0] = acc;
}

// A single-buffered GEMM k-tile loop with b blocks per SM: each iteration every thread of a 4-warp
// block loads f4 float4 of the next tile from an L2-resident region (L1 bypassed; loads = 0 takes the
// values from registers instead, keeping the stores and barriers), stores them to shared memory,
// meets at a barrier, runs `ksteps` k steps of the 8x8 outer product fed by four LDS.128, and meets
// again. Thread 0 of each block reports cycles per iteration. (full - no loads) with b blocks against
// the same with one block says how much of a lone block's exposed load phase b blocks still expose:
// 1 if they stay in lockstep, less as they drift apart and one block's compute covers another's wait.
__global__ void tile_loop(const float4* __restrict__ src, unsigned mask_f4, int f4, int ksteps, int iters, int loads,
                          long long* cycles, float* out) {
    __shared__ __align__(16) float As[32][128];
    __shared__ __align__(16) float Bs[32][128];
    const int tid = threadIdx.x, nt = blockDim.x, tx = tid % 16, ty = (tid / 16) % 8;
    for (int i = tid; i < 32 * 128; i += nt) {
        (&As[0][0])[i] = 1.0f + i * 1e-7f;
        (&Bs[0][0])[i] = 1.0f - i * 1e-7f;
    }
    float acc[8][8];
#pragma unroll
    for (int m = 0; m < 8; ++m)
#pragma unroll
        for (int n = 0; n < 8; ++n) acc[m][n] = 0.0f;
    __syncthreads();
    long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
        const unsigned base = (blockIdx.x * 8191u + (unsigned)it * 131071u) * (unsigned)(nt * 8);
        float4 v[4];
#pragma unroll
        for (int r = 0; r < 4; ++r)
            if (r < f4) v[r] = loads ? __ldcg(&src[(base + r * nt + tid) & mask_f4]) : make_float4(it, r, tid, 1.0f);
#pragma unroll
        for (int r = 0; r < 4; ++r)
            if (r < f4) ((float4*)&As[0][0])[r * nt + tid] = v[r];
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < ksteps; ++k) {
            outer8x8_step(acc, &As[k][ty * 4], &As[k][64 + ty * 4], &Bs[k][tx * 4], &Bs[k][64 + tx * 4]);
        }
        __syncthreads();
    }
    long long t1 = clock64();
    if (tid == 0) cycles[blockIdx.x] = (t1 - t0) / iters;
    keep8x8(acc, out);
}

// The double-buffered version of tile_loop: the next tile's global loads are issued before the k
// steps on the current buffer and stored to the other buffer after them, one barrier per tile.
__global__ void tile_loop_db(const float4* __restrict__ src, unsigned mask_f4, int f4, int ksteps, int iters, int loads,
                             long long* cycles, float* out) {
    __shared__ __align__(16) float As[2][16][128];
    __shared__ __align__(16) float Bs[16][128];
    const int tid = threadIdx.x, nt = blockDim.x, tx = tid % 16, ty = (tid / 16) % 8;
    for (int i = tid; i < 2 * 16 * 128; i += nt) (&As[0][0][0])[i] = 1.0f + i * 1e-7f;
    for (int i = tid; i < 16 * 128; i += nt) (&Bs[0][0])[i] = 1.0f - i * 1e-7f;
    float acc[8][8];
#pragma unroll
    for (int m = 0; m < 8; ++m)
#pragma unroll
        for (int n = 0; n < 8; ++n) acc[m][n] = 0.0f;
    __syncthreads();
    long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
        const int cur = it & 1;
        const unsigned base = (blockIdx.x * 8191u + (unsigned)it * 131071u) * (unsigned)(nt * 8);
        float4 v[4];
#pragma unroll
        for (int r = 0; r < 4; ++r)
            if (r < f4) v[r] = loads ? __ldcg(&src[(base + r * nt + tid) & mask_f4]) : make_float4(it, r, tid, 1.0f);
#pragma unroll 8
        for (int k = 0; k < ksteps; ++k) {
            outer8x8_step(acc, &As[cur][k & 15][ty * 4], &As[cur][k & 15][64 + ty * 4], &Bs[k & 15][tx * 4],
                          &Bs[k & 15][64 + tx * 4]);
        }
#pragma unroll
        for (int r = 0; r < 4; ++r)
            if (r < f4) ((float4*)&As[cur ^ 1][0][0])[(r * nt + tid) % 512] = v[r];
        __syncthreads();
    }
    long long t1 = clock64();
    if (tid == 0) cycles[blockIdx.x] = (t1 - t0) / iters;
    keep8x8(acc, out);
}

// L2 -> SM bandwidth of one SM alone (its port, not its share of the L2): one block of 1024 threads
// on one SM streams float4 from an L2-resident, power-of-two region (L1 bypassed), 8 independent
// loads per thread per iteration; thread 0 reports the cycles. Bytes per clock = 1024*128*iters / cycles.
__global__ void l2_sm_port(const float4* __restrict__ src, unsigned mask_f4, int iters, long long* cycles, float* out) {
    const unsigned tid = threadIdx.x, nt = blockDim.x;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
    long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
        const unsigned base = (unsigned)it * 8u * nt + tid;
        float4 v[8];
#pragma unroll
        for (int r = 0; r < 8; ++r) v[r] = __ldcg(&src[(base + r * nt) & mask_f4]);
#pragma unroll
        for (int r = 0; r < 8; ++r) { acc.x += v[r].x; acc.y += v[r].y; acc.z += v[r].z; acc.w += v[r].w; }
    }
    __syncthreads();
    long long t1 = clock64();
    if (acc.x + acc.y + acc.z + acc.w == 1.2345f) out[0] = acc.x;
    if (tid == 0) cycles[blockIdx.x] = t1 - t0;
}
}
