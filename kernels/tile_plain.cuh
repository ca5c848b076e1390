// Global -> shared loads of steps 4 and 5: A tile stored As[BM][BK], B tile Bs[BK][BN], both as
// loaded. Needs NT (threads). LOAD_WIDTH (floats per global load): 1 (default) or 4 (float4; A
// read along k; set with -D by KernelConfig).
#pragma once
#include "common.cuh"
#ifndef LOAD_WIDTH
#define LOAD_WIDTH 1
#endif
#if LOAD_WIDTH == 4
#define SMEM_ALIGN __align__(16)
#else
#define SMEM_ALIGN
#endif

template <bool G>
__device__ __forceinline__ void load_plain(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ As,
                                           float* __restrict__ Bs, int tid, int row0, int col0, int k0, int M, int N, int K) {
#if LOAD_WIDTH == 4
#pragma unroll
    for (int r = 0; r < BM * BK / (4 * NT); ++r) {
        const int e = tid + r * NT, row = e / (BK / 4), c = (e % (BK / 4)) * 4;
        *reinterpret_cast<float4*>(&As[row * BK + c]) =
            G ? make_float4(ld<true>(A, row0 + row, k0 + c, M, K), ld<true>(A, row0 + row, k0 + c + 1, M, K),
                            ld<true>(A, row0 + row, k0 + c + 2, M, K), ld<true>(A, row0 + row, k0 + c + 3, M, K))
              : ld4(A, row0 + row, k0 + c, K);
    }
#pragma unroll
    for (int r = 0; r < BK * BN / (4 * NT); ++r) {
        const int e = tid + r * NT, row = e / (BN / 4), c = (e % (BN / 4)) * 4;
        *reinterpret_cast<float4*>(&Bs[row * BN + c]) =
            G ? make_float4(ld<true>(B, k0 + row, col0 + c, K, N), ld<true>(B, k0 + row, col0 + c + 1, K, N),
                            ld<true>(B, k0 + row, col0 + c + 2, K, N), ld<true>(B, k0 + row, col0 + c + 3, K, N))
              : ld4(B, k0 + row, col0 + c, N);
    }
#else
#pragma unroll
    for (int r = 0; r < BM * BK / NT; ++r) { const int e = tid + r * NT; As[e] = ld<G>(A, row0 + e / BK, k0 + e % BK, M, K); }
#pragma unroll
    for (int r = 0; r < BK * BN / NT; ++r) { const int e = tid + r * NT; Bs[e] = ld<G>(B, k0 + e / BN, col0 + e % BN, K, N); }
#endif
}
