// split_k (kernels/10_split_k.cu) with two builds of its main kernel and four of its second, for
// benchmarks/split_k_second_kernel.py. The main kernel is step 10's, compiled from the catalogue's source
// (`sgemm_plain`), and again with one instruction at its start (`sgemm_trigger`: griddepcontrol.launch_dependents,
// which lets a kernel launched behind it with programmatic stream serialization start its blocks once every
// block of this grid has started). The sums are reduce_splits' (kernels/reduce_splits.cuh) in the same slice
// order, so every variant gives C bit for bit: `reduce_wait` waits first for the grid before it
// (griddepcontrol.wait: all its blocks done and their stores visible; a no-op in a kernel launched without the
// attribute), `reduce_wide` loads sixteen partials of its element before it adds them (one load latency for
// every sixteen slices, where reduce_splits' loop, unrolled four times, waits once every four), `reduce_wait_wide` both.
#define sgemm sgemm_plain
#include "10_split_k.cu"
#undef sgemm

extern "C" __global__ void LAUNCH_BOUNDS sgemm_trigger(const float* __restrict__ A, const float* __restrict__ B,
                                                       float* __restrict__ C, int M, int N, int K) {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    __shared__ __align__(16) float As[(1 + DOUBLE_BUFFER) * BK * BM];
    __shared__ __align__(16) float Bs[(1 + DOUBLE_BUFFER) * BK * BNS];
    C += (size_t)blockIdx.z * M * N;  // this slice's partial C
#if INNER_BODY == 4
    if (inside(BM, BN, M, N, K) && K % 4 == 0 && N % 4 == 0) body<4>(A, B, C, M, N, K, As, Bs);
#elif INNER_BODY
    if (inside(BM, BN, M, N, K)) body<1>(A, B, C, M, N, K, As, Bs);
#else
    if (interior(BM, BN, BK, M, N, K)) body<0>(A, B, C, M, N, K, As, Bs);
#endif
    else body_edge(A, B, C, M, N, K, As, Bs);
}

__device__ __forceinline__ void wait_for_grid_before() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

template <int WIDE>
__device__ __forceinline__ void sum_partials(const float* __restrict__ W, float* __restrict__ C, long long mn, int slices) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (mn % 4 == 0) {
        if (4 * i >= mn) return;
        float4 s = reinterpret_cast<const float4*>(W)[i];
        if (WIDE) {
            for (int z0 = 1; z0 < slices; z0 += 16) {
                float4 p[16];
#pragma unroll
                for (int u = 0; u < 16; ++u)
                    if (z0 + u < slices) p[u] = reinterpret_cast<const float4*>(W + (z0 + u) * mn)[i];
#pragma unroll
                for (int u = 0; u < 16; ++u)
                    if (z0 + u < slices) { s.x += p[u].x; s.y += p[u].y; s.z += p[u].z; s.w += p[u].w; }
            }
        } else {
            for (int z = 1; z < slices; ++z) {
                const float4 p = reinterpret_cast<const float4*>(W + z * mn)[i];
                s.x += p.x; s.y += p.y; s.z += p.z; s.w += p.w;
            }
        }
        reinterpret_cast<float4*>(C)[i] = s;
    } else {
        if (i >= mn) return;
        float s = W[i];
        if (WIDE) {
            for (int z0 = 1; z0 < slices; z0 += 16) {
                float p[16];
#pragma unroll
                for (int u = 0; u < 16; ++u)
                    if (z0 + u < slices) p[u] = W[(z0 + u) * mn + i];
#pragma unroll
                for (int u = 0; u < 16; ++u)
                    if (z0 + u < slices) s += p[u];
            }
        } else {
            for (int z = 1; z < slices; ++z) s += W[z * mn + i];
        }
        C[i] = s;
    }
}

extern "C" __global__ void __launch_bounds__(256) reduce_wait(const float* __restrict__ W, float* __restrict__ C,
                                                              long long mn, int slices) {
    wait_for_grid_before();
    sum_partials<0>(W, C, mn, slices);
}
extern "C" __global__ void __launch_bounds__(256) reduce_wide(const float* __restrict__ W, float* __restrict__ C,
                                                              long long mn, int slices) {
    sum_partials<1>(W, C, mn, slices);
}
extern "C" __global__ void __launch_bounds__(256) reduce_wait_wide(const float* __restrict__ W, float* __restrict__ C,
                                                                   long long mn, int slices) {
    wait_for_grid_before();
    sum_partials<1>(W, C, mn, slices);
}
