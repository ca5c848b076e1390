// The kernel measured on 2026-12-01 (results/archive/coalesced-split-k-*-20261201-h200.*) as catalogue step 12,
// coalesced_split_k (bm, bn, splits; one k step a tile for catalogue.split_slices), launched with
// grid (ceil(N / bn), ceil(M / bm), slices) of bm * bn threads, with a zeroed counter per output tile; not kept in the catalogue (docs/measurement.md,
// "A few rows of A"). The runs 182512 and 182521 built it as below (nvcc 13.0 unrolls the k loop 4 times); the
// runs 183220 and 183228 and the second ncu record with `#pragma unroll 16` on the line before the k loop.
// Step 12: split-K for a few rows. Step 2's kernel (one thread per C element, consecutive threads along
// columns of C) over a slice of K: block z of gridDim.z = slices sums the k steps [z*T, min(K, (z+1)*T)),
// T = ceil(K / gridDim.z), into the partial W + z*M*N (the host picks gridDim.z so that no slice is empty:
// catalogue.split_slices with one k step a tile). The last of a tile's slices to arrive (a counter per
// output tile, reset by that block for the next launch) sums the tile's partials in slice order into C,
// so the same inputs give the same C on every run, without a second kernel's launch.
// Where C has a few rows (M = 1: a vector times a matrix), its N/BN x M/BM blocks hold too few warps to keep
// the loads of B in flight that DRAM's latency asks for; the slices multiply them.
#include "common.cuh"
#define SUM_BATCH 8  // partials a thread loads before it adds them (the loads of a batch are in flight together)
extern "C" __global__ void __launch_bounds__(BM * BN) sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                                            float* __restrict__ C, int M, int N, int K,
                                                            float* __restrict__ W, unsigned int* __restrict__ arrived) {
    const int n = blockIdx.x * BN + threadIdx.x % BN;
    const int m = blockIdx.y * BM + threadIdx.x / BN;
    const int per_slice = (K + gridDim.z - 1) / gridDim.z, k_first = blockIdx.z * per_slice;
    const int k_end = min(K, k_first + per_slice);
    const bool inside_c = m < M && n < N;
    const size_t mn = (size_t)M * N;
    if (inside_c) {
        float acc = 0.0f;
        for (int k = k_first; k < k_end; ++k) acc += A[IDX(m, k, K)] * B[IDX(k, n, N)];
        W[blockIdx.z * mn + IDX(m, n, N)] = acc;
    }
    __threadfence();  // this block's partials reach the L2 before it counts itself arrived
    __shared__ bool last;
    __syncthreads();
    const unsigned int tile = blockIdx.y * gridDim.x + blockIdx.x;
    if (threadIdx.x == 0) last = atomicAdd(&arrived[tile], 1u) == gridDim.z - 1;
    __syncthreads();
    if (!last) return;
    if (inside_c) {
        const float* w = W + IDX(m, n, N);
        float s = 0.0f;
        for (int z0 = 0; z0 < (int)gridDim.z; z0 += SUM_BATCH) {
            float p[SUM_BATCH];
#pragma unroll
            for (int j = 0; j < SUM_BATCH; ++j) p[j] = z0 + j < (int)gridDim.z ? __ldcg(w + (z0 + j) * mn) : 0.0f;
#pragma unroll
            for (int j = 0; j < SUM_BATCH; ++j) s += p[j];  // slice order; the zeros past the last slice add nothing
        }
        C[IDX(m, n, N)] = s;
    }
    if (threadIdx.x == 0) arrived[tile] = 0;  // ready for the next launch
}
