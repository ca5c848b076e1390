// Which ready warp a warp scheduler issues from (benchmarks/warp_policy.py). One block on one SM, W
// warps per scheduler; every warp runs the same loop and lane 0 records clock64() before and after it,
// with %warpid (the warp's slot: scheduler = slot % 4 on sm_70 and newer) and %smid. If the scheduler
// rotates among ready warps (loose round-robin), the warps of a scheduler finish together; if it keeps
// issuing from one warp until that warp stalls (greedy-then-oldest), they finish one after another.
//   policy_free: eight independent FFMA chains (a warp never waits on its own results)
//   policy_dep:  one dependent FFMA chain (a warp waits the FFMA latency after every instruction)
template <bool DEP>
__device__ void run(long long* out, int iters, float* sink) {
    float a[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = threadIdx.x * 1e-7f + j;
    __syncthreads();
    long long t0 = clock64();
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            if (DEP) a[0] = fmaf(a[0], 0.9999f, 1e-3f);
            else a[j] = fmaf(a[j], 0.9999f, 1e-3f);
        }
    }
    long long t1 = clock64();
    unsigned slot, sm;
    asm volatile("mov.u32 %0, %%warpid;" : "=r"(slot));
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    int w = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) {
        out[4 * w] = t0;
        out[4 * w + 1] = t1;
        out[4 * w + 2] = slot;
        out[4 * w + 3] = sm;
    }
    float s = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) s += a[j];
    if (s == 12345.0f) sink[0] = s;
}

extern "C" __global__ void policy_free(long long* out, int iters, float* sink) { run<false>(out, iters, sink); }
extern "C" __global__ void policy_dep(long long* out, int iters, float* sink) { run<true>(out, iters, sink); }
