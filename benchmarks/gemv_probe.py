"""A matrix-vector-like product in one kernel, beside cuBLAS (GPU; cupy compiles with NVRTC): C (M x N) = A (M x K)
B (K x N), row-major, M of 1 to 8 rows. Each block takes 32 x VEC columns of B (VEC floats a lane: 1 scalar, 4
float4) and splits K among its KW warps; each warp walks its slice in passes of KU k steps, the next pass's B
loads issued before this pass's FFMAs (register double buffering), then the block sums its warps' partial rows
in shared memory and writes C: one kernel, no partial C in global memory (unlike split_k's second kernel).
Every configuration is verified against float64 numpy and timed launch by launch, with the L2 flushed (a
write of twice its size) before each; cuBLAS FP32 (cupy.matmul, TF32 off) is timed the same way.

    python3 benchmarks/gemv_probe.py OUT.json [--m 1,4] [--n 4096] [--k 4096] [--flush dirty|clean]
                                     [--body probe|pingpong] [--vec 1,4] [--kw 4,8,16,32] [--ku 8,16]
    python3 benchmarks/gemv_probe.py --table OUT.json      (CPU) the table again from a recorded file
"""
import argparse
import json
import os
import sys

import numpy as np

from load_inflight import read_record

SRC = r"""
template <int W_> struct V;
template <> struct V<1> { typedef float T; };
template <> struct V<4> { typedef float4 T; };
__device__ __forceinline__ void fma_into(float* acc, float a, float b) { acc[0] += a * b; }
__device__ __forceinline__ void fma_into(float* acc, float a, float4 b) {
    acc[0] += a * b.x; acc[1] += a * b.y; acc[2] += a * b.z; acc[3] += a * b.w;
}
// The block's warps' partial rows summed in shared memory in K order, and C written.
__device__ __forceinline__ void sum_rows(float (&red)[KW][MR][32 * VEC], const float (&acc)[MR][VEC], float* __restrict__ C,
                                         int M, int N, int lane, int w) {
    for (int r = 0; r < MR; ++r)
        for (int v = 0; v < VEC; ++v) red[w][r][lane * VEC + v] = acc[r][v];
    __syncthreads();
    for (int i = threadIdx.x; i < MR * 32 * VEC; i += 32 * KW) {
        const int r = i / (32 * VEC), c = i % (32 * VEC);
        float s = 0.0f;
        for (int ww = 0; ww < KW; ++ww) s += red[ww][r][c];  // the warps' slices in K order
        if (r < M) C[(size_t)r * N + blockIdx.x * 32 * VEC + c] = s;
    }
}
extern "C" __global__ void __launch_bounds__(32 * KW) gemv(const float* __restrict__ A, const float* __restrict__ B,
                                                          float* __restrict__ C, int M, int N, int K) {
    typedef typename V<VEC>::T VT;
    __shared__ float red[KW][MR][32 * VEC];
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
    const int n0 = blockIdx.x * 32 * VEC + lane * VEC;  // N a multiple of 32 x VEC (the host checks)
    const int per = (K + KW - 1) / KW, k0 = w * per, k1 = min(K, k0 + per);
    float acc[MR][VEC];
    for (int r = 0; r < MR; ++r)
        for (int v = 0; v < VEC; ++v) acc[r][v] = 0.0f;
    const VT* Bv = reinterpret_cast<const VT*>(B);
    int k = k0;
    if (k + KU <= k1) {
        VT b[KU], b2[KU];
#pragma unroll
        for (int u = 0; u < KU; ++u) b[u] = Bv[((size_t)(k + u) * N + n0) / VEC];
        for (k += KU; k + KU <= k1; k += KU) {
#pragma unroll
            for (int u = 0; u < KU; ++u) b2[u] = Bv[((size_t)(k + u) * N + n0) / VEC];
#pragma unroll
            for (int u = 0; u < KU; ++u) {
#pragma unroll
                for (int r = 0; r < MR; ++r) fma_into(acc[r], A[(size_t)r * K + k - KU + u], b[u]);
                b[u] = b2[u];
            }
        }
#pragma unroll
        for (int u = 0; u < KU; ++u)
#pragma unroll
            for (int r = 0; r < MR; ++r) fma_into(acc[r], A[(size_t)r * K + k - KU + u], b[u]);
    }
    for (; k < k1; ++k) {
        const VT bb = Bv[((size_t)k * N + n0) / VEC];
        for (int r = 0; r < MR; ++r) fma_into(acc[r], A[(size_t)r * K + k], bb);
    }
    sum_rows(red, acc, C, M, N, lane, w);
}

// The same product with two register buffers used in turn (ping-pong): chunk c + 1's loads of B and A are issued
// before chunk c's FFMAs, and no register copy follows them, so a warp keeps two chunks in flight and waits for
// each about one chunk after it asked for it (gemv's `b[u] = b2[u]` copies wait for the loads just issued).
template <typename VT>
__device__ __forceinline__ void load_chunk(const VT* __restrict__ Bv, const float* __restrict__ A, int k, int N, int K,
                                           int n0, VT (&b)[KU], float (&a)[MR][KU]) {
#pragma unroll
    for (int u = 0; u < KU; ++u) b[u] = Bv[((size_t)(k + u) * N + n0) / VEC];
#pragma unroll
    for (int r = 0; r < MR; ++r)
#pragma unroll
        for (int u = 0; u < KU; ++u) a[r][u] = A[(size_t)r * K + k + u];
}
template <typename VT>
__device__ __forceinline__ void fma_chunk(float (&acc)[MR][VEC], const VT (&b)[KU], const float (&a)[MR][KU]) {
#pragma unroll
    for (int u = 0; u < KU; ++u)
#pragma unroll
        for (int r = 0; r < MR; ++r) fma_into(acc[r], a[r][u], b[u]);
}
extern "C" __global__ void __launch_bounds__(32 * KW) gemv_pp(const float* __restrict__ A, const float* __restrict__ B,
                                                             float* __restrict__ C, int M, int N, int K) {
    typedef typename V<VEC>::T VT;
    __shared__ float red[KW][MR][32 * VEC];
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
    const int n0 = blockIdx.x * 32 * VEC + lane * VEC;
    const int per = (K + KW - 1) / KW, k0 = w * per, k1 = min(K, k0 + per);
    float acc[MR][VEC];
    for (int r = 0; r < MR; ++r)
        for (int v = 0; v < VEC; ++v) acc[r][v] = 0.0f;
    const VT* Bv = reinterpret_cast<const VT*>(B);
    const int chunks = max(k1 - k0, 0) / KU;
    VT b0[KU], b1[KU];
    float a0[MR][KU], a1[MR][KU];
    if (chunks > 0) load_chunk(Bv, A, k0, N, K, n0, b0, a0);
    int c = 0;
    for (; c + 2 <= chunks; c += 2) {
        load_chunk(Bv, A, k0 + (c + 1) * KU, N, K, n0, b1, a1);
        fma_chunk(acc, b0, a0);
        if (c + 2 < chunks) load_chunk(Bv, A, k0 + (c + 2) * KU, N, K, n0, b0, a0);
        fma_chunk(acc, b1, a1);
    }
    if (c < chunks) fma_chunk(acc, b0, a0);
    for (int k = k0 + chunks * KU; k < k1; ++k) {
        const VT bb = Bv[((size_t)k * N + n0) / VEC];
        for (int r = 0; r < MR; ++r) fma_into(acc[r], A[(size_t)r * K + k], bb);
    }
    sum_rows(red, acc, C, M, N, lane, w);
}
"""
VECS, KWS, KUS = (1, 4), (4, 8, 16, 32), (8, 16)
REPS = 15
HEADER = f"{'M':>3} {'kernel':<26} {'regs':>4} {'GFLOPS (median)':>15} {'min-max':>15} {'x cuBLAS':>8} {'GB/s of A and B':>15}"


