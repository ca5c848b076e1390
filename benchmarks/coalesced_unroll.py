"""The coalesced kernel's k loop at unroll factors 1-32 (benchmarks/smemless/coalesced_unroll.cu), on a few
rows of C (M = 1 and 16, N = 32 x SMs: one block per SM, K = 4096): does the number of loads a pass keeps
in flight set its time per k step, as the model's `exposed_k` (the memory latency over a 4-fold unroll)
assumes? (GPU only; cupy compiles the source with NVRTC.)

  python3 benchmarks/coalesced_unroll.py OUT.json

Each point verified against numpy, timed 15 times with L2 flushed in between (cupy events); prints the
median time and the SM cycles per k step at the clock NVML reports while it runs."""
import json
import sys
from pathlib import Path

import numpy as np

UNROLLS = (1, 2, 4, 8, 16, 32)
ROWS = (1, 16)
K = 4096


def main(out: str) -> int:
    import cupy as cp

    src = (Path(__file__).parent / "smemless" / "coalesced_unroll.cu").read_text()
    names = [f"coalesced<{u}>" for u in UNROLLS]
    mod = cp.RawModule(code=src, options=("-std=c++17",), name_expressions=names)
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        clock = lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
    except Exception:
        clock = lambda: None
    N = 32 * sms
    flush = cp.empty(64 << 20, dtype=cp.float32)
    rng = np.random.default_rng(0)
    recs = []
    for M in ROWS:
        a = rng.standard_normal((M, K), dtype=np.float32)
        b = rng.standard_normal((K, N), dtype=np.float32)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        A, B, C = cp.asarray(a), cp.asarray(b), cp.empty((M, N), dtype=cp.float32)
        grid, block = ((N + 31) // 32, (M + 31) // 32), (1024,)
        for u, name in zip(UNROLLS, names):
            fn = mod.get_function(name)
            C.fill(cp.nan)
            fn(grid, block, (A, B, C, np.int32(M), np.int32(N), np.int32(K)))
            err = float(np.linalg.norm(cp.asnumpy(C) - ref) / np.linalg.norm(ref))
            ts, clks = [], []
            for _ in range(15):
                flush.fill(1.0)
                s, e = cp.cuda.Event(), cp.cuda.Event()
                s.record()
                fn(grid, block, (A, B, C, np.int32(M), np.int32(N), np.int32(K)))
                e.record()
                e.synchronize()
                ts.append(cp.cuda.get_elapsed_time(s, e))
                clks.append(clock())
            ms = float(np.median(ts))
            mhz = float(np.median([c for c in clks if c])) if any(clks) else None
            r = dict(M=M, N=N, K=K, unroll=u, verified=err < 1e-5, rel_error=err, median_ms=ms,
                     q10_ms=float(np.quantile(ts, 0.1)), q90_ms=float(np.quantile(ts, 0.9)), sm_clock_MHz=mhz,
                     cycles_per_k=None if mhz is None else ms * 1e-3 * mhz * 1e6 / K)
            recs.append(r)
            print(f"M={M} unroll={u}: {ms:.3f} ms, {r['cycles_per_k'] or float('nan'):.0f} cycles per k, "
                  f"{'verified' if r['verified'] else 'WRONG'}", flush=True)
    Path(out).write_text(json.dumps(dict(gpu=dev.compute_capability, name=cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                                         sms=sms, points=recs), indent=1))
    print("| M | unroll | median ms | q10-q90 ms | SM cycles per k |")
    print("|---|---|---|---|---|")
    for r in recs:
        print(f"| {r['M']} | {r['unroll']} | {r['median_ms']:.3f} | {r['q10_ms']:.3f}-{r['q90_ms']:.3f} | "
              f"{r['cycles_per_k'] or float('nan'):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
