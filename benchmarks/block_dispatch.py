"""Where the GPU puts the blocks of a grid's last partial wave (GPU only; cupy compiles the kernel with NVRTC).

A grid of G equal blocks, b of which fit an SM (dynamic shared memory sets b), runs floor(G / (SMs x b))
full waves and a rest. The model's waves term (terms.waves) needs to know how the rest lands: spread one
block per SM (ceil(rest / SMs) on the busiest SM), or packed into the slots that free first, b to an SM
when an SM's blocks finish together. Each block here runs the same FFMA loop (8 independent chains a
thread, 128 threads a block by default: the SM's issue is the limit, so b blocks on one SM take about b times one block's
time) and its first thread records the SM it ran on (%smid) and its start and end (%globaltimer). For
each b and G: the kernel's time (cupy events, median of 5), the blocks per SM at once in the last wave
(the busiest SM's count of blocks that started after the first block of the grid ended) and how many
SMs ran them, and the same for the last partial wave alone (the last G mod (SMs x b) blocks to start).

    python3 benchmarks/block_dispatch.py OUT.json [--iters N] [--threads 128,256,512] [--blocks 1,2,3,4]

    python3 benchmarks/block_dispatch.py --table OUT.json   (CPU) the table again from a recorded file

Prints one line per (threads, b, G) and writes every block's record to OUT.json."""
import argparse
import json
import sys

import numpy as np

SRC = r"""
extern "C" __global__ void work(unsigned long long* rec, int iters, float* sink) {
    extern __shared__ float pad[];
    unsigned long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    float a[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) a[i] = threadIdx.x * 1e-3f + i;
    for (int n = 0; n < iters; ++n) {
#pragma unroll
        for (int i = 0; i < 8; ++i) a[i] = fmaf(a[i], 0.999999f, 1e-7f);
    }
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) s += a[i];
    if (s == 12345.678f) { pad[threadIdx.x] = s; sink[0] = pad[(threadIdx.x + 1) % blockDim.x]; }
    __syncthreads();
    unsigned long long t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    if (threadIdx.x == 0) {
        unsigned smid;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        rec[3 * blockIdx.x] = smid;
        rec[3 * blockIdx.x + 1] = t0;
        rec[3 * blockIdx.x + 2] = t1;
    }
}
"""


def last_wave(rec: np.ndarray) -> tuple[int, int, int]:
    """Blocks that started after the grid's first block ended (the blocks dispatched into freed slots): their
    count, the most of them on one SM, and the SMs they ran on."""
    first_end = rec[:, 2].min()
    late = rec[rec[:, 1] >= first_end]
    if len(late) == 0:
        return 0, 0, 0
    _, counts = np.unique(late[:, 0], return_counts=True)
    return len(late), int(counts.max()), len(counts)


def last_partial(rec: np.ndarray, wave: int) -> tuple[int, int]:
    """The grid's last G mod wave blocks to start (the partial wave after the full ones; none when G is a multiple
    of a wave or under one): the most of them on one SM and the SMs they ran on."""
    g = len(rec)
    rest = g % wave if g > wave else 0
    if rest == 0:
        return 0, 0
    last = rec[np.argsort(rec[:, 1], kind="stable")[-rest:]]
    _, counts = np.unique(last[:, 0], return_counts=True)
    return int(counts.max()), len(counts)


HEADER = (f"{'threads':>7} {'b':>2} {'grid':>6} {'waves':>6} {'time us':>9} {'late blocks':>11} {'most on one SM':>14} {'SMs':>5} "
          f"{'partial: most':>13} {'SMs':>5}")


def line(threads: int, b: int, g: int, wave: int, t: float, rec: np.ndarray) -> str:
    late, most, on = last_wave(rec)
    pmost, pon = last_partial(rec, wave)
    return f"{threads:>7} {b:>2} {g:>6} {g / wave:>6.2f} {t:>9.1f} {late:>11} {most:>14} {on:>5} {pmost:>13} {pon:>5}"


def table(path: str) -> int:
    """The table from a recorded file (the blocks' SMs and start and end times)."""
    d = json.loads(open(path).read())
    print(f"{d['device']}: {d['sms']} SMs, {d['iters']} iterations")
    print(HEADER)
    for r in d["runs"]:
        rec = np.stack([r["smid"], r["start_ns"], r["end_ns"]], axis=1).astype(np.int64)
        print(line(r.get("threads", 128), r["b"], r["grid"], d["sms"] * r["b"], r["time_us"], rec))
    return 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        return table(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--threads", default="128", help="threads a block, one or more (comma-separated)")
    ap.add_argument("--blocks", default="1,2,3,4", help="resident blocks per SM to try (comma-separated)")
    a = ap.parse_args()
    import cupy as cp

    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    smem_sm = dev.attributes["MaxSharedMemoryPerMultiprocessor"]
    kern = cp.RawModule(code=SRC, options=("-std=c++17",)).get_function("work")
    kern.max_dynamic_shared_size_bytes = dev.attributes["MaxSharedMemoryPerBlockOptin"]
    sink = cp.zeros(1, cp.float32)
    out = dict(device=cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), sms=sms, iters=a.iters, runs=[])
    print(f"{out['device']}: {sms} SMs, {smem_sm} B shared memory per SM, {a.iters} iterations")
    print(HEADER)
    for threads, b in [(int(t), b) for t in a.threads.split(",") for b in map(int, a.blocks.split(","))
                       if int(t) * b <= 2048]:
        smem = (smem_sm // b) - 1024 * 2 if b > 1 else smem_sm // 2 + 1024  # b blocks fit, b + 1 do not
        smem = min(smem, dev.attributes["MaxSharedMemoryPerBlockOptin"])
        wave = sms * b
        for g in sorted({wave // 2, wave, wave + 1, wave + sms // 4, wave + sms // 2, wave + sms - 1, wave + sms,
                         wave + sms + sms // 2, 2 * wave - 1, 2 * wave, 2 * wave + sms // 2, 3 * wave + sms // 4} - {0}):
            rec = cp.zeros(3 * g, cp.uint64)
            times = []
            for rep in range(5):
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                e0.record()
                kern((g,), (threads,), (rec, np.int32(a.iters), sink), shared_mem=smem)
                e1.record()
                e1.synchronize()
                times.append(cp.cuda.get_elapsed_time(e0, e1) * 1e3)
            r = cp.asnumpy(rec).reshape(g, 3).astype(np.int64)
            late, most, on = last_wave(r)
            pmost, pon = last_partial(r, wave)
            t = float(np.median(times))
            out["runs"].append(dict(threads=threads, b=b, grid=g, smem=smem, time_us=t, times_us=times, late=late, most=most, sms_used=on, partial_most=pmost, partial_sms=pon,
                                    smid=r[:, 0].tolist(), start_ns=(r[:, 1] - r[:, 1].min()).tolist(),
                                    end_ns=(r[:, 2] - r[:, 1].min()).tolist()))
            print(line(threads, b, g, wave, t, r), flush=True)
    with open(a.out, "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
