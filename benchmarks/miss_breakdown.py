"""Where the model misses, by a configuration's parameter: the recorded points' error grouped by kernel and
one or two of bk, bm, bn, tm, tn, blocks (resident blocks per SM), warps (per block), registers (250 and
more: 'cap'), spills (local frame > 0), regime (Prediction.regime: lone, subwave, few, many), loop (the
unrolled k-tile loop's code: up to 16, 32, 48, 64 KB or more), size (M, N, K all >= 2048 or not). CPU only; the same predictions as
`perfmodel accuracy` (the reference calibration of each run's device, else its own).

  python3 benchmarks/miss_breakdown.py --by bk[,blocks] [--kernel K] [--min-size 2048] [--figures F] RUN ...
  (RUN: results folders; default the accuracy set)

Prints a table per kernel and over all kernels: points, bias and MAPE per group."""
import argparse
import json
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from perfmodel.accuracy import accuracy_set, figures_for
from perfmodel.analysis import load_run, rows, run_facts

KEYS = ("bk", "bm", "bn", "tm", "tn", "blocks", "warps", "registers", "spills", "regime", "loop")
LOOP_KB = (16, 32, 48, 64)


def _loop(code_bytes: float) -> str:
    """The loop's code-size group: the first LOOP_KB bound it stays under, else over the last."""
    kb = code_bytes / 1024
    return next((f"<={b}KB" for b in LOOP_KB if kb <= b), f">{LOOP_KB[-1]}KB")


def _points(job):
    rd, figures = job
    fig = figures_for(rd, figures, None, Path("results"), own_fallback=True)
    run = load_run(rd)
    out = []
    for r in rows(run, fig, run_facts(run, rd)):
        if r.get("error_pct") is None:
            continue
        p = r["_prediction"]
        c = json.loads(r["config"])
        out.append(dict(kernel=r["kernel"], M=r["M"], N=r["N"], K=r["K"], error=float(r["error_pct"]),
                        bk=c.get("bk"), bm=c.get("bm"), bn=c.get("bn"), tm=c.get("tm"), tn=c.get("tn"),
                        blocks=p.occupancy.blocks_per_sm, warps=p.resources.warps_per_block,
                        registers="cap" if (r["registers"] or 0) >= 250 else "<250",
                        spills="spills" if p.resources.local_frame_bytes else "none", regime=p.regime,
                        loop=_loop(p.issue.loop_code_bytes)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--by", default="bk", help=f"one or two of {', '.join(KEYS)}, comma-separated")
    ap.add_argument("--kernel", help="only this kernel")
    ap.add_argument("--min-size", type=int, default=0, help="only points with M, N and K at least this")
    ap.add_argument("--figures", default="measured", choices=("measured", "generation", "datasheet"))
    ap.add_argument("runs", nargs="*")
    a = ap.parse_args()
    by = a.by.split(",")
    if not 1 <= len(by) <= 2 or any(k not in KEYS for k in by):
        ap.error(f"--by takes one or two of {', '.join(KEYS)}, got {a.by!r}")
    runs = [Path(r) for r in a.runs] or [Path("results") / r for r in accuracy_set(Path("results"))]
    with ProcessPoolExecutor() as ex:
        pts = [p for chunk in ex.map(_points, [(rd, a.figures) for rd in runs]) for p in chunk]
    pts = [p for p in pts if min(p["M"], p["N"], p["K"]) >= a.min_size and (not a.kernel or p["kernel"] == a.kernel)]
    groups = defaultdict(list)
    for p in pts:
        key = tuple(p[k] for k in by)
        groups[(p["kernel"],) + key].append(p["error"])
        groups[("all",) + key].append(p["error"])
    print(f"{len(pts)} points of {len(runs)} runs, {a.figures} figures, M, N, K >= {a.min_size}; error > 0: predicted fast")
    print(f"| kernel | {' | '.join(by)} | points | bias | MAPE |")
    print("|---|" + "---|" * len(by) + "---|---|---|")
    for g in sorted(groups, key=lambda g: (g[0] == "all", g[0]) + tuple(str(x).zfill(6) for x in g[1:])):
        e = np.array(groups[g])
        print(f"| {g[0]} | {' | '.join(str(x) for x in g[1:])} | {len(e)} | {e.mean():+.1f} % | {np.abs(e).mean():.1f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
