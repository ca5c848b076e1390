// Step 9: explicit warp tiles. Threads = (BM/WM)*(BN/WN)*32; each warp computes WMxWN of C as
// WMITER x WNITER sub-tiles of (WM/WMITER)x(WN/WNITER); each thread TMxTN per sub-tile.
// Layout after [siboehm] kernel 10 (docs/references.md). LOAD_WIDTH and FRAG_WIDTH as in tile_f4.cuh
// (A transposed, B plain).
#define NT ((BM / WM) * (BN / WN) * 32)
#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)
#include "tile_f4.cuh"

template <bool G>
__device__ __forceinline__ void body(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                     int M, int N, int K, float* __restrict__ As, float* __restrict__ Bs) {
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wrow = warp / (BN / WN), wcol = warp % (BN / WN);
    const int trow = lane / (WSUBN / TN), tcol = lane % (WSUBN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[WMITER * TM][WNITER * TN] = {{0.0f}};
    float ra[WMITER * TM], rb[WNITER * TN];
    stage_t ga[LA], gb[LB];
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tile<G ? 2 : 0>(A, B, ga, gb, row0, col0, k0, M, N, K);
        store_tile(As, Bs, ga, gb);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int wi = 0; wi < WMITER; ++wi)
#pragma unroll
                for (int i = 0; i < TM; i += FRAG_WIDTH) {
                    const int a = k * BM + wrow * WM + wi * WSUBM + trow * TM + i;
                    if (FRAG_WIDTH == 4) *reinterpret_cast<float4*>(&ra[wi * TM + i]) = *reinterpret_cast<const float4*>(&As[a]);
                    else ra[wi * TM + i] = As[a];
                }
#pragma unroll
            for (int wj = 0; wj < WNITER; ++wj)
#pragma unroll
                for (int j = 0; j < TN; j += FRAG_WIDTH) {
                    const int b = k * BN + wcol * WN + wj * WSUBN + tcol * TN + j;
                    if (FRAG_WIDTH == 4) *reinterpret_cast<float4*>(&rb[wj * TN + j]) = *reinterpret_cast<const float4*>(&Bs[b]);
                    else rb[wj * TN + j] = Bs[b];
                }
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
                for (int j = 0; j < WNITER * TN; ++j) acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int wi = 0; wi < WMITER; ++wi)
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int wj = 0; wj < WNITER; ++wj)
#pragma unroll
                for (int j = 0; j < TN; j += 4)
                    store_c4<G ? 2 : 0>(C, row0 + wrow * WM + wi * WSUBM + trow * TM + i, col0 + wcol * WN + wj * WSUBN + tcol * TN + j,
                                &acc[wi * TM + i][wj * TN + j], M, N);
}

EDGE_BODY

extern "C" __global__ void __launch_bounds__(NT) sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                                       float* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[BK * BM];
    __shared__ __align__(16) float Bs[BK * BN];
    if (interior(BM, BN, BK, M, N, K)) body<false>(A, B, C, M, N, K, As, Bs);
    else body_edge(A, B, C, M, N, K, As, Bs);
}
