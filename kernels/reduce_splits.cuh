// The second kernel of the split-K kernels (steps 10 and 12): C[i] = W[0][i] + W[1][i] + ... + W[S-1][i]
// (W: S partials of M*N floats) in slice order, so the same inputs give the same C on every run (no atomics);
// four elements per thread where M*N is a multiple of 4 (the partials are then 16-byte aligned), else one.
#pragma once
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
