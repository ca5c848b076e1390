// Step 10: split-K. Step 8's kernel (quadrants, double buffering) over a slice of K: block z of
// gridDim.z = slices computes its k-tiles into a partial C (outer_f4.cuh, SPLIT_K), and a second
// kernel sums the slices' partials in slice order, so the same inputs give the same C on every run
// (no atomics). Where the output has fewer tiles than the SMs hold, the slices fill them.
#ifndef THREAD_TILE
#define THREAD_TILE 1
#endif
#ifndef DOUBLE_BUFFER
#define DOUBLE_BUFFER 1
#endif
#define SPLIT_K 1
#include "outer_f4.cuh"

// C[i] = W[0][i] + W[1][i] + ... + W[S-1][i] (W: S partials of M*N floats), four elements per thread
// where M*N is a multiple of 4 (the partials are then 16-byte aligned), else one.
extern "C" __global__ void __launch_bounds__(256) reduce_splits(const float* __restrict__ W, float* __restrict__ C,
                                                                long long mn, int slices) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (mn % 4 == 0) {
        if (4 * i >= mn) return;
        float4 s = reinterpret_cast<const float4*>(W)[i];
        for (int z = 1; z < slices; ++z) {
            const float4 p = reinterpret_cast<const float4*>(W + z * mn)[i];
            s.x += p.x; s.y += p.y; s.z += p.z; s.w += p.w;
        }
        reinterpret_cast<float4*>(C)[i] = s;
    } else {
        if (i >= mn) return;
        float s = W[i];
        for (int z = 1; z < slices; ++z) s += W[z * mn + i];
        C[i] = s;
    }
}
