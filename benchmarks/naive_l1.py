"""The naive kernel's A loads (a warp reads one word of 32 rows, K floats apart) against K mod 32: how
many L1 wavefronts and L2 sectors such a load costs, and the kernel's speed (GPU only; the ncu mode
needs Nsight Compute).

  python3 benchmarks/naive_l1.py time [KERNEL]    # GFLOPS of the kernel's defaults (naive), M = N = 2048, K near 2048
  python3 benchmarks/naive_l1.py launch [KERNEL]  # each K launched once (run under ncu: benchmarks/naive_l1.sh)
  NAIVE_L1_KS=1000,1001,... NAIVE_L1_MN=2048 python3 benchmarks/naive_l1.py time   # other K values or M = N

The K values differ only in their factor of two: gcd(K, 32) rows of a warp share an L1 bank
(word address m*K + k, 32 banks of 4 bytes), so the load needs gcd(K, 32) wavefronts if the lines are
in L1 and one per line if the L1 works line by line."""
import os
import sys
import time

import numpy as np

from perfmodel import KernelConfig
from perfmodel.measure.gpu import Gpu, Problem

M = N = int(os.environ.get("NAIVE_L1_MN", "2048"))
KS = [int(k) for k in os.environ.get("NAIVE_L1_KS", "2048,2049,2047,2046,2044,2040,2032,2016,1000,1023").split(",")]


def main(mode: str, kernel: str = "naive") -> int:
    gpu = Gpu()
    cfg = KernelConfig.make(kernel)
    fn = gpu.function(cfg)
    rows = []
    for K in KS:
        prob = Problem(gpu, M, N, K)
        run = gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, M, N, K)
        if mode == "launch":
            print(f"kernel {kernel} K={K} gcd={np.gcd(K, 32)}", flush=True)
            run()
            gpu.sync()
            continue
        run()
        gpu.sync()
        ts = []
        for _ in range(9):
            t0 = time.perf_counter()
            run()
            gpu.sync()
            ts.append(time.perf_counter() - t0)
        ts = np.array(ts)
        g = 2.0 * M * N * K / ts / 1e9
        rows.append((K, int(np.gcd(K, 32)), float(np.median(g)), float(g.min()), float(g.max())))
    if mode == "time":
        print(f"{gpu.name}: {cfg.label()}, M = N = {M}; GFLOPS median (min-max) of 9 launches, host-timed")
        print("| K | gcd(K, 32) | row stride mod 128 B | GFLOPS | min | max |")
        print("|---|---|---|---|---|---|")
        for K, g, med, lo, hi in rows:
            print(f"| {K} | {g} | {4 * K % 128} | {med:,.0f} | {lo:,.0f} | {hi:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(sys.argv[1:3] if len(sys.argv) > 1 else ["time"])))
