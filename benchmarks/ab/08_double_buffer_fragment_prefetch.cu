// Step 8: step 7 + double buffering: two shared-memory buffers; the next tile's global loads go
// to registers before the current tile's math and to the other buffer after it, one barrier per
// tile. Unlike [sgemm-notes]'s V3 there is a barrier after the prologue and any number of k-tiles works.
#define NT (BM * BN / (TM * TN))
#include "tile_f4.cuh"  // compiled with -I kernels/ by benchmarks/ab_kernel.py

template <bool G>
__device__ __forceinline__ void body(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                     int M, int N, int K, float* __restrict__ As, float* __restrict__ Bs) {
    const int tid = threadIdx.x, tpr = BN / TN, tcol = tid % tpr, trow = tid / tpr;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    float ra[2][TM], rb[2][TN];  // fragments double-buffered in registers ([gemm-optimisation-2])
    float4 ga[LA], gb[LB];
    const int tiles = (K + BK - 1) / BK;
    load_tile<G>(A, B, ga, gb, row0, col0, 0, M, N, K);
    store_tile(As, Bs, ga, gb);
    __syncthreads();
    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1;
        if (t + 1 < tiles) load_tile<G>(A, B, ga, gb, row0, col0, (t + 1) * BK, M, N, K);
        const float* as = As + cur * BK * BM;
        const float* bs = Bs + cur * BK * BN;
        // fragments of step 0, then inside the loop those of step k+1 before the FFMAs of step k
#pragma unroll
        for (int h = 0; h < 2; ++h) {
#pragma unroll
            for (int i = 0; i < TM / 2; i += 4)
                *reinterpret_cast<float4*>(&ra[0][h * TM / 2 + i]) = *reinterpret_cast<const float4*>(&as[h * BM / 2 + trow * TM / 2 + i]);
#pragma unroll
            for (int j = 0; j < TN / 2; j += 4)
                *reinterpret_cast<float4*>(&rb[0][h * TN / 2 + j]) = *reinterpret_cast<const float4*>(&bs[h * BN / 2 + tcol * TN / 2 + j]);
        }
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            if (k + 1 < BK) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
#pragma unroll
                    for (int i = 0; i < TM / 2; i += 4)
                        *reinterpret_cast<float4*>(&ra[(k + 1) & 1][h * TM / 2 + i]) =
                            *reinterpret_cast<const float4*>(&as[(k + 1) * BM + h * BM / 2 + trow * TM / 2 + i]);
#pragma unroll
                    for (int j = 0; j < TN / 2; j += 4)
                        *reinterpret_cast<float4*>(&rb[(k + 1) & 1][h * TN / 2 + j]) =
                            *reinterpret_cast<const float4*>(&bs[(k + 1) * BN + h * BN / 2 + tcol * TN / 2 + j]);
                }
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += ra[k & 1][i] * rb[k & 1][j];
        }
        if (t + 1 < tiles) store_tile(As + (cur ^ 1) * BK * BM, Bs + (cur ^ 1) * BK * BN, ga, gb);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + (i / (TM / 2)) * (BM / 2) + trow * TM / 2 + i % (TM / 2);
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            store_c4<G>(C, r, col0 + (j / (TN / 2)) * (BN / 2) + tcol * TN / 2 + j % (TN / 2), &acc[i][j], M, N);
    }
}

extern "C" __global__ void __launch_bounds__(NT) sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                                       float* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[2 * BK * BM];
    __shared__ __align__(16) float Bs[2 * BK * BN];
    if (interior(BM, BN, BK, M, N, K)) body<false>(A, B, C, M, N, K, As, Bs);
    else body<true>(A, B, C, M, N, K, As, Bs);
}
