// Step 8: step 7 + double buffering: two shared-memory buffers; the next tile's global loads go
// to registers before the current tile's math and to the other buffer after it, one barrier per
// tile. Unlike seed 000's V3 there is a barrier after the prologue and any number of k-tiles works.
#define NT (BM * BN / (TM * TN))
// ask nvcc for two resident blocks where 128 registers per thread can hold the tile (seed 000 caps at 128)
#define MIN_BLOCKS (NT <= 256 && TM * TN <= 64 ? 2 : 1)
#include "tile_f4.cuh"

template <bool G>
__device__ __forceinline__ void body(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                     int M, int N, int K, float* __restrict__ As, float* __restrict__ Bs) {
    const int tid = threadIdx.x, tpr = BN / TN, tcol = tid % tpr, trow = tid / tpr;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    float ra[TM], rb[TN];
    float4 ga[LA], gb[LB];
    const int tiles = (K + BK - 1) / BK;
    load_tile<G>(A, B, ga, gb, row0, col0, 0, M, N, K);
    store_tile(As, Bs, ga, gb);
    __syncthreads();
    // steady state without branches (seed 000 V3's shape): load tile t, compute tile t-1, store
    // tile t into the other buffer, one barrier; the last tile is computed after the loop
    for (int t = 1; t < tiles; ++t) {
        const int cur = (t - 1) & 1;
        load_tile<G>(A, B, ga, gb, row0, col0, t * BK, M, N, K);
        compute_tile(As + cur * BK * BM, Bs + cur * BK * BN, acc, ra, rb, trow, tcol);
        store_tile(As + (cur ^ 1) * BK * BM, Bs + (cur ^ 1) * BK * BN, ga, gb);
        __syncthreads();
    }
    compute_tile(As + ((tiles - 1) & 1) * BK * BM, Bs + ((tiles - 1) & 1) * BK * BN, acc, ra, rb, trow, tcol);
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + (i / (TM / 2)) * (BM / 2) + trow * TM / 2 + i % (TM / 2);
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            store_c4<G>(C, r, col0 + (j / (TN / 2)) * (BN / 2) + tcol * TN / 2 + j % (TN / 2), &acc[i][j], M, N);
    }
}

EDGE_BODY

extern "C" __global__ void __launch_bounds__(NT, MIN_BLOCKS) sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                                       float* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[2 * BK * BM];
    __shared__ __align__(16) float Bs[2 * BK * BN];
    if (interior(BM, BN, BK, M, N, K)) body<false>(A, B, C, M, N, K, As, Bs);
    else body_edge(A, B, C, M, N, K, As, Bs);
}
