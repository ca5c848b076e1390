// Step 12, coalesced_split_k: step 2's kernel over slices of K, for products with a few rows of A (a batch of
// tokens times a weight matrix): one thread per C element, threads along columns of C, and block z of
// gridDim.z = slices sums the k range [z*T, (z+1)*T), T = ceil(K / slices), into the partial C + z*M*N;
// reduce_splits sums the partials in slice order (deterministic). With a few rows the output has too few
// elements to keep the SMs' loads in flight; the slices multiply the threads (catalogue.split_slices with
// one k step a tile: the host's slices are ceil(K / ceil(K / splits)), so no slice is empty).
#include "common.cuh"
#include "reduce_splits.cuh"
extern "C" __global__ void __launch_bounds__(BM * BN) sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                                            float* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * BN + threadIdx.x % BN;
    const int m = blockIdx.y * BM + threadIdx.x / BN;
    const int per = (K + gridDim.z - 1) / gridDim.z, k_first = blockIdx.z * per, k_end = min(K, k_first + per);
    if (m < M && n < N) {
        float acc = 0.0f;
        for (int k = k_first; k < k_end; ++k) acc += A[IDX(m, k, K)] * B[IDX(k, n, N)];
        C[(size_t)blockIdx.z * M * N + IDX(m, n, N)] = acc;
    }
}
