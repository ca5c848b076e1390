// Shared helpers for the SGEMM ladder. Row-major A (MxK), B (KxN), C (MxN), C = A.B (FP32).
// Tile sizes arrive as -D macros from KernelConfig (perfmodel/measure/build.py).
#pragma once
#define IDX(r, c, ld) ((size_t)(r) * (ld) + (c))
// 32-bit index for interior tiles: interior() guarantees every matrix has fewer than 2^31 elements
#define IDX32(r, c, ld) ((r) * (ld) + (c))

// Guarded scalar load: G=false on interior tiles (no bounds checks), zero outside the matrix.
template <bool G>
__device__ __forceinline__ float ld(const float* __restrict__ p, int r, int c, int rows, int cols) {
    if (!G) return p[IDX32(r, c, cols)];
    return (r < rows && c < cols) ? p[IDX(r, c, cols)] : 0.0f;
}

__device__ __forceinline__ float4 ld4(const float* __restrict__ p, int r, int c, int cols) {
    return *reinterpret_cast<const float4*>(&p[IDX32(r, c, cols)]);  // interior tiles only
}

// A whole block tile needs no guards when it lies inside C, K is a multiple of BK, rows of A and
// B are 16-byte aligned for float4 (K and N multiples of 4) and 32-bit indices cannot overflow.
// Edge blocks run the guarded body out of line (EDGE_BODY), so its code cannot cost the interior
// path registers or scheduling (measured: an inlined edge path cost double_buffer 3-4 % on the H100).
__device__ __forceinline__ bool interior(int bm, int bn, int bk, int M, int N, int K) {
#ifdef ASSUME_INTERIOR  // benchmark only: drop the edge path to measure what it costs on aligned sizes
    return true;
#endif
    return (blockIdx.y + 1) * bm <= M && (blockIdx.x + 1) * bn <= N && K % bk == 0 && K % 4 == 0 && N % 4 == 0 &&
           (long long)M * K < (1LL << 31) && (long long)K * N < (1LL << 31) && (long long)M * N < (1LL << 31);
}

// A block wholly inside C whose 32-bit indices cannot overflow (outer_f4.cuh's inner body: no bounds checks).
__device__ __forceinline__ bool inside(int bm, int bn, int M, int N, int K) {
    return (blockIdx.y + 1) * bm <= M && (blockIdx.x + 1) * bn <= N && (long long)M * K < (1LL << 31) &&
           (long long)K * N < (1LL << 31) && (long long)M * N < (1LL << 31);
}

// The guarded body as an out-of-line function (defined once per kernel file after its body<G>; G is
// EDGE_G where a kernel file defines it before including this file, else true).
#ifndef EDGE_G
#define EDGE_G true
#endif
#define EDGE_BODY                                                                                         \
    __device__ __noinline__ void body_edge(const float* __restrict__ A, const float* __restrict__ B,        \
                                           float* __restrict__ C, int M, int N, int K, float* As, float* Bs) { \
        body<EDGE_G>(A, B, C, M, N, K, As, Bs);                                                           \
    }