def gflops(r: dict) -> float:
    return 2.0 * r["M"] * r["N"] * r["K"] / np.median(r["seconds"]) / 1e9


def label(r: dict) -> str:
    pp = " pingpong" if r.get("body", "probe") == "pingpong" else ""
    return "cublas" if r["kernel"] == "cublas" else f"vec {r['vec']} kw {r['kw']:>2} ku {r['ku']:>2}{pp}"


def line(r: dict, cublas: float) -> str:
    g = gflops(r)
    lo, hi = (2.0 * r["M"] * r["N"] * r["K"] / np.asarray([max(r["seconds"]), min(r["seconds"])]) / 1e9)
    gbs = (r["M"] * r["K"] + r["K"] * r["N"]) * 4 / np.median(r["seconds"]) / 1e9
    return (f"{r['M']:>3} {label(r):<26} {r.get('regs', 0):>4} {g:>15,.0f} {f'{lo:,.0f}-{hi:,.0f}':>15} "
            f"{g / cublas:>8.2f} {gbs:>15,.0f}")


def summary(d: dict) -> list[str]:
    """The table: per M, cuBLAS and every verified configuration, fastest first."""
    state = "" if d.get("flush", "dirty") == "dirty" else ", then read (clean)"
    out = [f"{d['device']}: N = {d['N']}, K = {d['K']}, {REPS} launches each, the L2 flushed before each{state}", HEADER]
    for m in sorted({r["M"] for r in d["runs"]}):
        rs = [r for r in d["runs"] if r["M"] == m]
        cub = next(r for r in rs if r["kernel"] == "cublas")
        out.append(line(cub, gflops(cub)))
        for r in sorted((r for r in rs if r["kernel"] == "gemv" and r["verified"]), key=gflops, reverse=True):
            out.append(line(r, gflops(cub)))
        bad = [label(r) for r in rs if r["kernel"] == "gemv" and not r["verified"]]
        if bad:
            out.append(f"    not verified: {', '.join(bad)}")
    return out


