// A single-buffered k-tile loop of one 256-thread block (8 warps) whose 8 KB tile comes from global memory
// in one of four ways, with and without the loads (benchmarks/tile_lines.py): what a lone block's load
// phase exposes as a function of how the tile is loaded. The compute phase is calibrate's tile_loop's
// (perfmodel/measure/microbench.cu): ksteps of the shared-memory-fed 8x8 outer product.
//   PATTERN 0: float4, contiguous 8 KB                       (2 LDG.128 per thread,  64 lines)
//   PATTERN 1: scalar, contiguous 8 KB                       (8 LDG.32 per thread,   64 lines)
//   PATTERN 2: scalar, tiled_2d's 128 x 8 A and 8 x 128 B    (8 LDG.32 per thread,  160 lines)
//   PATTERN 3: float4, the same 128 x 8 A and 8 x 128 B      (2 LDG.128 per thread, 160 lines)
//   PATTERN 4: float4, a 256 x 8 A and 8 x 128 B tile (12 KB) (3 LDG.128 per thread, 288 lines)
//   PATTERN 5: float4, contiguous 12 KB                       (3 LDG.128 per thread,  96 lines)
//   PATTERN 6: float4, a 128 x 32 A and 32 x 128 B tile (32 KB, whole lines) (8 LDG.128 per thread, 256 lines)
//   PATTERN 7: float4, contiguous 32 KB                       (8 LDG.128 per thread, 256 lines)
// Each block addresses its data as block g = blockIdx.x % groups would (groups: how many distinct tiles
// the SMs load at once; the SMs of one group ask for the same lines at the same time), over rows `pitch`
// floats long (4096: a 4096 x 4096 problem's A and B).
// Patterns 0, 1, 5 and 7 start each iteration's tile a tile before the last one's, block b 8191 tiles
// after block b - 1. Patterns 4 and 6 walk A and B as patterns 2 and 3 do, with 256 rows of A (4) or 32
// columns of A and rows of B per iteration (6). Patterns 2 and 3 walk as tiled_2d does over 4096-column matrices: block b owns rows
// 128 b .. 128 b + 127 of A and columns 128 (b % 32) .. of B; iteration t loads A's columns 8 t .. 8 t + 7
// (the next 32 bytes of each row: a 128-byte line serves four iterations) and B's rows 8 t .. 8 t + 7
// (B placed 512 MB into the region). Every address is reduced into the region by a mask: a 1 GB region
// holds each block's A rows apart (2 MB each), a 32 MB one folds them onto each other (L2-resident).
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

template <int PATTERN>
__host__ __device__ constexpr int tile_floats() { return PATTERN == 4 || PATTERN == 5 ? 12 : PATTERN >= 6 ? 32 : 8; }

