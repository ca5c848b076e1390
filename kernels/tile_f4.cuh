// Global->register->shared staging and fragment reads for the register-tile kernels (steps 6-9).
// Needs NT (threads). The design choices are macros with the defaults of steps 6 and 9; a step file
// sets its own before including this header, KernelConfig sets non-default ones with -D:
//   LOAD_WIDTH   floats per global load: 4 (float4, A read along k) or 1 (scalar)
//   A_TRANSPOSED 1: A tile stored As[BK][BM] (scalar stores); 0: As[BM][BK] as loaded
//   FRAG_WIDTH   floats per shared-memory fragment read: 4 (float4) or 1 (scalar)
//   B_LAYOUT     0 plain Bs[BK][BN]; 1 padded Bs[BK][BN + B_PAD]; 2 permuted: within each row a
//                thread's TN values lie BN/TN floats apart (thread column tcol, value jj at jj*(BN/TN)+tcol)
//   THREAD_TILE  0: each thread's TMxTN tile contiguous; 1: four (TM/2)x(TN/2) quadrants spread
//                over the block tile ([sgemm-notes] sec. 5)
#pragma once
#include "common.cuh"
#ifndef LOAD_WIDTH
#define LOAD_WIDTH 4
#endif
#ifndef A_TRANSPOSED
#define A_TRANSPOSED 1
#endif
#ifndef FRAG_WIDTH
#define FRAG_WIDTH 4
#endif
#ifndef B_LAYOUT
#define B_LAYOUT 0
#endif
#ifndef B_PAD
#define B_PAD 0
#endif
#ifndef THREAD_TILE
#define THREAD_TILE 0
#endif
#define BNS (B_LAYOUT == 1 ? BN + B_PAD : BN)  // row stride of Bs
#define LA (BM * BK / (LOAD_WIDTH * NT))
#define LB (BK * BN / (LOAD_WIDTH * NT))
#if LOAD_WIDTH == 4
typedef float4 stage_t;
#else
typedef float stage_t;
#endif

// Block-tile row of a thread's value ii (0..TM-1) and column of its value jj (0..TN-1).
__device__ __forceinline__ int a_row(int trow, int ii) {
    return THREAD_TILE ? (ii / (TM / 2)) * (BM / 2) + trow * (TM / 2) + ii % (TM / 2) : trow * TM + ii;
}
__device__ __forceinline__ int b_col(int tcol, int jj) {
    return THREAD_TILE ? (jj / (TN / 2)) * (BN / 2) + tcol * (TN / 2) + jj % (TN / 2) : tcol * TN + jj;
}
// Shared-memory word of A(m, k) and of B(k, n) in the chosen layouts.
__device__ __forceinline__ int a_at(int m, int k) { return A_TRANSPOSED ? k * BM + m : m * BK + k; }
__device__ __forceinline__ int b_at(int k, int n) {
#if B_LAYOUT == 2
    const int tcol = THREAD_TILE ? (n % (BN / 2)) / (TN / 2) : n / TN;
    const int jj = THREAD_TILE ? (n / (BN / 2)) * (TN / 2) + n % (TN / 2) : n % TN;
    return k * BN + jj * (BN / TN) + tcol;
#else
    return k * BNS + n;
#endif
}

// How a block loads its tiles and stores C (G): 0 a block inside C on aligned sizes: float4 where
// LOAD_WIDTH is 4, no checks; 1 a block inside C whose k-tiles do not end on K or whose rows are not
// 16-byte aligned (outer_f4.cuh's scalar inner body): scalar loads, no checks; 4 the same with rows 16-byte
// aligned (the float4 inner body): loads as G = 0; 2 a block on C's ragged edge: every element checked,
// zero outside the matrices; 3 and 5 the first k-tile of a G = 1 and a G = 4 block, which starts before
// k = 0 so that the others end on K: elements before k = 0 are zero (with K a multiple of 4 a float4 is
// wholly before k = 0 or wholly after). Kernels without the inner bodies pass 0 or 2.
template <int G>
__device__ __forceinline__ float ld_inner(const float* __restrict__ p, int r, int c, int cols, int k) {
    return (G != 3 || k >= 0) ? p[IDX32(r, c, cols)] : 0.0f;
}

