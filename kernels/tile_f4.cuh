// Global->register->shared staging for the float4 kernels (steps 6-9). Needs NT (threads).
// A tile (BM x BK) is read as float4 along k and stored TRANSPOSED as As[BK][BM] (four scalar
// stores); B tile (BK x BN) is read and stored as float4, Bs[BK][BN].
#pragma once
#include "common.cuh"
#define LA (BM * BK / (4 * NT))
#define LB (BK * BN / (4 * NT))

template <bool G>
__device__ __forceinline__ void load_tile(const float* __restrict__ A, const float* __restrict__ B, float4 (&ra)[LA],
                                          float4 (&rb)[LB], int row0, int col0, int k0, int M, int N, int K) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int r = 0; r < LA; ++r) {
        const int e = tid + r * NT, row = row0 + e / (BK / 4), c = k0 + (e % (BK / 4)) * 4;
        ra[r] = G ? make_float4(ld<true>(A, row, c, M, K), ld<true>(A, row, c + 1, M, K), ld<true>(A, row, c + 2, M, K),
                                ld<true>(A, row, c + 3, M, K))
                  : ld4(A, row, c, K);
    }
#pragma unroll
    for (int r = 0; r < LB; ++r) {
        const int e = tid + r * NT, row = k0 + e / (BN / 4), c = col0 + (e % (BN / 4)) * 4;
        rb[r] = G ? make_float4(ld<true>(B, row, c, K, N), ld<true>(B, row, c + 1, K, N), ld<true>(B, row, c + 2, K, N),
                                ld<true>(B, row, c + 3, K, N))
                  : ld4(B, row, c, N);
    }
}

__device__ __forceinline__ void store_tile(float* __restrict__ As, float* __restrict__ Bs, const float4 (&ra)[LA],
                                           const float4 (&rb)[LB]) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int r = 0; r < LA; ++r) {
        const int e = tid + r * NT, row = e / (BK / 4), c = (e % (BK / 4)) * 4;
        As[(c + 0) * BM + row] = ra[r].x;
        As[(c + 1) * BM + row] = ra[r].y;
        As[(c + 2) * BM + row] = ra[r].z;
        As[(c + 3) * BM + row] = ra[r].w;
    }
#pragma unroll
    for (int r = 0; r < LB; ++r) {
        const int e = tid + r * NT;
        *reinterpret_cast<float4*>(&Bs[(e / (BN / 4)) * BN + (e % (BN / 4)) * 4]) = rb[r];
    }
}

// One k-tile of outer products from shared memory, each thread's TMxTN tile split into four
// (TM/2)x(TN/2) quadrants spread over the block tile (steps 7 and 8). As is [BK][BM], Bs [BK][BN].
__device__ __forceinline__ void compute_tile(const float* __restrict__ as, const float* __restrict__ bs, float (&acc)[TM][TN],
                                             float (&ra)[TM], float (&rb)[TN], int trow, int tcol) {
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int i = 0; i < TM / 2; i += 4)
                *reinterpret_cast<float4*>(&ra[h * TM / 2 + i]) = *reinterpret_cast<const float4*>(&as[k * BM + h * BM / 2 + trow * TM / 2 + i]);
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int j = 0; j < TN / 2; j += 4)
                *reinterpret_cast<float4*>(&rb[h * TN / 2 + j]) = *reinterpret_cast<const float4*>(&bs[k * BN + h * BN / 2 + tcol * TN / 2 + j]);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] += ra[i] * rb[j];
    }
}

// Store four consecutive C values of one row (float4 on interior tiles).
template <bool G>
__device__ __forceinline__ void store_c4(float* __restrict__ C, int r, int c, const float* v, int M, int N) {
    if (!G) {
        *reinterpret_cast<float4*>(&C[IDX32(r, c, N)]) = make_float4(v[0], v[1], v[2], v[3]);
    } else if (r < M) {
#pragma unroll
        for (int q = 0; q < 4; ++q)
            if (c + q < N) C[IDX(r, c + q, N)] = v[q];
    }
}
