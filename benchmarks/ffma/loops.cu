// FFMA loops for benchmarks/ffma_loops.py: the SGEMM inner loop's 8x8 outer product from registers
// (acc[m][n] += x[m] * y[n]), as calibrate's ffma_outer (perfmodel/measure/microbench.cu), with the
// body unrolled U times per loop iteration (U passes per backward branch), with and without the
// loop-carried update of x from the accumulators. REG: y depends on the thread, so nvcc cannot fold it
// into immediates and every FFMA reads three registers, as SGEMM's do (calibrate's y folds).
template <int U, bool DEP, bool REG = false>
__device__ void outer(float* out, int iters) {
    float acc[8][8], x[8], y[8];
#pragma unroll
    for (int m = 0; m < 8; ++m) {
        x[m] = threadIdx.x * 1e-7f + m;
        y[m] = REG ? 1.0f - m * 1e-7f + threadIdx.x * 1e-9f : 1.0f - m * 1e-7f;
#pragma unroll
        for (int n = 0; n < 8; ++n) acc[m][n] = 0.0f;
    }
#pragma unroll 1
    for (int i = 0; i < iters; i += U) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
#pragma unroll
            for (int m = 0; m < 8; ++m)
#pragma unroll
                for (int n = 0; n < 8; ++n) acc[m][n] = fmaf(x[m], y[n], acc[m][n]);
            if (DEP) {
#pragma unroll
                for (int m = 0; m < 8; ++m) x[m] = acc[m][m] * 1e-30f + x[m];
            }
        }
    }
    float s = 0;
#pragma unroll
    for (int m = 0; m < 8; ++m)
#pragma unroll
        for (int n = 0; n < 8; ++n) s += acc[m][n];
    if (s == 12345.0f) out[0] = s;
}

extern "C" __global__ void outer_u1_dep(float* out, int iters) { outer<1, true>(out, iters); }
extern "C" __global__ void outer_u2_dep(float* out, int iters) { outer<2, true>(out, iters); }
extern "C" __global__ void outer_u4_dep(float* out, int iters) { outer<4, true>(out, iters); }
extern "C" __global__ void outer_u8_dep(float* out, int iters) { outer<8, true>(out, iters); }
extern "C" __global__ void outer_u1_free(float* out, int iters) { outer<1, false>(out, iters); }
extern "C" __global__ void outer_u2_free(float* out, int iters) { outer<2, false>(out, iters); }
extern "C" __global__ void outer_u4_free(float* out, int iters) { outer<4, false>(out, iters); }
extern "C" __global__ void outer_u1_dep_reg(float* out, int iters) { outer<1, true, true>(out, iters); }
extern "C" __global__ void outer_u2_dep_reg(float* out, int iters) { outer<2, true, true>(out, iters); }
extern "C" __global__ void outer_u4_dep_reg(float* out, int iters) { outer<4, true, true>(out, iters); }
extern "C" __global__ void outer_u1_free_reg(float* out, int iters) { outer<1, false, true>(out, iters); }
extern "C" __global__ void outer_u2_free_reg(float* out, int iters) { outer<2, false, true>(out, iters); }
extern "C" __global__ void outer_u4_free_reg(float* out, int iters) { outer<4, false, true>(out, iters); }
