// A loop of BODY FFMAs in CHAINS independent chains (16 B of code each), as calibrate's instruction-fetch
// loop (perfmodel/measure/icache.cu) but with the chains a parameter: with 8 chains a warp can issue an FFMA
// every clock, with fewer it waits for its own results (the FFMA latency / CHAINS clocks an instruction).
// benchmarks/lone_fetch.py times it with one and two warps per scheduler at loop sizes in and beyond the
// instruction caches, to see how a warp's own waits and its fetch waits combine.
#ifndef BODY
#define BODY 1536
#endif
#ifndef CHAINS
#define CHAINS 8
#endif
extern "C" __global__ void fetch_loop(float* out, long long* cycles, int iters) {
    float a[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) a[j] = threadIdx.x * 1e-7f + j;
    const float b = 0.999999f, c = 1e-7f;
    __syncthreads();
    long long t0 = clock64();
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < BODY / CHAINS; ++u)
#pragma unroll
            for (int j = 0; j < CHAINS; ++j) a[j] = fmaf(a[j], b, c);
    }
    __syncthreads();
    long long t1 = clock64();
    float s = 0;
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) s += a[j];
    if (s == 12345.0f) out[0] = s;
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

// The same loop with the warps spread over it instead of in step (benchmarks/lone_fetch.py --spread): warp w of
// the block sleeps w / (warps) of `stagger` clocks (one loop's time in step) before it starts, so the warps fetch
// different parts of the loop at any moment, as the warps of a kernel's k-tile loop do once their loads have
// drifted apart. Each warp times iterations 1 to iters - 1 on its own (every warp is in its loop throughout that
// window: all start within one loop's time of each other), and writes its clocks per iteration to cycles.
// warps in groups of `group` (consecutive warps; 1: every warp on its own), group g starting g / groups of a loop
// later; a group's warps meet at a named barrier each iteration, as a block's warps meet at its barrier each k-tile
extern "C" __global__ void fetch_loop_spread(float* out, long long* cycles, int iters, long long stagger, int group) {
    float a[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) a[j] = threadIdx.x * 1e-7f + j;
    const float b = 0.999999f, c = 1e-7f;
    const int w = threadIdx.x / 32, nw = blockDim.x / 32;
    __syncthreads();
    const int g = w / group, groups = nw / group;
    const long long wait = stagger * g / groups, s = clock64();
    while (clock64() - s < wait) __nanosleep(200);
    long long t0 = 0, t1 = 0;
    for (int i = 0; i < iters; ++i) {
        if (i == 1) t0 = clock64();
        if (i == iters - 1) t1 = clock64();
        if (group > 1) asm volatile("bar.sync %0, %1;" ::"r"(g + 1), "r"(group * 32) : "memory");
#pragma unroll
        for (int u = 0; u < BODY / CHAINS; ++u)
#pragma unroll
            for (int j = 0; j < CHAINS; ++j) a[j] = fmaf(a[j], b, c);
    }
    float t = 0;
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) t += a[j];
    if (t == 12345.0f) out[0] = t;
    if (threadIdx.x % 32 == 0) cycles[blockIdx.x * nw + w] = (t1 - t0) / (iters - 2);
}
