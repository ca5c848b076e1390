// The SM clock an FFMA-bound loop runs at (benchmarks/ffma_clock.py): calibrate's 8x8 outer product from
// registers (benchmarks/ffma/loops.cu, two passes per branch, x updated; REG: y in registers, three
// register operands per FFMA) timed inside the kernel by the SM's cycle counter (clock64) and by the
// GPU's nanosecond timer (%globaltimer): each block records both around its loop, so cycles / ns is the
// clock its SM ran at while every SM ran the loop.
template <bool REG>
__device__ void outer_clock(float* out, long long* rec, int iters) {
    float acc[8][8], x[8], y[8];
#pragma unroll
    for (int m = 0; m < 8; ++m) {
        x[m] = threadIdx.x * 1e-7f + m;
        y[m] = REG ? 1.0f - m * 1e-7f + threadIdx.x * 1e-9f : 1.0f - m * 1e-7f;
#pragma unroll
        for (int n = 0; n < 8; ++n) acc[m][n] = 0.0f;
    }
    __syncthreads();
    unsigned long long t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    const long long c0 = clock64();
#pragma unroll 1
    for (int i = 0; i < iters; i += 2) {
#pragma unroll
        for (int u = 0; u < 2; ++u) {
#pragma unroll
            for (int m = 0; m < 8; ++m)
#pragma unroll
                for (int n = 0; n < 8; ++n) acc[m][n] = fmaf(x[m], y[n], acc[m][n]);
#pragma unroll
            for (int m = 0; m < 8; ++m) x[m] = acc[m][m] * 1e-30f + x[m];
        }
    }
    __syncthreads();
    const long long c1 = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    if (threadIdx.x == 0) {
        rec[2 * blockIdx.x] = c1 - c0;
        rec[2 * blockIdx.x + 1] = (long long)(t1 - t0);
    }
    float s = 0;
#pragma unroll
    for (int m = 0; m < 8; ++m)
#pragma unroll
        for (int n = 0; n < 8; ++n) s += acc[m][n];
    if (s == 12345.0f) out[0] = s;
}

extern "C" __global__ void outer_clock_imm(float* out, long long* rec, int iters) { outer_clock<false>(out, rec, iters); }
extern "C" __global__ void outer_clock_reg(float* out, long long* rec, int iters) { outer_clock<true>(out, rec, iters); }
