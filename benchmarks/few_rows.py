"""The one-element kernels on a few rows (GPU): naive and coalesced 32 x 32 at M = 1, 2, 4, 8 rows, K = 4096,
with N = 4096 (on a 132-SM H100 one block of 1,024 threads on 128 of the SMs) and N = 8448 (two on every SM),
beside cuBLAS. naive's warps then hold one live lane each (x, a warp's lanes, runs down the rows), and every
one of a block's 32 warps loads its own word of the same B line each k step, so with two blocks an SM issues
twice the load instructions for the same lines: the two widths say what a second block costs such a loop,
which the model puts at +24 % for one row (latency-bound) and +100 % for eight (the L1's lines).

    python benchmarks/few_rows.py

Every point verified and timed as validate times it. Writes results/<date>-<device>-few-rows/raw.json (a
perfmodel Run, group `few_rows`) and prints a table last."""
from __future__ import annotations

import sys

from perfmodel.catalogue import KernelConfig

from grid_measure import measure_shapes

ROWS = (1, 2, 4, 8)
NS = (4096, 8448)
K = 4096


def main() -> int:
    cfgs = [KernelConfig.make(k, bm=32, bn=32) for k in ("naive", "coalesced")]
    shapes = [(m, n, K) for m in ROWS for n in NS]
    _, ms = measure_shapes("few-rows", "few_rows", shapes, {None: cfgs})
    print(f"{'kernel':12} {'M':>3} " + " ".join(f"{'N=' + str(n) + ' us':>12}" for n in NS) + "   ratio")
    for c in [None] + cfgs:
        name = "cublas" if c is None else c.kernel
        for m in ROWS:
            t = {x.N: (2.0 * x.M * x.N * x.K / x.gflops_median * 1e-3 if x.verified and x.gflops_median else float("nan")) for x in ms
                 if x.M == m and (x.kernel == "cublas" if c is None else (x.kernel == c.kernel and x.config == c.params()))}
            print(f"{name:12} {m:3d} " + " ".join(f"{t[n]:12.1f}" for n in NS) + f"   {t[NS[1]] / t[NS[0]]:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