template <int G>
__device__ __forceinline__ void load_tile(const float* __restrict__ A, const float* __restrict__ B, stage_t (&ra)[LA],
                                          stage_t (&rb)[LB], int row0, int col0, int k0, int M, int N, int K) {
    const int tid = threadIdx.x;
#if LOAD_WIDTH == 4
#pragma unroll
    for (int r = 0; r < LA; ++r) {
        const int e = tid + r * NT, row = row0 + e / (BK / 4), c = k0 + (e % (BK / 4)) * 4;
        if constexpr (G == 0 || G == 2)
            ra[r] = G ? make_float4(ld<true>(A, row, c, M, K), ld<true>(A, row, c + 1, M, K), ld<true>(A, row, c + 2, M, K),
                                    ld<true>(A, row, c + 3, M, K))
                      : ld4(A, row, c, K);
        else if constexpr (G >= 4)
            ra[r] = (G == 5 && c < 0) ? make_float4(0.0f, 0.0f, 0.0f, 0.0f) : ld4(A, row, c, K);
        else
            ra[r] = make_float4(ld_inner<G>(A, row, c, K, c), ld_inner<G>(A, row, c + 1, K, c + 1),
                                ld_inner<G>(A, row, c + 2, K, c + 2), ld_inner<G>(A, row, c + 3, K, c + 3));
    }
#pragma unroll
    for (int r = 0; r < LB; ++r) {
        const int e = tid + r * NT, row = k0 + e / (BN / 4), c = col0 + (e % (BN / 4)) * 4;
        if constexpr (G == 0 || G == 2)
            rb[r] = G ? make_float4(ld<true>(B, row, c, K, N), ld<true>(B, row, c + 1, K, N), ld<true>(B, row, c + 2, K, N),
                                    ld<true>(B, row, c + 3, K, N))
                      : ld4(B, row, c, N);
        else if constexpr (G >= 4)
            rb[r] = (G == 5 && row < 0) ? make_float4(0.0f, 0.0f, 0.0f, 0.0f) : ld4(B, row, c, N);
        else
            rb[r] = make_float4(ld_inner<G>(B, row, c, N, row), ld_inner<G>(B, row, c + 1, N, row),
                                ld_inner<G>(B, row, c + 2, N, row), ld_inner<G>(B, row, c + 3, N, row));
    }
#else
#pragma unroll
    for (int r = 0; r < LA; ++r) {
        const int e = tid + r * NT, row = row0 + e / BK, c = k0 + e % BK;
        if constexpr (G == 0 || G == 2) ra[r] = ld<G == 2>(A, row, c, M, K);
        else ra[r] = ld_inner<G == 5 ? 3 : G>(A, row, c, K, c);
    }
#pragma unroll
    for (int r = 0; r < LB; ++r) {
        const int e = tid + r * NT, row = k0 + e / BN, c = col0 + e % BN;
        if constexpr (G == 0 || G == 2) rb[r] = ld<G == 2>(B, row, c, K, N);
        else rb[r] = ld_inner<G == 5 ? 3 : G>(B, row, c, N, row);
    }
#endif
}

