"""How long a warp takes to run straight-line code it has never run before, against the same code again (GPU;
cupy compiles with NVRTC). The tile kernels run most of their code once per block: the code before the
k-tile loop, the last tile's compute after it and the stores, and on a ragged edge all of it in an
out-of-line function (kernels/common.cuh, EDGE_BODY). Each SM's first block fetches that code cold.

One block per SM (132 on an H100/H200) of W warps; each warp runs a body of independent FFMAs in four chains
(16 bytes an instruction, `--kb` KB of code) twice in a row, inlined in the kernel (`inline`) or in a
`__noinline__` function it calls (`called`), and records clock64() before the first pass, between the two
and after the second. Cycles per KB of code, median over the warps: the first pass (cold) and the second
(the code in the SM's instruction caches where it fits), for W = 4 (a warp a scheduler) and 8, each launched
after a 512 MB write (`flushed`: the code out of L2, as validate's timing flushes before each launch) and
again right after (`again`).

With `--streamers S`, each block has S more warps that stream scalar (4-byte, coalesced) global loads from a
1 GB buffer, eight in flight a lane, from before the timed warps start until they finish: what the edge body's
24 scalar loads a thread a k-tile do to cold code, whose fetches take the same path to the L2. The record's
`streamers` says how many.

    python3 benchmarks/cold_code.py OUT.json [--kb 4,8,16,32,48] [--warps 4,8] [--streamers 0,4,12] [--sleep-us 400]
(`--sleep-us`: the timed warps wait that long first, with or without streams, so that the two compare)
    python3 benchmarks/cold_code.py --table OUT.json      (CPU) the table again from a recorded file
"""
import argparse
import json
import lzma
import sys

import numpy as np

SRC = r"""
template <int N>
__device__ __forceinline__ float4 body(float4 a, float b, float c) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
        a.x = fmaf(a.x, b, c); a.y = fmaf(a.y, b, c); a.z = fmaf(a.z, b, c); a.w = fmaf(a.w, b, c);
    }
    return a;
}
template <int N>
__device__ __noinline__ float4 body_called(float4 a, float b, float c) { return body<N>(a, b, c); }

__device__ float stream_loads(const float* __restrict__ buf, unsigned long long n, volatile int* done) {
    // a streaming warp: eight coalesced 4-byte loads in flight a lane, over the buffer, until the timed warps finish
    float acc = 0.0f;
    unsigned long long i = (unsigned long long)blockIdx.x * 8192 + (threadIdx.x % 32) + 256ull * (threadIdx.x / 32);
    while (*done == 0) {
        float v[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) v[j] = __ldcg(buf + (i + 32ull * j) % n);
#pragma unroll
        for (int j = 0; j < 8; ++j) acc += v[j];
        i += 1048576ull;
    }
    return acc;
}

template <int N, bool CALLED>
__device__ void run(long long* rec, float b, float c, float* sink, const float* buf, unsigned long long n, int timed, int sleep_ns) {
    __shared__ int done, finished;
    if (threadIdx.x == 0) { done = 0; finished = 0; }
    __syncthreads();
    if (threadIdx.x / 32 >= timed) {  // a streaming warp
        float acc = stream_loads(buf, n, &done);
        if (acc == 12345.678f) sink[0] = acc;
        return;
    }
    for (int i = 0; i < sleep_ns / 100; ++i) __nanosleep(100);  // the streams (where any) get going first
    float4 a = make_float4(threadIdx.x * 1e-7f, 1.0f, 2.0f, 3.0f);
    long long t0 = 0, t1 = 0;
#pragma unroll 1
    for (int p = 0; p < 2; ++p) {  // one copy of the body, run twice
        long long now = clock64();
        if (p == 0) t0 = now; else t1 = now;
        a = CALLED ? body_called<N>(a, b, c) : body<N>(a, b, c);
    }
    long long t2 = clock64();
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    if (a.x + a.y + a.z + a.w == 12345.678f) sink[0] = a.x;
    if (threadIdx.x % 32 == 0) {
        long long* r = rec + 4 * (blockIdx.x * timed + threadIdx.x / 32);
        r[0] = sm; r[1] = t0; r[2] = t1; r[3] = t2;
    }
    if (threadIdx.x % 32 == 0 && atomicAdd(&finished, 1) == timed - 1)  // the last timed warp stops the streams
        atomicExch(&done, 1);
}
"""
# N FFMA groups of 4 instructions of 16 bytes: N = KB * 1024 / 64
KERNELS = "".join(
    f'extern "C" __global__ void {kind}_{kb}(long long* rec, float b, float c, float* sink, const float* buf, '
    f'unsigned long long n, int timed, int sleep_ns) {{ run<{kb * 16}, {"true" if kind == "called" else "false"}>(rec, b, c, sink, buf, n, timed, sleep_ns); }}\n'
    for kind in ("inline", "called") for kb in (4, 8, 16, 24, 32, 40, 48, 64))
KBS = (4, 8, 16, 24, 32, 40, 48, 64)


