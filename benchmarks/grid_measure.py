"""The measuring loop the recorded-run benchmarks share (GPU; imported by row_alignment.py and
ktile_depth.py, which run from the repository root): every configuration at every (M = N, K), beside
cuBLAS, verified and timed as validate times them, into results/<date>-<device>-<tag>/raw.json (a
perfmodel Run)."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from perfmodel.catalogue import KernelConfig
from perfmodel.devices import shipped_devices
from perfmodel.measure.detect import match_shipped
from perfmodel.measure.gpu import Gpu, Problem, compile_all, measure_compiled, measure_point
from perfmodel.measure.nvml import NvmlSampler
from perfmodel.measure.records import Measurement, Run
from perfmodel.measure.validate import device_toml
from perfmodel.measure.worker import environment


def measure_grid(tag: str, group: str, sizes: Sequence[int], ks: Sequence[int],
                 cfgs: Sequence[KernelConfig]) -> tuple[Path, list[Measurement]]:
    """cuBLAS and cfgs at M = N = each of sizes and K = each of ks (cuBLAS's points in group `baseline`,
    the configurations' in `group`); the Run is written before this returns. Prints a line per shape."""
    gpu = Gpu()
    dev = match_shipped(gpu.name, gpu.cc)
    started = datetime.now(timezone.utc)
    out = Path("results") / f"{started:%Y%m%d-%H%M%S}-{dev}-{tag}"
    out.mkdir(parents=True)
    cubins = compile_all(gpu, {c.label(): c for c in cfgs})
    try:
        sampler = NvmlSampler()
    except Exception:
        sampler = None
    ms = []
    for mn in sizes:
        for k in ks:
            prob = Problem(gpu, mn, mn, k)
            ms.append(measure_point(gpu, prob, None, "baseline", sampler, 25.0, 100.0))
            for c in cfgs:
                ms.append(measure_compiled(gpu, prob, c, group, sampler, 25.0, 100.0, cubins))
            del prob
            print(f"  {mn}x{mn}x{k}: {len(cfgs)} configurations measured", flush=True)
    run = Run(environment=environment(gpu, dev, started), device_toml=device_toml(shipped_devices()[dev]), measurements=ms)
    (out / "raw.json").write_text(run.model_dump_json(indent=1))
    print(f"results in {out}; {sum(not m.verified for m in ms)} failed")
    return out, ms
