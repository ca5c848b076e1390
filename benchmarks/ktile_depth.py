"""How the time of a block grows with its number of k-tiles (GPU): a few configurations at M = N = 1024 (one
partial wave) and 4096 (many waves), K = 64 to 4096, beside cuBLAS. Fitting time = fixed + per-tile x k-tiles per
(configuration, M = N) separates what a block costs once (its first tile's loads, writing C, the launch) from
what each k-tile costs, which the recorded runs, all at large K, cannot: configurations with 32 or fewer
k-tiles a block are predicted 8-26 % fast over the recorded H100 runs, and more so at bk = 16 than at 8
(docs/model.md). Every point verified and timed as validate times it. Writes
results/<date>-<device>-ktile-depth/raw.json (a perfmodel Run, group `ktile_depth`; `perfmodel accuracy RUN`
replays it) and prints a table last.

    python benchmarks/ktile_depth.py
    python benchmarks/ktile_depth.py --fit RUN   (CPU) per configuration and M = N: the error at each K, and
        fixed + per-tile x k-tiles fitted to the measured and to the predicted times (the reference calibration)"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from perfmodel.accuracy import figures_for
from perfmodel.analysis import load_run, rows, run_facts
from perfmodel.catalogue import KernelConfig

from grid_measure import measure_grid

CONFIGS = [dict(kernel="double_buffer", bm=128, bn=128, bk=8, tm=16, tn=8),
           dict(kernel="double_buffer", bm=128, bn=128, bk=16, tm=16, tn=8),
           dict(kernel="double_buffer", bm=128, bn=256, bk=16, tm=16, tn=8),
           dict(kernel="double_buffer", bm=64, bn=256, bk=8, tm=16, tn=8),
           dict(kernel="tiled_2d_float4"),
           dict(kernel="warp_tiled")]
MN = (1024, 4096)
KS = (64, 128, 256, 512, 1024, 4096)


def configs() -> list[KernelConfig]:
    return [KernelConfig.make(**c) for c in CONFIGS]


def main() -> int:
    cfgs = configs()
    _, ms = measure_grid("ktile-depth", "ktile_depth", MN, KS, cfgs)
    print(f"{'config (median us)':62} {'M=N':>5} " + " ".join(f"{'K=' + str(k):>8}" for k in KS))
    for mn in MN:
        for c in [None] + cfgs:
            t = {m.K: (m.timing.median_ms * 1e3 if m.verified and m.timing else float("nan")) for m in ms
                 if m.M == mn and (m.kernel == "cublas" if c is None else (m.kernel == c.kernel and m.config == c.params()))}
            print(f"{'cublas' if c is None else c.label():62} {mn:5d} " + " ".join(f"{t[k]:8.1f}" for k in KS))
    return 0


def fit(run_dir: Path) -> int:
    """Least-squares fixed (us) + per-tile (ns) x k-tiles to the measured and the predicted times."""
    run = load_run(run_dir)
    fig = figures_for(run_dir, "measured", None, Path("results"), own_fallback=True)
    pts: dict = {}
    for r in rows(run, fig, run_facts(run, run_dir)):
        if r["kernel"] == "cublas" or r.get("error_pct") is None:
            continue
        pts.setdefault((r["kernel"], r["config"], r["M"]), {})[r["K"]] = (r["median_ms"] * 1e3, r["_prediction"].time_s * 1e6,
                                                                         r["error_pct"])
    print("| configuration | M = N | error at K = " + " / ".join(str(k) for k in KS) + " | measured: fixed us + ns per k-tile "
          "| predicted: fixed us + ns per k-tile |")
    print("|---|---|---|---|---|")
    for (kernel, config, mn), d in pts.items():
        bk = json.loads(config)["bk"]
        ks = sorted(d)
        kt = np.array([k / bk for k in ks])
        (bm_, am), (bp, ap) = np.polyfit(kt, [d[k][0] for k in ks], 1), np.polyfit(kt, [d[k][1] for k in ks], 1)
        label = KernelConfig.make(kernel, **json.loads(config)).label()
        print(f"| {label} | {mn} | " + " / ".join(f"{d[k][2]:+.1f}" for k in ks) +
              f" % | {am:.1f} + {bm_ * 1e3:,.0f} | {ap:.1f} + {bp * 1e3:,.0f} |")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", metavar="RUN", help="fit a recorded run (CPU) instead of measuring")
    a = ap.parse_args()
    if a.fit is not None and not (Path(a.fit) / "raw.json").is_file() and not (Path(a.fit) / "raw.json.xz").is_file():
        ap.error(f"--fit takes a recorded run folder (results/*-ktile-depth) holding raw.json or raw.json.xz, got {a.fit}")
    sys.exit(fit(Path(a.fit)) if a.fit is not None else main())
