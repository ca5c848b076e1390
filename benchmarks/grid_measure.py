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
    return measure_shapes(tag, group, [(mn, mn, k) for mn in sizes for k in ks], {None: cfgs})


def measure_shapes(tag: str, group: str, shapes: Sequence[tuple[int, int, int]],
                   cfgs: dict) -> tuple[Path, list[Measurement]]:
    """cuBLAS and configurations at each (M, N, K) of shapes: cfgs maps a shape to the configurations measured
    there (None: at every shape). The Run is written before this returns. Prints a line per shape."""
    gpu = Gpu()
    dev = match_shipped(gpu.name, gpu.cc)
    started = datetime.now(timezone.utc)
    out = Path("results") / f"{started:%Y%m%d-%H%M%S}-{dev}-{tag}"
    out.mkdir(parents=True)
    every = list(cfgs.get(None, []))
    cubins = compile_all(gpu, {c.label(): c for cs in cfgs.values() for c in cs})
    try:
        sampler = NvmlSampler()
    except Exception:
        sampler = None
    ms = []
    for M, N, K in shapes:
        here = every + list(cfgs.get((M, N, K), []))
        prob = Problem(gpu, M, N, K)
        ms.append(measure_point(gpu, prob, None, "baseline", sampler, 25.0, 100.0))
        for c in here:
            ms.append(measure_compiled(gpu, prob, c, group, sampler, 25.0, 100.0, cubins))
        del prob
        print(f"  {M}x{N}x{K}: {len(here)} configurations measured", flush=True)
    run = Run(environment=environment(gpu, dev, started), device_toml=device_toml(shipped_devices()[dev]), measurements=ms)
    (out / "raw.json").write_text(run.model_dump_json(indent=1))
    print(f"results in {out}; {sum(not m.verified for m in ms)} failed")
    return out, ms