def summarise(rec: np.ndarray, kb: int) -> dict:
    """rec: (warps, 4) = smid, clock before, between, after. Cycles per KB of each pass, median and spread."""
    cold, warm = (rec[:, 2] - rec[:, 1]) / kb, (rec[:, 3] - rec[:, 2]) / kb
    return dict(cold_per_kb=float(np.median(cold)), cold_per_kb_min=float(cold.min()), cold_per_kb_max=float(cold.max()),
                warm_per_kb=float(np.median(warm)), warm_per_kb_min=float(warm.min()), warm_per_kb_max=float(warm.max()))


HEADER = (f"{'body':<7} {'KB':>3} {'warps':>5} {'streams':>7} {'launch':>7} {'cold cycles/KB (min-max)':>28} "
          f"{'warm cycles/KB (min-max)':>28} {'cold - warm':>11}")


def line(kind, kb, w, s, state, streamers=0) -> str:
    return (f"{kind:<7} {kb:>3} {w:>5} {streamers:>7} {state:>7} {s['cold_per_kb']:>10.0f} ({s['cold_per_kb_min']:>6.0f}-{s['cold_per_kb_max']:>6.0f}) "
            f"{s['warm_per_kb']:>10.0f} ({s['warm_per_kb_min']:>6.0f}-{s['warm_per_kb_max']:>6.0f}) {s['cold_per_kb'] - s['warm_per_kb']:>11.0f}")


def table(path: str) -> int:
    d = json.loads((lzma.open if path.endswith(".xz") else open)(path).read())
    heads = sorted({r.get("sleep_us", 0) for r in d["runs"]})
    print(f"{d['device']}: {d['sms']} SMs, one block per SM; the timed warps' head start {'/'.join(map(str, heads))} us")
    print(HEADER)
    for r in d["runs"]:
        print(line(r["body"], r["kb"], r["warps"], summarise(np.asarray(r["records"], dtype=np.int64), r["kb"]), r["state"],
                   r.get("streamers", 0)))
    return 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        return table(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--kb", default="4,8,16,32,48", help=f"code sizes in KB (of {','.join(map(str, KBS))})")
    ap.add_argument("--warps", default="4,8", help="warps a block (comma-separated)")
    ap.add_argument("--streamers", default="0", help="warps a block streaming global loads beside the timed ones (comma-separated)")
    ap.add_argument("--sleep-us", type=int, default=0, help="microseconds the timed warps wait before their first pass (the streams' head start)")
    a = ap.parse_args()
    kbs = [int(x) for x in a.kb.split(",")]
    if any(k not in KBS for k in kbs):
        print(f"error: --kb takes sizes of {','.join(map(str, KBS))}, not {a.kb}", file=sys.stderr)
        return 2
    try:
        streams = [int(x) for x in a.streamers.split(",")]
        warps = [int(x) for x in a.warps.split(",")]
    except ValueError:
        print(f"error: --warps and --streamers take comma-separated whole numbers, not {a.warps!r} / {a.streamers!r}", file=sys.stderr)
        return 2
    if not 0 <= a.sleep_us <= 10000:
        print(f"error: --sleep-us takes 0 to 10000 microseconds, not {a.sleep_us}", file=sys.stderr)
        return 2
    if any(w < 1 or w + st > 32 or st < 0 for w in warps for st in streams):
        print(f"error: warps (at least 1) plus streamers (at least 0) must be at most 32 a block, not {a.warps} + {a.streamers}",
              file=sys.stderr)
        return 2
    import cupy as cp

    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    smem_sm = dev.attributes["MaxSharedMemoryPerMultiprocessor"]
    mod = cp.RawModule(code=SRC + KERNELS, options=("-std=c++17",))
    sink = cp.zeros(1, cp.float32)
    flush = cp.zeros(128 << 20, cp.float32)
    buf = cp.ones(256 << 20, cp.float32)  # 1 GB for the streaming warps
    out = dict(device=cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), sms=sms, runs=[])
    print(f"{out['device']}: {sms} SMs, one block per SM; the timed warps' head start {a.sleep_us} us")
    print(HEADER)
    for kind in ("inline", "called"):
        for kb in kbs:
            kern = mod.get_function(f"{kind}_{kb}")
            smem = min(smem_sm // 2 + 1024, dev.attributes["MaxSharedMemoryPerBlockOptin"] - 1024)  # one block an SM
            kern.max_dynamic_shared_size_bytes = smem
            for w in warps:
                for st in streams:
                    for state in ("flushed", "again"):  # after a write of 512 MB (the code out of L2), then right after
                        if state == "flushed":
                            flush.fill(1)
                        rec = cp.zeros(4 * sms * w, cp.int64)
                        cp.cuda.runtime.deviceSynchronize()
                        kern((sms,), (32 * (w + st),), (rec, np.float32(0.9999), np.float32(1e-3), sink, buf,
                                                         np.uint64(buf.size), np.int32(w), np.int32(1000 * a.sleep_us)), shared_mem=smem)
                        cp.cuda.runtime.deviceSynchronize()
                        r = cp.asnumpy(rec).reshape(sms * w, 4)
                        s = summarise(r, kb)
                        out["runs"].append(dict(body=kind, kb=kb, warps=w, streamers=st, sleep_us=a.sleep_us, state=state,
                                                registers=int(kern.num_regs), records=r.tolist(), **s))
                        print(line(kind, kb, w, s, state, st), flush=True)
    with open(a.out, "x") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
