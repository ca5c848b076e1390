// Step 2, coalesced: consecutive threads walk consecutive COLUMNS of C: B and C accesses of a
// warp are contiguous, A is a broadcast. Seed 001 V2 (seed 000's "naive").
#include "common.cuh"
extern "C" __global__ void __launch_bounds__(BM * BN) sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                                            float* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * BN + threadIdx.x % BN;
    const int m = blockIdx.y * BM + threadIdx.x / BN;
    if (m < M && n < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[IDX(m, k, K)] * B[IDX(k, n, N)];
        C[IDX(m, n, N)] = acc;
    }
}
