// Shared helpers for the SGEMM ladder. Row-major A (MxK), B (KxN), C (MxN), C = A.B (FP32).
// Tile sizes arrive as -D macros from KernelConfig (perfmodel/measure/build.py).
#pragma once
#define IDX(r, c, ld) ((size_t)(r) * (ld) + (c))

// Guarded scalar load: G=false on interior tiles (no bounds checks), zero outside the matrix.
template <bool G>
__device__ __forceinline__ float ld(const float* __restrict__ p, int r, int c, int rows, int cols) {
    return (!G || (r < rows && c < cols)) ? p[IDX(r, c, cols)] : 0.0f;
}

__device__ __forceinline__ float4 ld4(const float* __restrict__ p, int r, int c, int cols) {
#ifdef INT_INDEX  // benchmark variant: 32-bit index arithmetic (valid below 2^31 elements)
    return *reinterpret_cast<const float4*>(&p[r * cols + c]);
#else
    return *reinterpret_cast<const float4*>(&p[IDX(r, c, cols)]);
#endif
}

// A whole block tile needs no guards when it lies inside C, K is a multiple of BK, and rows
// of A and B are 16-byte aligned for float4 (K and N multiples of 4).
__device__ __forceinline__ bool interior(int bm, int bn, int bk, int M, int N, int K) {
#ifdef ASSUME_INTERIOR  // benchmark only: drop the edge path to measure what it costs on aligned sizes
    return true;
#endif
    return (blockIdx.y + 1) * bm <= M && (blockIdx.x + 1) * bn <= N && K % bk == 0 && K % 4 == 0 && N % 4 == 0;
}
