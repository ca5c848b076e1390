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
from datetime import datetime, timezone
from pathlib import Path

from perfmodel.catalogue import KernelConfig
from perfmodel.devices import shipped_devices
from perfmodel.measure.detect import match_shipped
from perfmodel.measure.gpu import Gpu, Problem, compile_all, measure_compiled, measure_point
from perfmodel.measure.nvml import NvmlSampler
from perfmodel.measure.records import Run
from perfmodel.measure.validate import device_toml
from perfmodel.measure.worker import environment

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
    gpu = Gpu()
    dev = match_shipped(gpu.name, gpu.cc)
    started = datetime.now(timezone.utc)
    out = Path("results") / f"{started:%Y%m%d-%H%M%S}-{dev}-alignment"
    out.mkdir(parents=True)
    cfgs = configs()
    cubins = compile_all(gpu, {c.label(): c for c in cfgs})
    try:
        sampler = NvmlSampler()
    except Exception:
        sampler = None
    ms = []
    for mn in MN:
        for k in KS:
            prob = Problem(gpu, mn, mn, k)
            ms.append(measure_point(gpu, prob, None, "baseline", sampler, 25.0, 100.0))
            for c in cfgs:
                ms.append(measure_compiled(gpu, prob, c, "alignment", sampler, 25.0, 100.0, cubins))
            del prob
            print(f"  {mn}x{mn}x{k}: {len(cfgs)} configurations measured", flush=True)
    run = Run(environment=environment(gpu, dev, started), device_toml=device_toml(shipped_devices()[dev]), measurements=ms)
    (out / "raw.json").write_text(run.model_dump_json(indent=1))
    print(f"results in {out}; {sum(not m.verified for m in ms)} failed")
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
