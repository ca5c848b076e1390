// Step 3, shared-memory cache blocking: BM = BN = BK; each thread one C element. Seed 001 V3, 003.
#include "common.cuh"
#define NT (BM * BN)

template <bool G>
__device__ __forceinline__ void body(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                     int M, int N, int K, float* __restrict__ As, float* __restrict__ Bs) {
    const int tid = threadIdx.x, tx = tid % BN, ty = tid / BN;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int r = 0; r < BM * BK / NT; ++r) { const int e = tid + r * NT; As[e] = ld<G>(A, row0 + e / BK, k0 + e % BK, M, K); }
        for (int r = 0; r < BK * BN / NT; ++r) { const int e = tid + r * NT; Bs[e] = ld<G>(B, k0 + e / BN, col0 + e % BN, K, N); }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) acc += As[ty * BK + k] * Bs[k * BN + tx];
        __syncthreads();
    }
    if (!G) C[IDX32(row0 + ty, col0 + tx, N)] = acc;
    else if (row0 + ty < M && col0 + tx < N) C[IDX(row0 + ty, col0 + tx, N)] = acc;
}

EDGE_BODY

extern "C" __global__ void __launch_bounds__(NT) sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                                       float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    if (interior(BM, BN, BK, M, N, K)) body<false>(A, B, C, M, N, K, As, Bs);
    else body_edge(A, B, C, M, N, K, As, Bs);
}
