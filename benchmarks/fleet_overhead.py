"""What measuring through workers costs per point, on the CPU (measure.fleet with simulated workers that
take a fixed time per point): the process pool and Ray, one and two workers.

    python benchmarks/fleet_overhead.py [--points 200] [--delay 0.05] [--out results/archive/fleet-overhead-DATE-cpu]

Overhead per point = (wall time of run_points - points x delay / workers) / (points / workers): what the
coordinator, the queues or Ray, and the records add to each point. Writes OUT.txt and OUT.json."""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from perfmodel.measure import fleet
from perfmodel.measure.records import PlannedPoint
from perfmodel.measure.worker import SimulatedWorker


def points(n: int) -> list[PlannedPoint]:
    return [PlannedPoint(group=f"p{i}", kernel="double_buffer", config=dict(bm=64, bn=64, bk=8, tm=8, tn=8),
                         shape=f"s{i % 4}", M=512, N=512, K=512) for i in range(n)]


def once(kind: str, workers: int, pts, delay: float) -> dict:
    d = Path(tempfile.mkdtemp())
    specs = [(SimulatedWorker, (i, delay), {}) for i in range(workers)]
    pool = fleet.ProcessPool(specs) if kind == "process" else fleet.RayPool([(f, a) for f, a, _ in specs], gpus_each=0)
    try:
        ws = fleet.start_workers(pool)
        t0 = time.perf_counter()
        out = fleet.run_points(pool, ws, pts, d / "points.jsonl", {p.key(): 1.0 for p in pts}, {}, echo=lambda *a, **k: None)
        wall = time.perf_counter() - t0
    finally:
        pool.close()
    assert out.measured == len(pts)
    per = len(pts) / workers
    return dict(backend=kind, workers=workers, points=len(pts), delay_s=delay, wall_s=wall,
                overhead_ms_per_point=1e3 * (wall - per * delay) / per)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=200)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    date = datetime.now(timezone.utc)
    out = Path(a.out) if a.out else Path("results/archive") / f"fleet-overhead-{date:%Y%m%d}-cpu"
    if out.with_suffix(".txt").exists() or out.with_suffix(".json").exists():
        print(f"error: {out}.txt/.json exists; results are never overwritten", file=sys.stderr)
        return 2
    pts = points(a.points)
    rows = []
    for kind in ("process", "ray"):
        for w in (1, 2):
            rs = [once(kind, w, pts, a.delay) for _ in range(a.repeats)]
            ov = [r["overhead_ms_per_point"] for r in rs]
            rows.append(dict(backend=kind, workers=w, runs=rs, median_ms=float(np.median(ov)), min_ms=min(ov), max_ms=max(ov)))
            print(f"{kind:8} {w} worker(s): {np.median(ov):6.2f} ms per point ({min(ov):.2f}-{max(ov):.2f})", flush=True)
    if "ray" in sys.modules:
        sys.modules["ray"].shutdown()
    lines = [f"Overhead per point of measuring through workers ({a.points} points of {1e3 * a.delay:.0f} ms each, simulated "
             f"workers, {a.repeats} runs each; {platform.node()}, {os.cpu_count()} CPUs)",
             f"{'backend':8} {'workers':>7} {'median ms/point':>16} {'min-max':>13}"]
    lines += [f"{r['backend']:8} {r['workers']:7d} {r['median_ms']:16.2f} {r['min_ms']:6.2f}-{r['max_ms']:<6.2f}" for r in rows]
    text = "\n".join(lines)
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".txt").write_text(text + "\n")
    out.with_suffix(".json").write_text(json.dumps(dict(points=a.points, delay_s=a.delay, rows=rows), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
