// Step 11 (compute capability 8.0 and newer): step 9's warp tiles fed by asynchronous copies. Global ->
// shared copies go through cp.async (no staging registers) into a ring of STAGES buffers: while a block
// computes tile t, tiles t+1 .. t+STAGES-1 are in flight; one barrier per tile. A is stored as loaded,
// As[BM][BK + 4] (16-byte copies cannot transpose; the 4-float pad spreads the rows a warp reads over the
// banks), B as Bs[BK][BN]. Interior blocks copy 16 bytes at a time; edge blocks copy 4 and fill zeros
// beyond the matrix (cp.async's source size 0).
#define NT ((BM / WM) * (BN / WN) * 32)
#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)
#ifndef STAGES
#define STAGES 3
#endif
#define AS (BK + 4)  // row stride of As (floats)
#include "tile_f4.cuh"

__device__ __forceinline__ unsigned smem_addr(const void* p) {  // generic -> shared window address
    unsigned a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
__device__ __forceinline__ void copy16(float* dst, const float* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst)), "l"(src));
}
__device__ __forceinline__ void copy4(float* dst, const float* src, bool inside) {  // zeros where !inside
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(smem_addr(dst)), "l"(src), "r"(inside ? 4 : 0));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void wait_pending() { asm volatile("cp.async.wait_group %0;" ::"n"(N)); }

// Issue the copies of k-tile k0 into one stage (every thread its share; nothing waits here).
template <bool G>
__device__ __forceinline__ void copy_tile(const float* __restrict__ A, const float* __restrict__ B, float* as, float* bs,
                                          int row0, int col0, int k0, int M, int N, int K) {
    const int tid = threadIdx.x;
    if (!G) {
#pragma unroll
        for (int r = 0; r < BM * BK / (4 * NT); ++r) {
            const int e = tid + r * NT, row = e / (BK / 4), c = (e % (BK / 4)) * 4;
            copy16(&as[row * AS + c], &A[IDX32(row0 + row, k0 + c, K)]);
        }
#pragma unroll
        for (int r = 0; r < BK * BN / (4 * NT); ++r) {
            const int e = tid + r * NT, row = e / (BN / 4), c = (e % (BN / 4)) * 4;
            copy16(&bs[row * BN + c], &B[IDX32(k0 + row, col0 + c, N)]);
        }
    } else {
#pragma unroll
        for (int r = 0; r < BM * BK / NT; ++r) {
            const int e = tid + r * NT, row = e / BK, c = e % BK;
            const bool in = row0 + row < M && k0 + c < K;
            copy4(&as[row * AS + c], in ? &A[IDX(row0 + row, k0 + c, K)] : A, in);
        }
#pragma unroll
        for (int r = 0; r < BK * BN / NT; ++r) {
            const int e = tid + r * NT, row = e / BN, c = e % BN;
            const bool in = k0 + row < K && col0 + c < N;
            copy4(&bs[row * BN + c], in ? &B[IDX(k0 + row, col0 + c, N)] : B, in);
        }
    }
}

template <bool G>
__device__ __forceinline__ void body(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                     int M, int N, int K, float* __restrict__ As, float* __restrict__ Bs) {
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wrow = warp / (BN / WN), wcol = warp % (BN / WN);
    const int trow = lane / (WSUBN / TN), tcol = lane % (WSUBN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[WMITER * TM][WNITER * TN] = {{0.0f}};
    float ra[WMITER * TM], rb[WNITER * TN];
    const int tiles = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {  // the first STAGES - 1 tiles in flight
        if (s < tiles) copy_tile<G>(A, B, As + s * BM * AS, Bs + s * BK * BN, row0, col0, s * BK, M, N, K);
        commit();
    }
    for (int t = 0; t < tiles; ++t) {
        wait_pending<STAGES - 2>();  // this thread's copies of tile t have landed
        __syncthreads();             // everyone's have, and everyone is done with tile t - 1, whose stage is refilled next
        const int next = t + STAGES - 1;
        if (next < tiles)
            copy_tile<G>(A, B, As + (next % STAGES) * BM * AS, Bs + (next % STAGES) * BK * BN, row0, col0, next * BK, M, N, K);
        commit();  // a group per tile, empty at the end, so that wait_pending counts tiles
        const float* as = As + (t % STAGES) * BM * AS;
        const float* bs = Bs + (t % STAGES) * BK * BN;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int wi = 0; wi < WMITER; ++wi)
#pragma unroll
                for (int i = 0; i < TM; ++i) ra[wi * TM + i] = as[(wrow * WM + wi * WSUBM + trow * TM + i) * AS + k];
#pragma unroll
            for (int wj = 0; wj < WNITER; ++wj)
#pragma unroll
                for (int j = 0; j < TN; j += 4)
                    *reinterpret_cast<float4*>(&rb[wj * TN + j]) =
                        *reinterpret_cast<const float4*>(&bs[k * BN + wcol * WN + wj * WSUBN + tcol * TN + j]);
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
                for (int j = 0; j < WNITER * TN; ++j) acc[i][j] += ra[i] * rb[j];
        }
    }
#pragma unroll
    for (int wi = 0; wi < WMITER; ++wi)
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int wj = 0; wj < WNITER; ++wj)
#pragma unroll
                for (int j = 0; j < TN; j += 4)
                    store_c4<G ? 2 : 0>(C, row0 + wrow * WM + wi * WSUBM + trow * TM + i, col0 + wcol * WN + wj * WSUBN + tcol * TN + j,
                                &acc[wi * TM + i][wj * TN + j], M, N);
}

EDGE_BODY

extern "C" __global__ void __launch_bounds__(NT) sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                                       float* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[STAGES * BM * AS];
    __shared__ __align__(16) float Bs[STAGES * BK * BN];
    if (interior(BM, BN, BK, M, N, K)) body<false>(A, B, C, M, N, K, As, Bs);
    else body_edge(A, B, C, M, N, K, As, Bs);
}
