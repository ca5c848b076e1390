"""The smem-less kernels (naive, coalesced) on a few output rows (M = 1-16, N, K = 4096) against the number
of blocks each SM holds: do single-lane warps cost an SM in proportion to how many it holds? (GPU only;
the launch mode is for Nsight Compute: benchmarks/skinny_naive.sh.)

  python3 benchmarks/skinny_naive.py time OUT.json   # every point verified and timed as validate times it
  python3 benchmarks/skinny_naive.py launch          # each point launched once (run under ncu)
  python3 benchmarks/skinny_naive.py time OUT.json --n 4096,8192   # these N instead (M = 1-16 each)

naive maps a warp's 32 lanes to 32 rows of C (lane = threadIdx.x = row), so with M rows a warp has
min(M, 32) active lanes and every one of the block's 32 warps is active; coalesced maps them to 32
columns, so a block has min(M, 32) active warps of 32 lanes. N picks the blocks per SM at one wave:
N / 32 blocks of 1,024 threads, two at most per SM (2,048 threads); on a GPU of S SMs, N = 32 S gives
one block on every SM and N = 64 S two. `--n` takes other N instead: N = 4096 is the row pitch (16 KB, a
power of two) of the published A100-PCIe points at M = 1-8 (published/sgemm.toml), which the default N,
multiples of 32 S, do not have."""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

from perfmodel import KernelConfig
from perfmodel.measure.gpu import Gpu, Problem, measure_point

K = 4096
MS = [1, 2, 4, 8, 16]
KERNELS = ["naive", "coalesced"]


def shapes(sms: int, ns: list[int] | None = None) -> list[tuple[int, int, int]]:
    """(M, N, K) per N and M; by default one block per SM, a quarter of the SMs with two, two everywhere."""
    ns = ns or [32 * sms, 32 * sms + 32 * (sms // 4), 64 * sms]
    return [(m, n, K) for n in ns for m in MS]


def parse_args(argv: list[str]):
    """mode (time | launch), OUT.json for time, and --n's column counts (None: the default N)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", nargs="?", default="time", choices=("time", "launch"))
    ap.add_argument("out", nargs="?", help="the JSON file to write (time)")
    ap.add_argument("--n", help="comma-separated column counts N instead of the default ones")
    a = ap.parse_args(argv)
    if a.mode == "time" and not a.out:
        ap.error("time needs OUT.json, the file to write")
    ns = None
    if a.n is not None:
        try:
            ns = [int(x) for x in a.n.split(",")]
        except ValueError:
            ap.error(f"--n takes comma-separated column counts N, e.g. --n 4096,8192; got {a.n!r}")
        if any(n < 32 or n % 32 for n in ns):
            ap.error(f"--n: every N must be a positive multiple of 32 (whole blocks), got {a.n}")
    return a.mode, a.out, ns


def main(argv: list[str]) -> int:
    mode, out_json, ns = parse_args(argv)
    gpu = Gpu()
    sms = gpu.sm_count
    recs = []
    for kernel in KERNELS:
        cfg = KernelConfig.make(kernel)
        cubin = gpu.cubin(cfg)
        for M, N, Kk in shapes(sms, ns):
            prob = Problem(gpu, M, N, Kk)
            if mode == "launch":
                fn = gpu.function(cfg, cubin)
                print(f"{kernel} M={M} N={N} K={Kk}", flush=True)
                gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, M, N, Kk)()
                gpu.sync()
                continue
            m = measure_point(gpu, prob, cfg, "skinny", cubin=cubin)
            t = m.timing
            recs.append(dict(kernel=kernel, M=M, N=N, K=Kk, blocks=N // 32, sms=sms, verified=m.verified,
                             gflops=m.gflops_median, median_ms=t.median_ms if t else None,
                             q10_ms=t.q10_ms if t else None, q90_ms=t.q90_ms if t else None,
                             sm_clock_MHz=t.sm_clock_MHz_median if t else None, registers=m.registers))
            print(f"{kernel} M={M} N={N}: {m.gflops_median or 0:,.1f} GFLOPS ({'verified' if m.verified else m.verification})",
                  flush=True)
    if mode == "time":
        out = Path(out_json)
        out.write_text(json.dumps(dict(gpu=gpu.name, sms=sms, points=recs), indent=1))
        print(f"| kernel | M | N | blocks / SM | median ms | q10-q90 ms | GFLOPS |")
        print("|---|---|---|---|---|---|---|")
        for r in recs:
            print(f"| {r['kernel']} | {r['M']} | {r['N']} | {r['blocks'] / sms:.2f} | {r['median_ms']:.3f} | "
                  f"{r['q10_ms']:.3f}-{r['q90_ms']:.3f} | {r['gflops']:,.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
