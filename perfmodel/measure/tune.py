"""`perfmodel sweep --measure K`: model-guided tuning on the local GPU. Measures the model's top K
configurations and a random sample of the rest, and reports where the measured best ranked in the
model's order. Writes a results folder like validate (raw.json, group 'tune')."""
from __future__ import annotations

import random
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..model.figures import Figures
from .detect import match_shipped
from .gpu import Gpu, Problem, compile_all, measure_point
from .records import PlannedPoint, Run, measurement_key
from .validate import _Fleet, _recorded
from .worker import environment

SAMPLE = 20


def measure_sweep(device, configs, gflops, M, N, K, top_k: int, sample: int = SAMPLE, seed: int = 0,
                  chosen: list | None = None, kind: str = "", gpus: str | None = None, ray: str | None = None,
                  mixed: bool = False) -> int:
    """Measure the model's top K and a random sample of the rest; or, with `chosen`, exactly those configs
    (sweep --measure-overlap: the ones whose interval overlaps the first's), no sample. gpus or ray: on a
    worker per GPU (measure.fleet), each point naming its GPU."""
    order = list(np.argsort(-np.asarray(gflops), kind="stable"))
    rank = {int(i): r for r, i in enumerate(order, 1)}
    top = [int(i) for i in order[:top_k]] if chosen is None else [int(i) for i in chosen]
    rest = [int(i) for i in order[top_k:]] if chosen is None else []
    top_k = len(top)
    picked = top + random.Random(seed).sample(rest, min(sample, len(rest)))
    if gpus is not None or ray is not None:
        return _measure_on_fleet(device, configs, gflops, M, N, K, top, picked, rank, gpus, ray, mixed,
                                 kind or ("tune" if chosen is None else "tune-overlap"), seed if chosen is None else 0)
    gpu = Gpu()
    if match_shipped(gpu.name, gpu.cc) != device.name:
        print(f"warning: predicting for {device.name} but measuring on {gpu.name}", file=sys.stderr)
    started = datetime.now(timezone.utc)
    kind = kind or ("tune" if chosen is None else "tune-overlap")
    out = Path("results") / f"{started:%Y%m%d-%H%M%S}-{device.name}-{kind}{f'-seed{seed}' if seed and chosen is None else ''}"
    if out.exists():
        raise UserError(f"{out} exists")
    out.mkdir(parents=True)
    cubins = compile_all(gpu, {configs[i].label(): configs[i] for i in picked})  # in parallel, before timing
    prob = Problem(gpu, M, N, K)
    ms = []
    for j, i in enumerate(picked, 1):
        m = measure_point(gpu, prob, configs[i], "tune", rep_ms=50, cubin=cubins[configs[i].label()])
        ms.append((i, m))
        tag = "top" if i in top else "sample"
        res = f"{m.gflops_median:9,.0f}" if m.verified else "FAILED"
        print(f"  [{j:3d}/{len(picked)}] model rank {rank[i]:5d} ({tag:6}) {configs[i].label():70s} predicted {gflops[i]:9,.0f} measured {res}",
              flush=True)
    cub = measure_point(gpu, prob, None, "baseline", rep_ms=50)
    run = Run(environment=environment(gpu, device.name, started), device_toml="", measurements=[m for _, m in ms] + [cub])
    (out / "raw.json").write_text(run.model_dump_json(indent=1))
    ok = [(i, m) for i, m in ms if m.verified]
    return _summary(configs, ok, set(top), rank, cub, out)


def _summary(configs, ok, top, rank, cub, out) -> int:
    """The measured best, where it ranked in the model's order, and the best of the model's top."""
    if not ok:
        return 1
    best_i, best = max(ok, key=lambda t: t[1].gflops_median)
    top_best = max((m.gflops_median for i, m in ok if i in top), default=0.0)
    print(f"\nmeasured best: {configs[best_i].label()} {best.gflops_median:,.0f} GFLOPS, model rank {rank[best_i]} of {len(configs)}")
    print(f"best of the model's top {len(top)}: {top_best:,.0f} GFLOPS = {100 * top_best / best.gflops_median:.1f} % of the measured best; "
          f"cuBLAS {cub.gflops_median if cub and cub.gflops_median else float('nan'):,.0f}; results in {out}")
    return 0

def _measure_on_fleet(device, configs, gflops, M, N, K, top, picked, rank, gpus, ray, mixed, kind, seed) -> int:
    """measure_sweep's points (and cuBLAS) measured by a worker per GPU; the same record as the one-GPU path."""
    site = _Fleet(gpus, ray, mixed)
    if match_shipped(site.name, site.cc) != device.name:
        print(f"warning: predicting for {device.name} but measuring on {site.name}", file=sys.stderr)
    started = datetime.now(timezone.utc)
    out = Path("results") / f"{started:%Y%m%d-%H%M%S}-{device.name}-{kind}{f'-seed{seed}' if seed else ''}"
    if out.exists():
        site.pool.close()
        raise UserError(f"{out} exists")
    out.mkdir(parents=True)
    env = site.environment(device.name, started)
    dims = dict(shape=f"{M}x{N}x{K}", M=M, N=N, K=K)
    pts = [PlannedPoint(group="tune", kernel=configs[i].kernel, config=configs[i].params(), **dims) for i in picked]
    pts.append(PlannedPoint(group="baseline", kernel="cublas", config={}, **dims))
    log = out / "points.jsonl"
    site.measure(pts, log, Figures(device), out, (25.0, 50.0), resumable=False)
    got = {measurement_key(m): m for m in _recorded(log)}
    ms = [got[p.key()].model_copy(update={"shape": None}) for p in pts if p.key() in got]
    run = Run(environment=env, device_toml="", measurements=ms)
    (out / "raw.json").write_text(run.model_dump_json(indent=1))
    log.unlink()
    ok = [(i, got[p.key()]) for i, p in zip(picked, pts) if p.key() in got and got[p.key()].verified]
    cub = next((m for m in ms if m.kernel == "cublas"), None)
    return _summary(configs, ok, top, rank, cub, out)
