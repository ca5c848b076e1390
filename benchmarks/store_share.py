"""What share of every wave's C-store burst recorded points pay where an SM holds two or more blocks (CPU only;
run from the repository root). Prints a table per configuration and a summary by how the stores fill sectors.

Each point is predicted twice: with no resident block's burst charged beyond a lone block's
(`predict.SCATTERED_STORE_RATIO` set above any ratio) and with every resident block's burst charged in every
wave but the last (the ratio set to 0). The measured time then says which share of that charge the point
pays: share = (measured - first) / (second - first), in time. 0: the other blocks hide the stores; 1: the
blocks store one after the other and the SM waits for all of them (benchmarks/store_burst.py measures the
same of a kernel that only waits and then stores). Only points with two or more blocks per SM and a burst of
at least `--min-burst` of the predicted time say anything; the rest are left out.

    python benchmarks/store_share.py RUN [RUN ...] [--calibration FILE] [--class small_k] [--min-burst 0.05]

Without --calibration each run is predicted with its own calibration.toml, else the reference calibration of
its device."""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

import numpy as np

from perfmodel.accuracy import figures_for
from perfmodel.analysis import load_run, run_facts, shape_class
from perfmodel.analysis import rows as analysis_rows
from perfmodel.catalogue import KernelConfig
from perfmodel.model.gstores import c_store_ratio

P = importlib.import_module("perfmodel.model.predict")


def points(runs: list[Path], calibration: str | None, cls: str | None) -> dict:
    """(run, kernel, config, shape, group) -> {threshold: scored point} for the two thresholds (hold-out left out)."""
    out: dict = {}
    saved = P.SCATTERED_STORE_RATIO
    try:
        for run_dir in runs:
            run = load_run(run_dir)
            if cls:
                run = run.model_copy(update=dict(measurements=[m for m in run.measurements if shape_class(m.shape) == cls]))
            own = run_dir / "calibration.toml"
            fig = figures_for(run_dir, "measured", calibration or (str(own) if own.exists() else None), run_dir.parent)
            facts = run_facts(run, run_dir)
            for threshold in (np.inf, 0.0):
                P.SCATTERED_STORE_RATIO = threshold
                for r in analysis_rows(run, fig, facts):
                    if r.get("error_pct") is not None:
                        key = (run_dir.name, r["kernel"], r["config"], r.get("shape"), r.get("group"))
                        out.setdefault(key, {})[threshold] = r
    finally:
        P.SCATTERED_STORE_RATIO = saved
    return out


def shares(pts: dict, min_burst: float) -> list[dict]:
    rows = []
    for (run, kernel, config, shape, _), d in pts.items():
        first, second = d[np.inf], d[0.0]
        if first["blocks_per_sm"] < 2:
            continue
        t_meas, t0, t1 = 1.0 / first["measured_gflops"], 1.0 / first["predicted_gflops"], 1.0 / second["predicted_gflops"]
        if (t1 - t0) < min_burst * t0:
            continue
        ratio = c_store_ratio(KernelConfig.make(kernel, **json.loads(config)))
        rows.append(dict(run=run, kernel=kernel, config=config, shape=shape, blocks=int(first["blocks_per_sm"]), ratio=ratio,
                         burst=(t1 - t0) / t0, share=(t_meas - t0) / (t1 - t0)))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="recorded results folders")
    ap.add_argument("--calibration", help="predict every run with this calibration file")
    ap.add_argument("--class", dest="cls", help="only this shape class (shapes runs)")
    ap.add_argument("--min-burst", type=float, default=0.05, help="least burst share of the predicted time (default 0.05)")
    a = ap.parse_args(argv)
    for r in a.runs:
        if not (r / "raw.json.xz").exists() and not (r / "raw.json").exists():
            print(f"error: {r} is not a recorded run (no raw.json[.xz])", file=sys.stderr)
            return 2
    rows = shares(points(a.runs, a.calibration, a.cls), a.min_burst)
    print("| kernel | configuration | shape | blocks/SM | sector bytes per byte of C | burst / predicted time | share paid |")
    print("|---|---|---|---:|---:|---:|---:|")
    for r in sorted(rows, key=lambda r: (r["ratio"], r["share"])):
        print(f"| {r['kernel']} | {r['config']} | {r['shape']} | {r['blocks']} | {r['ratio']:g} | {r['burst']:.2f} | {r['share']:.2f} |")
    print()
    print("| stores | points | median share | quartiles |")
    print("|---|---:|---:|---|")
    for name, sel in (("lanes share sectors (ratio < 8)", [r for r in rows if r["ratio"] < P.SCATTERED_STORE_RATIO]),
                      ("a sector a lane (ratio 8)", [r for r in rows if r["ratio"] >= P.SCATTERED_STORE_RATIO])):
        if sel:
            s = np.array([r["share"] for r in sel])
            print(f"| {name} | {len(s)} | {np.median(s):.2f} | {np.percentile(s, 25):.2f} to {np.percentile(s, 75):.2f} |")
        else:
            print(f"| {name} | 0 | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
