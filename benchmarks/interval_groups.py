"""How wide the model's residual alone makes the 90 % interval, by how the residual is grouped (CPU, no compiler).

Reads the points CSVs `perfmodel accuracy RUN ... --points FILE` writes, pools their residuals ln(measured /
predicted GFLOPS) per group, and scores each file's points with their group's 5/25/75/95 % levels (as
model.uncertainty draws the residual, without its inputs): the share inside the 50 % and 90 % intervals, the median
90 % half-width as a share of the prediction, and its ratio to the median absolute error (the intervals goal asks
at most 2 for calibrated figures). A group with fewer than MIN_POINTS residuals takes its bound's, as the spread
files do. The groupings: bound and regime (model_spread.toml's), the same and whether the point runs a guarded
edge body (a tile that does not divide M, N or K, or K or N not a multiple of 4), kernel and bound, kernel alone.

    python3 benchmarks/interval_groups.py POINTS.csv [POINTS.csv ...] [--pool POINTS.csv ...]

Each FILE is scored; --pool adds files whose residuals join the pool without being scored (default: the scored
files alone). In-sample: the pooled residuals include the scored points.
"""
import argparse
import csv
import json
import sys
from collections import defaultdict

import numpy as np

from perfmodel.model.uncertainty import MIN_POINTS


def edge(row: dict) -> bool:
    """Whether a point's blocks include the guarded edge body's (kernels/outer_f4.cuh: a tile that does not divide C or K,
    or K or N not a multiple of 4); the smem-less kernels (bk 1) have no tile along K."""
    c = json.loads(row["config"])
    M, N, K = int(row["M"]), int(row["N"]), int(row["K"])
    bm, bn, bk = c.get("bm", 1), c.get("bn", 1), c.get("bk", 1)
    return bool(M % bm or N % bn or K % bk or K % 4 or N % 4)


GROUPINGS = {
    "bound, regime": lambda r: (r["bound"], r["regime"]),
    "bound, regime, edge": lambda r: (r["bound"], r["regime"], edge(r)),
    "kernel, bound": lambda r: (r["bound"], r["kernel"]),
    "kernel": lambda r: ("", r["kernel"]),
}


def read(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if float(r["predicted_gflops"]) > 0 and float(r["measured_gflops"]) > 0]


def residual(r: dict) -> float:
    return float(np.log(float(r["measured_gflops"]) / float(r["predicted_gflops"])))


def score(points: list[dict], pool: list[dict], key) -> dict:
    """The points' intervals from the pool's residual per group (key(row) -> a tuple whose first entry is the bound)."""
    groups, bounds = defaultdict(list), defaultdict(list)
    for r in pool:
        groups[key(r)].append(residual(r))
        bounds[key(r)[0]].append(residual(r))
    P = np.array([float(r["predicted_gflops"]) for r in points])
    M = np.array([float(r["measured_gflops"]) for r in points])
    q = np.empty((len(points), 4))
    for i, r in enumerate(points):
        res = groups[key(r)]
        if len(res) < MIN_POINTS:
            res = bounds[key(r)[0]] if len(bounds[key(r)[0]]) >= MIN_POINTS else [x for v in groups.values() for x in v]
        q[i] = np.quantile(res, [0.05, 0.25, 0.75, 0.95])
    lo5, lo25, hi75, hi95 = (P * np.exp(q[:, j]) for j in range(4))
    half = float(np.median(50.0 * (hi95 - lo5) / P))
    mae = float(np.median(np.abs(100.0 * (P / M - 1.0))))
    return dict(points=len(points), inside_50_pct=100.0 * float(np.mean((M >= lo25) & (M <= hi75))),
                inside_90_pct=100.0 * float(np.mean((M >= lo5) & (M <= hi95))), half_width_pct=half, mae_pct=mae,
                ratio=half / mae if mae > 0 else float("inf"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="points CSVs to score (perfmodel accuracy --points)")
    ap.add_argument("--pool", nargs="*", default=[], help="more points CSVs whose residuals join the pool")
    a = ap.parse_args()
    try:
        scored = {f: read(f) for f in a.files}
        pool = [r for rows in scored.values() for r in rows] + [r for f in a.pool for r in read(f)]
    except (OSError, KeyError, ValueError) as e:
        print(f"error: cannot read a points CSV (perfmodel accuracy --points): {e}", file=sys.stderr)
        return 2
    print(f"residual pooled from {len(pool)} points; in-sample")
    print("| file | grouping | points | inside 50 % | inside 90 % | median 90 % half-width | median abs. error | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for f, rows in scored.items():
        for name, key in GROUPINGS.items():
            s = score(rows, pool, key)
            print(f"| {f} | {name} | {s['points']} | {s['inside_50_pct']:.1f} % | {s['inside_90_pct']:.1f} % | "
                  f"{s['half_width_pct']:.2f} % | {s['mae_pct']:.2f} % | {s['ratio']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