template <int PATTERN>
__device__ __forceinline__ void load_tile(const float* __restrict__ src, unsigned mask, int tid, int it, int loads,
                                          unsigned g, unsigned pitch, float (&v)[tile_floats<PATTERN>()]) {
    const float4* s4 = reinterpret_cast<const float4*>(src);
    if (PATTERN == 5 || PATTERN == 7) {
        constexpr int NV = tile_floats<PATTERN>() / 4;
        const unsigned b0 = (g * 8191u + (unsigned)it * 131071u) * (1024u * NV);
#pragma unroll
        for (int r = 0; r < NV; ++r) {
            const float4 x = loads ? __ldcg(&s4[((b0 >> 2) + r * 256 + tid) & (mask >> 2)]) : make_float4(it, r, tid, 1.0f);
            v[4 * r] = x.x; v[4 * r + 1] = x.y; v[4 * r + 2] = x.z; v[4 * r + 3] = x.w;
        }
    } else if (PATTERN == 4 || PATTERN == 6) {
        constexpr int BK = PATTERN == 4 ? 8 : 32, BM = PATTERN == 4 ? 256 : 128, NA = BM * BK / 4 / 256;
        const unsigned a0 = g * (unsigned)BM * pitch + ((unsigned)it * BK) % pitch;
        const unsigned bb = (1u << 27) + (((unsigned)it * BK) % pitch) * pitch + (g % (pitch / 128u)) * 128u;
#pragma unroll
        for (int r = 0; r < tile_floats<PATTERN>() / 4; ++r) {
            const unsigned ja = tid + r * 256u, jb = tid + (r - NA) * 256u;  // the r-th float4: A's first, then B's
            const unsigned idx = r < NA ? a0 + (ja / (BK / 4)) * pitch + (ja % (BK / 4)) * 4u
                                        : bb + (jb / 32u) * pitch + (jb % 32u) * 4u;
            const float4 x = loads ? __ldcg(&s4[(idx & mask) >> 2]) : make_float4(it, r, tid, 1.0f);
            v[4 * r] = x.x; v[4 * r + 1] = x.y; v[4 * r + 2] = x.z; v[4 * r + 3] = x.w;
        }
    } else if (PATTERN == 0 || PATTERN == 1) {
        const unsigned b0 = (g * 8191u + (unsigned)it * 131071u) * 2048u;
        if (PATTERN == 0) {
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const float4 x = loads ? __ldcg(&s4[((b0 >> 2) + r * 256 + tid) & (mask >> 2)]) : make_float4(it, r, tid, 1.0f);
                v[4 * r] = x.x; v[4 * r + 1] = x.y; v[4 * r + 2] = x.z; v[4 * r + 3] = x.w;
            }
        } else {
#pragma unroll
            for (int r = 0; r < 8; ++r) v[r] = loads ? __ldcg(&src[(b0 + r * 256 + tid) & mask]) : (float)(it + r + tid);
        }
    } else {
        const unsigned a0 = g * 128u * pitch + ((unsigned)it * 8u) % pitch;                     // A[128 g][8 t]
        const unsigned bb = (1u << 27) + (((unsigned)it * 8u) % pitch) * pitch + (g % (pitch / 128u)) * 128u;  // B[8 t][128 g]
        if (PATTERN == 3) {
            const unsigned ia = a0 + (tid / 2) * pitch + (tid % 2) * 4u, ib = bb + (tid / 32) * pitch + (tid % 32) * 4u;
            const float4 x = loads ? __ldcg(&s4[(ia & mask) >> 2]) : make_float4(it, 0, tid, 1.0f);
            const float4 y = loads ? __ldcg(&s4[(ib & mask) >> 2]) : make_float4(it, 1, tid, 1.0f);
            v[0] = x.x; v[1] = x.y; v[2] = x.z; v[3] = x.w; v[4] = y.x; v[5] = y.y; v[6] = y.z; v[7] = y.w;
        } else {
#pragma unroll
            for (int r = 0; r < 8; ++r) {
                const unsigned e = tid + (r % 4) * 256u;
                const unsigned i = r < 4 ? a0 + (e / 8) * pitch + e % 8 : bb + (e / 128) * pitch + e % 128;
                v[r] = loads ? __ldcg(&src[i & mask]) : (float)(it + r + tid);
            }
        }
    }
}

template <int PATTERN>
__device__ void tile_lines(const float* __restrict__ src, unsigned mask, int ksteps, int iters, int loads,
                           unsigned groups, unsigned pitch, long long* cycles, float* out) {
    __shared__ __align__(16) float S[2][32][128];
    float (&As)[32][128] = S[0];
    float (&Bs)[32][128] = S[1];
    const int tid = threadIdx.x, tx = tid % 16, ty = (tid / 16) % 8;
    for (int i = tid; i < 32 * 128; i += 256) {
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
        float v[tile_floats<PATTERN>()];
        load_tile<PATTERN>(src, mask, tid, it, loads, blockIdx.x % groups, pitch, v);
#pragma unroll
        for (int r = 0; r < tile_floats<PATTERN>(); ++r) (&S[0][0][0])[r * 256 + tid] = v[r];
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < ksteps; ++k) outer8x8_step(acc, &As[k][ty * 4], &As[k][64 + ty * 4], &Bs[k][tx * 4], &Bs[k][64 + tx * 4]);
        __syncthreads();
    }
    long long t1 = clock64();
    if (tid == 0) cycles[blockIdx.x] = (t1 - t0) / iters;
    float s = 0;
#pragma unroll
    for (int m = 0; m < 8; ++m)
#pragma unroll
        for (int n = 0; n < 8; ++n) s += acc[m][n];
    if (s == 12345.0f) out[0] = s;
}

#define KERNEL(P)                                                                                                 \
    extern "C" __global__ void __launch_bounds__(256) tile_lines_##P(const float* __restrict__ src, unsigned mask, \
                                                                     int ksteps, int iters, int loads,            \
                                                                     unsigned groups, unsigned pitch,             \
                                                                     long long* cycles, float* out) {             \
        tile_lines<P>(src, mask, ksteps, iters, loads, groups, pitch, cycles, out);                               \
    }
KERNEL(0)
KERNEL(1)
KERNEL(2)
KERNEL(3)
KERNEL(4)
KERNEL(5)
KERNEL(6)
KERNEL(7)
