// Instruction-fetch microbenchmark for `perfmodel calibrate` (compiled once per -DBODY=N).
// A loop whose body is N independent FFMAs (8 chains; N x 16 bytes of code). Every SM runs the
// same loop with 16 resident warps (one 512-thread block); cycles per iteration give the issue rate (warp instructions
// per clock per SM) as a function of the loop's code size: flat while the body fits the SM's
// instruction cache, lower once every iteration refetches it.
#ifndef BODY
#define BODY 1024
#endif
extern "C" __global__ void icache_loop(float* out, long long* cycles, int iters) {
    float a[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = threadIdx.x * 1e-7f + j;
    const float b = 0.999999f, c = 1e-7f;
    __syncthreads();
    long long t0 = clock64();
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < BODY / 8; ++u)
#pragma unroll
            for (int j = 0; j < 8; ++j) a[j] = fmaf(a[j], b, c);
    }
    __syncthreads();
    long long t1 = clock64();
    float s = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) s += a[j];
    if (s == 12345.0f) out[0] = s;
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}
