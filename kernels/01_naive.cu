// Step 1, naive: one thread per C element; consecutive threads walk consecutive ROWS of C,
// so a warp's loads of A are 32 different rows (uncoalesced). Seed 001 V1.
#include "common.cuh"
extern "C" __global__ void __launch_bounds__(BM * BN) sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                                            float* __restrict__ C, int M, int N, int K) {
    const int m = blockIdx.y * BM + threadIdx.x % BM;
    const int n = blockIdx.x * BN + threadIdx.x / BM;
    if (m < M && n < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[IDX(m, k, K)] * B[IDX(k, n, N)];
        C[IDX(m, n, N)] = acc;
    }
}
