// The body of steps 6-8 (one kernel, three sets of defaults): 2-D register tile by outer products,
// tiles staged global -> registers -> shared memory (tile_f4.cuh), with or without double buffering:
//   DOUBLE_BUFFER 0: load, store, barrier, compute, barrier per k-tile (steps 6, 7)
//                 1: two shared-memory buffers; the next tile's global loads go to registers before
//                    the current tile's math and to the other buffer after it, one barrier per tile (step 8)
//   INNER_BODY    0: the blocks on the aligned interior (interior(): inside C, K a multiple of BK and of 4, N of 4)
//                    run body<0> (float4, no checks), every other block the guarded edge body (body<2>), as in
//                    steps 3-5 and 9; 1 (for sizes that are not aligned): every block inside C runs body<1>: its
//                    k-tiles shifted to end on K, so only the first one, started before k = 0, checks k; loads
//                    and C stores unchecked scalars; only the blocks on C's ragged edge run the edge body;
//                    4 (for K not a multiple of BK, rows 16-byte aligned): where K and N are multiples of 4, every
//                    block inside C runs body<4>, body<1> with the float4 loads and stores of body<0>; otherwise
//                    every block runs the edge body, as with 0
//   SPLIT_K       1: block z of gridDim.z computes the k-tiles [z*T, (z+1)*T) of the ceil(K/BK), T = ceil(tiles /
//                    gridDim.z), into the partial C + z*M*N (step 10; the host picks gridDim.z so that no slice is empty)
//                 2: as 1, and the last of a tile's slices to finish sums the tile's partials in slice order into
//                    the kernel's last two arguments' C, counting finished slices in a per-tile counter (step 13)
#pragma once
#ifndef DOUBLE_BUFFER
#define DOUBLE_BUFFER 0
#endif
#ifndef SPLIT_K
#define SPLIT_K 0
#endif
#ifndef INNER_BODY
#define INNER_BODY 0
#endif
#if SPLIT_K && !DOUBLE_BUFFER
#error "SPLIT_K takes the double-buffered loop"
#endif
#define NT (BM * BN / (TM * TN))
#define EDGE_G 2  // body_edge runs body<2> (kernels/common.cuh, EDGE_BODY)
// double buffering asks nvcc for two resident blocks where 128 registers per thread can hold the tile (seed 000 caps at 128)
#define MIN_BLOCKS (DOUBLE_BUFFER && NT <= 256 && TM * TN <= 64 ? 2 : 1)
#include "tile_f4.cuh"

template <int G>
__device__ __forceinline__ void body(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                     int M, int N, int K, float* __restrict__ As, float* __restrict__ Bs) {
    const int tid = threadIdx.x, tpr = BN / TN, tcol = tid % tpr, trow = tid / tpr;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    float ra[TM], rb[TN];
    stage_t ga[LA], gb[LB];
    // the inner body's k-tiles start k_lead <= 0 so that they end on K: only the first reaches outside
    const int k_lead = (G == 1 || G == 4) ? K - (K + BK - 1) / BK * BK : 0;
    constexpr int G_FIRST = G == 1 ? 3 : G == 4 ? 5 : G;
#if SPLIT_K  // this block's slice of the k-tiles (slices end on tile boundaries: only the last meets K's edge)
    const int all_tiles = (K + BK - 1) / BK, per_slice = (all_tiles + gridDim.z - 1) / gridDim.z;
    const int k_first = k_lead + blockIdx.z * per_slice * BK, k_tiles = min(per_slice, all_tiles - (int)blockIdx.z * per_slice);
#elif DOUBLE_BUFFER
    const int k_first = k_lead, k_tiles = (K + BK - 1) / BK;
#endif
#if DOUBLE_BUFFER
    const int tiles = k_tiles;
    load_tile<G_FIRST>(A, B, ga, gb, row0, col0, k_first, M, N, K);
    store_tile(As, Bs, ga, gb);
    __syncthreads();
    // steady state without branches (seed 000 V3's shape): load tile t, compute tile t-1, store
    // tile t into the other buffer, one barrier; the last tile is computed after the loop
    for (int t = 1; t < tiles; ++t) {
        const int cur = (t - 1) & 1;
        load_tile<G>(A, B, ga, gb, row0, col0, k_first + t * BK, M, N, K);
        compute_tile(As + cur * BK * BM, Bs + cur * BK * BNS, acc, ra, rb, trow, tcol);
        store_tile(As + (cur ^ 1) * BK * BM, Bs + (cur ^ 1) * BK * BNS, ga, gb);
        __syncthreads();
    }
    compute_tile(As + ((tiles - 1) & 1) * BK * BM, Bs + ((tiles - 1) & 1) * BK * BNS, acc, ra, rb, trow, tcol);
#else
    for (int k0 = k_lead; k0 < K; k0 += BK) {  // the inner bodies check k >= 0 on every tile (not peeled: no second copy)
        load_tile<G_FIRST>(A, B, ga, gb, row0, col0, k0, M, N, K);
        store_tile(As, Bs, ga, gb);
        __syncthreads();
        compute_tile(As, Bs, acc, ra, rb, trow, tcol);
        __syncthreads();
    }
#endif
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; j += 4) store_c4<G>(C, row0 + a_row(trow, i), col0 + b_col(tcol, j), &acc[i][j], M, N);
}

EDGE_BODY

#if MIN_BLOCKS > 1
#define LAUNCH_BOUNDS __launch_bounds__(NT, MIN_BLOCKS)
#else
#define LAUNCH_BOUNDS __launch_bounds__(NT)
#endif
#if SPLIT_K == 2
#include "reduce_splits.cuh"
#define SUM_ARGS , float* __restrict__ Cout, unsigned* __restrict__ done
#else
#define SUM_ARGS
#endif
extern "C" __global__ void LAUNCH_BOUNDS sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                               float* __restrict__ C, int M, int N, int K SUM_ARGS) {
    __shared__ __align__(16) float As[(1 + DOUBLE_BUFFER) * BK * BM];
    __shared__ __align__(16) float Bs[(1 + DOUBLE_BUFFER) * BK * BNS];
#if SPLIT_K == 2
    float* const W = C;  // partial 0, where the sums start
#endif
#if SPLIT_K
    C += (size_t)blockIdx.z * M * N;  // this slice's partial C
#endif
#if INNER_BODY == 4
    if (inside(BM, BN, M, N, K) && K % 4 == 0 && N % 4 == 0) body<4>(A, B, C, M, N, K, As, Bs);
#elif INNER_BODY
    if (inside(BM, BN, M, N, K)) body<1>(A, B, C, M, N, K, As, Bs);
#else
    if (interior(BM, BN, BK, M, N, K)) body<0>(A, B, C, M, N, K, As, Bs);
#endif
    else body_edge(A, B, C, M, N, K, As, Bs);
#if SPLIT_K == 2
    sum_tile_if_last(W, Cout, done, M, N, BM, BN);
#endif
}
