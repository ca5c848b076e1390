// The second kernel of the split-K kernels (steps 10 and 12): C[i] = W[0][i] + W[1][i] + ... + W[S-1][i]
// (W: S partials of M*N floats) in slice order, so the same inputs give the same C on every run (no atomics);
// four elements per thread where M*N is a multiple of 4 (the partials are then 16-byte aligned), else one.
// Step 13 sums inside the main kernel instead (sum_tile_if_last, below): the same sums in the same order.
// On sm_90 and newer the host launches it with programmatic stream serialization (perfmodel/measure/launch.py), so
// its launch is set up while the main kernel runs; its first instruction then waits for the main kernel's grid
// (griddepcontrol.wait: every block done, its partials visible). Launched the usual way, the wait does nothing.
#pragma once
extern "C" __global__ void __launch_bounds__(256) reduce_splits(const float* __restrict__ W, float* __restrict__ C,
                                                                long long mn, int slices) {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
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

// PTX for what step 13 needs beyond the kernels' other code (the toolkit-free build declares no more than they
// use: perfmodel/measure/cicc_prelude.h): __threadfence, atomicAdd on a counter, and loads from the L2 (ld.cg).
__device__ __forceinline__ void fence_gpu() { asm volatile("membar.gl;" ::: "memory"); }
__device__ __forceinline__ unsigned count_one(unsigned* p) {
    unsigned old;
    asm volatile("atom.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(p) : "memory");
    return old;
}
__device__ __forceinline__ float ld_cg(const float* p) {
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ float4 ld_cg4(const float* p) {
    float4 v;
    asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}

// Step 13: called by every block of the main kernel once it has stored its partial tile. The last of the
// gridDim.z slices of this block's tile to get here sums the tile's S partials in slice order into C, as
// reduce_splits does, and resets the tile's counter for the next launch (the host zeroes the counters once).
// Each thread's fence (membar.gl) orders its partial's stores before the block's count; the partials are read
// from the L2 (ld.global.cg), where the other slices' stores are, not from this SM's L1.
__device__ __noinline__ void sum_tile_if_last(const float* __restrict__ W, float* __restrict__ C, unsigned* done, int M,
                                                 int N, int bm, int bn) {
    __shared__ bool last;
    fence_gpu();
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned* count = done + blockIdx.y * gridDim.x + blockIdx.x;
        last = count_one(count) == gridDim.z - 1;
        if (last) *count = 0u;
    }
    __syncthreads();
    if (!last) return;
    fence_gpu();
    const long long mn = (long long)M * N;
    const int row0 = blockIdx.y * bm, col0 = blockIdx.x * bn, slices = gridDim.z;
    if (N % 4 == 0) {  // rows 16-byte aligned: four columns a thread (bn is a multiple of 4)
        for (int e = threadIdx.x; e < bm * bn / 4; e += blockDim.x) {
            const int r = row0 + e / (bn / 4), c = col0 + 4 * (e % (bn / 4));
            if (r >= M || c >= N) continue;
            const long long i = (long long)r * N + c;
            float4 s = ld_cg4(W + i);
#pragma unroll 4
            for (int z = 1; z < slices; ++z) {
                const float4 p = ld_cg4(W + z * mn + i);
                s.x += p.x; s.y += p.y; s.z += p.z; s.w += p.w;
            }
            *reinterpret_cast<float4*>(C + i) = s;
        }
    } else {
        for (int e = threadIdx.x; e < bm * bn; e += blockDim.x) {
            const int r = row0 + e / bn, c = col0 + e % bn;
            if (r >= M || c >= N) continue;
            const long long i = (long long)r * N + c;
            float s = ld_cg(W + i);
#pragma unroll 4
            for (int z = 1; z < slices; ++z) s += ld_cg(W + z * mn + i);
            C[i] = s;
        }
    }
}
