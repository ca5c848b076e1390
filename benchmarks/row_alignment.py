"""Where ragged sizes lose (GPU): the same configurations at K = 1024 (every tile's bk divides it, rows
16-byte aligned: the interior body's float4 loads), K = 1020 (rows 16-byte aligned, K not a multiple of
bk >= 8) and K = 1023 (rows 4-byte aligned), at M = N = 1024 and 2048, each with ragged = edge, inner and
inner4 (at K = 1024 the inner bodies run too: inner's scalar loads from aligned rows; at K = 1023 inner4
runs the edge body), beside cuBLAS.

    python benchmarks/row_alignment.py

So one record separates what the scalar loads cost (K = 1024: edge, i.e. the interior body, against
inner), what a K that is not a multiple of bk costs (1020 against 1024, inner and inner4), what rows that
are not 16-byte aligned cost (1023 against 1020, inner), and what the checks cost (edge against inner4 at 1020). Every point verified and timed as validate times
it. Writes results/<date>-<device>-alignment/raw.json (a perfmodel Run, group `alignment`) and prints
a table last."""
from __future__ import annotations

import sys

from perfmodel.catalogue import KernelConfig

from grid_measure import measure_grid

CONFIGS = [dict(kernel="double_buffer"),
           dict(kernel="double_buffer", bm=128, bn=64, bk=32, tm=8, tn=4, thread_tile="contiguous", a_transposed="no",
                frag_width=1),
           dict(kernel="double_buffer", bm=128, bn=128, bk=16, tm=16, tn=8),
           dict(kernel="bank_conflict_free")]
MN = (1024, 2048)
RAGGED = ("edge", "inner", "inner4")
KS = (1024, 1020, 1023)


def configs() -> list[KernelConfig]:
    return [KernelConfig.make(**c, ragged=r) for c in CONFIGS for r in RAGGED]


def main() -> int:
    cfgs = configs()
    _, ms = measure_grid("alignment", "alignment", MN, KS, cfgs)
    print(f"{'config':75} {'M=N':>5} " + " ".join(f"{'K=' + str(k):>9}" for k in KS))
    for mn in MN:
        cub = {m.K: m.gflops_median for m in ms if m.kernel == "cublas" and m.M == mn}
        print(f"{'cublas':75} {mn:5d} " + " ".join(f"{cub[k]:9,.0f}" for k in KS))
        for c in cfgs:
            g = {m.K: (m.gflops_median if m.verified else float("nan")) for m in ms
                 if m.kernel == c.kernel and m.config == c.params() and m.M == mn}
            print(f"{c.label():75} {mn:5d} " + " ".join(f"{g[k]:9,.0f}" for k in KS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
