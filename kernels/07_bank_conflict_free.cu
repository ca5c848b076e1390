// Step 7: as step 6, but each thread's TMxTN tile is split into four (TM/2)x(TN/2) quadrants
// spread over the block tile, so a warp's float4 reads of B are contiguous. Seed 000 sec. 5, V2.
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
        compute_tile(As, Bs, acc, ra, rb, trow, tcol);
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

EDGE_BODY

extern "C" __global__ void __launch_bounds__(NT) sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                                       float* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[BK * BM];
    __shared__ __align__(16) float Bs[BK * BN];
    if (interior(BM, BN, BK, M, N, K)) body<false>(A, B, C, M, N, K, As, Bs);
    else body_edge(A, B, C, M, N, K, As, Bs);
}