def _ints(text: str, what: str, lo: int, hi: int) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",")]
    except ValueError:
        vals = []
    if not vals or any(not lo <= v <= hi for v in vals):
        raise ValueError(f"error: --{what} takes comma-separated integers from {lo} to {hi}, not {text!r}")
    return vals


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        print("\n".join(summary(read_record(sys.argv[2]))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="a new JSON file")
    ap.add_argument("--m", default="1,4", help="rows of A and C (1-8)")
    ap.add_argument("--n", default="4096", help="columns of B and C (a multiple of 128)")
    ap.add_argument("--k", default="4096", help="the inner dimension")
    ap.add_argument("--body", choices=("probe", "pingpong"), default="probe",
                    help="the k loop: probe (the next chunk loaded into a second buffer, then copied) or pingpong "
                         "(two buffers used in turn, no copy: two chunks a warp in flight)")
    ap.add_argument("--vec", default="1,4", help="floats a lane loads from a row of B: 1 and/or 4")
    ap.add_argument("--kw", default="4,8,16,32", help="warps a block, each a slice of K (4-32)")
    ap.add_argument("--ku", default="8,16", help="k steps a chunk (8 or 16)")
    ap.add_argument("--flush", choices=("dirty", "clean"), default="dirty",
                    help="the L2 before each launch: dirty (a write of twice its size, as perfmodel times) or clean "
                         "(that write, then a read of it: the dirty lines written back before the launch)")
    a = ap.parse_args()
    try:
        ms = _ints(a.m, "m", 1, 8)
        (n,) = _ints(a.n, "n", 128, 1 << 20)
        (k,) = _ints(a.k, "k", 1, 1 << 20)
        vecs = _ints(a.vec, "vec", 1, 4)
        kws = _ints(a.kw, "kw", 4, 32)
        kus = _ints(a.ku, "ku", 8, 16)
        if any(v not in VECS for v in vecs) or any(v not in KWS for v in kws) or any(v not in KUS for v in kus):
            raise ValueError(f"error: --vec takes {VECS}, --kw {KWS}, --ku {KUS}, not {a.vec!r} / {a.kw!r} / {a.ku!r}")
        if n % 128:
            raise ValueError(f"error: --n must be a multiple of 128 (32 lanes x float4), not {n}")
        if os.path.exists(a.out):
            raise ValueError(f"error: {a.out} exists; gemv_probe.py writes a new file only")
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    import cupy as cp

    cp.cuda.set_allocator(None)
    props = cp.cuda.runtime.getDeviceProperties(0)
    flush = cp.empty(2 * props["l2CacheSize"] // 4, cp.float32)
    out = dict(device=props["name"].decode(), N=n, K=k, reps=REPS, flush=a.flush, runs=[])
    if a.body != "probe":
        out["body"] = a.body
    print(f"{out['device']}: N = {n}, K = {k}; per M: cuBLAS, then {len(vecs) * len(kws) * len(kus)} configurations", flush=True)

    def timed(fn) -> list[float]:
        fn()
        cp.cuda.Device().synchronize()
        s, e, ts = cp.cuda.Event(), cp.cuda.Event(), []
        for _ in range(REPS):
            flush.fill(1.0)
            if a.flush == "clean":
                flush.sum()  # reads every line: the L2 writes the dirty ones back and keeps clean ones
            s.record()
            fn()
            e.record()
            e.synchronize()
            ts.append(cp.cuda.get_elapsed_time(s, e) * 1e-3)
        return ts

    for m in ms:
        rng = np.random.default_rng(m)
        A = rng.standard_normal((m, k)).astype(np.float32)
        B = rng.standard_normal((k, n)).astype(np.float32)
        ref = A.astype(np.float64) @ B.astype(np.float64)
        # 2e-5 |A| |B| element by element: a twelfth of FP32's worst-case bound K u |A| |B| at K = 4096, some 5 times
        # the typical sqrt(K) u |A| |B|; a slice of K missing or summed twice is thousands of times more
        bound = 2e-5 * (np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64))
        dA, dB = cp.asarray(A), cp.asarray(B)
        dC = cp.empty((m, n), cp.float32)
        base = dict(M=m, N=n, K=k)
        out["runs"].append(dict(base, kernel="cublas", seconds=timed(lambda: cp.matmul(dA, dB, out=dC))))
        print(f"  M = {m}: cuBLAS {gflops(out['runs'][-1]):,.0f} GFLOPS", flush=True)
        for vec in vecs:
            for kw in kws:
                for ku in kus:
                    if kw * m * 32 * vec * 4 > 48 * 1024:  # the shared-memory sum must fit a block's static 48 KB
                        continue
                    opts = ("-std=c++17", f"-DKW={kw}", f"-DKU={ku}", f"-DMR={m}", f"-DVEC={vec}")
                    fn = cp.RawModule(code=SRC, options=opts).get_function("gemv_pp" if a.body == "pingpong" else "gemv")
                    args = (dA, dB, dC, np.int32(m), np.int32(n), np.int32(k))
                    run = lambda: fn((n // (32 * vec),), (32 * kw,), args)  # noqa: E731
                    dC.fill(np.nan)
                    run()
                    got = cp.asnumpy(dC).astype(np.float64)
                    ok = bool(np.all(np.abs(got - ref) <= bound))
                    r = dict(base, kernel="gemv", **({"body": a.body} if a.body != "probe" else {}), vec=vec, kw=kw, ku=ku, regs=int(fn.num_regs), verified=ok, seconds=timed(run))
                    out["runs"].append(r)
                    print(f"    {label(r)}: {gflops(r):,.0f} GFLOPS{'' if ok else ' NOT VERIFIED'}", flush=True)
    with open(a.out, "x") as f:
        json.dump(out, f)
    print("\n".join(summary(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
