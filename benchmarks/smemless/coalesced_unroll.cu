// The coalesced kernel's k loop (kernels/02_coalesced.cu) with its unroll factor as a template
// parameter, to see whether the loads a pass keeps in flight set its time per k step
// (benchmarks/coalesced_unroll.py). M rows of C, blocks of 32 x 32 threads: warp w of block (bx, by)
// computes row by * 32 + w, columns bx * 32 + lane, as the catalogue's coalesced kernel does.
template <int U>
__global__ void __launch_bounds__(1024) coalesced(const float* __restrict__ A, const float* __restrict__ B,
                                                  float* __restrict__ C, int M, int N, int K) {
    const int n = blockIdx.x * 32 + threadIdx.x % 32;
    const int m = blockIdx.y * 32 + threadIdx.x / 32;
    if (m >= M || n >= N) return;
    const float* a = A + (size_t)m * K;
    const float* b = B + n;
    float acc = 0.0f;
#pragma unroll U
    for (int k = 0; k < K; ++k) acc += a[k] * b[(size_t)k * N];
    C[(size_t)m * N + n] = acc;
}
template __global__ void coalesced<1>(const float*, const float*, float*, int, int, int);
template __global__ void coalesced<2>(const float*, const float*, float*, int, int, int);
template __global__ void coalesced<4>(const float*, const float*, float*, int, int, int);
template __global__ void coalesced<8>(const float*, const float*, float*, int, int, int);
template __global__ void coalesced<16>(const float*, const float*, float*, int, int, int);
template __global__ void coalesced<32>(const float*, const float*, float*, int, int, int);