__device__ __forceinline__ void store_tile(float* __restrict__ As, float* __restrict__ Bs, const stage_t (&ra)[LA],
                                           const stage_t (&rb)[LB]) {
    const int tid = threadIdx.x;
#if LOAD_WIDTH == 4
#pragma unroll
    for (int r = 0; r < LA; ++r) {
        const int e = tid + r * NT, row = e / (BK / 4), c = (e % (BK / 4)) * 4;
        if (A_TRANSPOSED) {
            As[(c + 0) * BM + row] = ra[r].x;
            As[(c + 1) * BM + row] = ra[r].y;
            As[(c + 2) * BM + row] = ra[r].z;
            As[(c + 3) * BM + row] = ra[r].w;
        } else {
            *reinterpret_cast<float4*>(&As[row * BK + c]) = ra[r];
        }
    }
#pragma unroll
    for (int r = 0; r < LB; ++r) {
        const int e = tid + r * NT, row = e / (BN / 4), c = (e % (BN / 4)) * 4;
        if (B_LAYOUT == 0 || (B_LAYOUT == 1 && BNS % 4 == 0)) {
            *reinterpret_cast<float4*>(&Bs[row * BNS + c]) = rb[r];
        } else {  // a padded row not 16-byte aligned, or permuted: four scalar stores
            Bs[b_at(row, c + 0)] = rb[r].x;
            Bs[b_at(row, c + 1)] = rb[r].y;
            Bs[b_at(row, c + 2)] = rb[r].z;
            Bs[b_at(row, c + 3)] = rb[r].w;
        }
    }
#else
#pragma unroll
    for (int r = 0; r < LA; ++r) { const int e = tid + r * NT; As[a_at(e / BK, e % BK)] = ra[r]; }
#pragma unroll
    for (int r = 0; r < LB; ++r) { const int e = tid + r * NT; Bs[b_at(e / BN, e % BN)] = rb[r]; }
#endif
}

// A thread's TM values of A and TN values of B at step k (steps 6-8).
__device__ __forceinline__ void read_frags(const float* __restrict__ as, const float* __restrict__ bs, int k, float (&ra)[TM],
                                           float (&rb)[TN], int trow, int tcol) {
#if FRAG_WIDTH == 4
#pragma unroll
    for (int i = 0; i < TM; i += 4) *reinterpret_cast<float4*>(&ra[i]) = *reinterpret_cast<const float4*>(&as[a_at(a_row(trow, i), k)]);
#pragma unroll
    for (int j = 0; j < TN; j += 4) *reinterpret_cast<float4*>(&rb[j]) = *reinterpret_cast<const float4*>(&bs[b_at(k, b_col(tcol, j))]);
#else
#pragma unroll
    for (int i = 0; i < TM; ++i) ra[i] = as[a_at(a_row(trow, i), k)];
#pragma unroll
    for (int j = 0; j < TN; ++j) rb[j] = bs[b_at(k, b_col(tcol, j))];
#endif
}

// One k-tile of outer products from shared memory (steps 6-8).
__device__ __forceinline__ void compute_tile(const float* __restrict__ as, const float* __restrict__ bs, float (&acc)[TM][TN],
                                             float (&ra)[TM], float (&rb)[TN], int trow, int tcol) {
#pragma unroll
    for (int k = 0; k < BK; ++k) {
        read_frags(as, bs, k, ra, rb, trow, tcol);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] += ra[i] * rb[j];
    }
}

// Store four consecutive C values of one row (G as load_tile's: float4 on blocks inside C whose rows are
// 16-byte aligned, unchecked scalars on the other blocks inside C, checked scalars on the edge).
template <int G>
__device__ __forceinline__ void store_c4(float* __restrict__ C, int r, int c, const float* v, int M, int N) {
    if constexpr (G == 0 || G == 4) {
        *reinterpret_cast<float4*>(&C[IDX32(r, c, N)]) = make_float4(v[0], v[1], v[2], v[3]);
    } else if constexpr (G == 1) {
#pragma unroll
        for (int q = 0; q < 4; ++q) C[IDX32(r, c + q, N)] = v[q];
    } else if (r < M) {
#pragma unroll
        for (int q = 0; q < 4; ++q)
            if (c + q < N) C[IDX(r, c + q, N)] = v[q];
    }
}
