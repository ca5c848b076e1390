"""One shape run's plan measured again and again on one GPU (`bash benchmarks/gpu_run.sh fleet CLASS`, then
`fleet-repeat RUN N`): alternately by one worker process (`--resume COPY --gpus 0`, measure.fleet) and on the
plain one-GPU path (`--resume COPY`). Per point, each repeat's GFLOPS against the first run (how far the
worker path moves a point, next to how far a plain repeat moves it), and per run the measuring time
from its log ("measured N points in T s", compiles excluded): the worker path's time per point against
the plain runs', pair by pair (each worker run beside the plain run measured right after it).

    python benchmarks/fleet_compare.py --base RUN=LOG --worker RUN=LOG ... --plain RUN=LOG ... [--out PREFIX]

Worker and plain runs pair up in the order given. Writes PREFIX.txt and PREFIX.json (default
results/archive/fleet-one-gpu-DATE-DEVICE)."""
from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from perfmodel.analysis import load_run
from perfmodel.measure.records import measurement_key


def _pair(text: str) -> tuple[Path, Path]:
    run, log = text.split("=", 1)
    return Path(run), Path(log)


def gflops(run: Path) -> dict:
    return {measurement_key(m): m.gflops_median for m in load_run(run).measurements if m.verified}


def per_point_ms(log: Path) -> tuple[int, float]:
    m = re.search(r"^measured (\d+) points in ([\d.]+) s", log.read_text(), re.M)
    return int(m.group(1)), float(m.group(2))


def stats(x: np.ndarray) -> dict:
    d = np.abs(x - 1) * 100
    return dict(points=int(len(x)), median_ratio=float(np.median(x)), median_abs_pct=float(np.median(d)),
                p90_abs_pct=float(np.quantile(d, 0.9)), max_abs_pct=float(d.max()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=_pair, required=True)
    ap.add_argument("--worker", type=_pair, nargs="+", required=True)
    ap.add_argument("--plain", type=_pair, nargs="+", required=True)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    if len(a.worker) != len(a.plain):
        print("error: give as many --worker runs as --plain runs (they pair up in order)", file=sys.stderr)
        return 2
    base = gflops(a.base[0])
    dev = load_run(a.base[0]).environment.device_file
    date = datetime.now(timezone.utc)
    out = Path(a.out) if a.out else Path("results/archive") / f"fleet-one-gpu-{date:%Y%m%d}-{dev}"
    if out.with_suffix(".txt").exists():
        print(f"error: {out}.txt exists; results are never overwritten", file=sys.stderr)
        return 2
    rows, ratios = [], {"worker": [], "plain": []}
    for kind, pairs in (("worker", a.worker), ("plain", a.plain)):
        for run, log in pairs:
            row = dict(kind=kind, run=run.name, log=log.name)
            if (run / "raw.json").exists() or (run / "raw.json.xz").exists():
                g = gflops(run)
                keys = sorted(set(g) & set(base), key=repr)
                x = np.array([g[k] / base[k] for k in keys])
                ratios[kind].append(x)
                row["vs_base"] = stats(x)
            n, t = per_point_ms(log)
            row.update(points=n, seconds=t, ms_per_point=1e3 * t / n)
            rows.append(row)
    n0, t0 = per_point_ms(a.base[1])
    wk = [r for r in rows if r["kind"] == "worker"]
    pl = [r for r in rows if r["kind"] == "plain"]
    paired = np.array([w["ms_per_point"] / p["ms_per_point"] for w, p in zip(wk, pl)])
    sw, sp = stats(np.concatenate(ratios["worker"])), stats(np.concatenate(ratios["plain"]))
    lines = [f"One plan ({a.base[0].name}, {n0} points) measured again on {dev}: "
             f"{len(wk)} times by one worker process (--gpus 0), {len(pl)} times on the plain path",
             f"per point against the first run  {'points':>6} {'median ratio':>12} {'median |d|':>10} {'90th pct |d|':>12} {'max |d|':>8}"]
    for name, s in (("worker path", sw), ("plain repeats", sp)):
        lines.append(f"  {name:31} {s['points']:6d} {s['median_ratio']:12.4f} {s['median_abs_pct']:9.2f}% "
                     f"{s['p90_abs_pct']:11.2f}% {s['max_abs_pct']:7.1f}%")
    lines.append("measuring time per point (compiles excluded):")
    lines.append(f"  {'first run (plain)':31} {1e3 * t0 / n0:7.1f} ms")
    for w, p, r in zip(wk, pl, paired):
        sfx = lambda r: "RUN" + r["run"][len(a.base[0].name):]  # noqa: E731
        lines.append(f"  {sfx(w):>14} {w['ms_per_point']:7.1f} ms  beside  {sfx(p):>14} {p['ms_per_point']:7.1f} ms  "
                     f"worker/plain {r:.3f}")
    lines.append(f"  worker/plain, pair by pair: median {np.median(paired):.3f}, range {paired.min():.3f}-{paired.max():.3f}; "
                 f"plain runs alone range {min(p['ms_per_point'] for p in pl):.1f}-{max(p['ms_per_point'] for p in pl):.1f} ms")
    text = "\n".join(lines)
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".txt").write_text(text + "\n")
    out.with_suffix(".json").write_text(json.dumps(dict(base=a.base[0].name, base_ms_per_point=1e3 * t0 / n0, runs=rows,
                                                         worker_vs_base=sw, plain_vs_base=sp,
                                                         paired_worker_over_plain=paired.tolist()), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
