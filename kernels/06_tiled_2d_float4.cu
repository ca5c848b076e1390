// Step 6: 2-D register tile + float4 global loads, A transposed in shared memory, float4
// shared-memory reads. Seed 000 V1 is close (it has float4 but no transpose).
#define NT (BM * BN / (TM * TN))
#include "tile_f4.cuh"

template <bool G>
__device__ __forceinline__ void body(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                     int M, int N, int K, float* __restrict__ As, float* __restrict__ Bs) {
    const int tid = threadIdx.x, tpr = BN / TN, tcol = tid % tpr, trow = tid / tpr;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    float ra[TM], rb[TN];
    float4 ga[LA], gb[LB];
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tile<G>(A, B, ga, gb, row0, col0, k0, M, N, K);
        store_tile(As, Bs, ga, gb);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; i += 4) *reinterpret_cast<float4*>(&ra[i]) = *reinterpret_cast<const float4*>(&As[k * BM + trow * TM + i]);
#pragma unroll
            for (int j = 0; j < TN; j += 4) *reinterpret_cast<float4*>(&rb[j]) = *reinterpret_cast<const float4*>(&Bs[k * BN + tcol * TN + j]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; j += 4) store_c4<G>(C, row0 + trow * TM + i, col0 + tcol * TN + j, &acc[i][j], M, N);
}

EDGE_BODY

extern "C" __global__ void __launch_bounds__(NT) sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                                       float* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[BK * BM];
    __shared__ __align__(16) float Bs[BK * BN];
    if (interior(BM, BN, BK, M, N, K)) body<false>(A, B, C, M, N, K, As, Bs);
    else body_edge(A, B, C, M, N, K, As, Bs);
}
