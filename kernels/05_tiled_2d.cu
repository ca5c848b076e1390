// Step 5, 2-D register tile: each thread a TMxTN tile of C by outer products; scalar loads,
// A kept [BM][BK] in shared memory (not transposed). Seed 004 without prefetch.
// Global loads: tile_plain.cuh (LOAD_WIDTH 1 or 4).
#define NT (BM * BN / (TM * TN))
#include "tile_plain.cuh"

template <bool G>
__device__ __forceinline__ void body(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                     int M, int N, int K, float* __restrict__ As, float* __restrict__ Bs) {
    const int tid = threadIdx.x, tpr = BN / TN, tcol = tid % tpr, trow = tid / tpr;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    float ra[TM], rb[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_plain<G>(A, B, As, Bs, tid, row0, col0, k0, M, N, K);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) ra[i] = As[(trow * TM + i) * BK + k];
#pragma unroll
            for (int j = 0; j < TN; ++j) rb[j] = Bs[k * BN + tcol * TN + j];
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
        for (int j = 0; j < TN; ++j) {
            const int r = row0 + trow * TM + i, c = col0 + tcol * TN + j;
            if (!G) C[IDX32(r, c, N)] = acc[i][j];
            else if (r < M && c < N) C[IDX(r, c, N)] = acc[i][j];
        }
}

EDGE_BODY

extern "C" __global__ void __launch_bounds__(NT) sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                                       float* __restrict__ C, int M, int N, int K) {
    __shared__ SMEM_ALIGN float As[BM * BK];
    __shared__ SMEM_ALIGN float Bs[BK * BN];
    if (interior(BM, BN, BK, M, N, K)) body<false>(A, B, C, M, N, K, As, Bs);
    else body_edge(A, B, C, M, N, K, As, Bs);
}
