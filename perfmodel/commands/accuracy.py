"""`perfmodel accuracy [RUN ...]`: the accuracy table over recorded runs."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .. import published
from ..accuracy import accuracy_set, as_json, score
from ..errors import UserError


def _f(v, fmt="{:.1f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def run(a) -> int:
    if a.published is not None:
        return _published(a)
    results = Path(a.results)
    runs = [Path(r) for r in a.runs] if a.runs else [results / name for name in accuracy_set(results)]
    for r in runs:
        if not (r / "raw.json").is_file():
            raise UserError(f"{r} holds no raw.json (not a recorded run)")
    t0 = time.perf_counter()

    def progress(j, n, s):
        if not a.json:
            print(f"\r  scored {j}/{n} runs ({time.perf_counter() - t0:.0f} s)", end="" if j < n else "\n",
                  file=sys.stderr, flush=True)

    scores, overall = score(runs, a.figures, a.calibration, results, progress)
    if not a.json and a.figures == "measured":
        print(f"measured figures: {a.calibration or 'the reference calibration of each run' + chr(39) + 's device'}\n")
    if a.json:
        print(json.dumps(as_json(scores, overall), indent=1))
        return 0
    print("| run | figures | points | MAPE | median APE | bias | Spearman all | Spearman sweep | model top-1 vs measured best |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in scores:
        print(f"| {s.run} | {s.figures} | {s.points} | {s.mape_pct:.1f} % | {s.median_ape_pct:.1f} % | {s.bias_pct:+.1f} % | "
              f"{_f(s.spearman_all, '{:.3f}')} | {_f(s.spearman_sweep, '{:.3f}')} | "
              + ("n/a |" if s.top1_gap_pct is None else f"{s.top1_gap_pct:.1f} % slower |"))
    o = overall
    if o.get("by_class"):
        print("\nby shape class (the corpus hold-out left out):\n")
        print("| class | points | MAPE | bias |")
        print("|---|---|---|---|")
        for c, v in o["by_class"].items():
            print(f"| {c} | {v['points']} | {v['mape_pct']:.1f} % | {v['bias_pct']:+.1f} % |")
        print()
    print(f"overall: MAPE {o['mape_pct']:.1f} % (median {o['median_ape_pct']:.1f} %, bias {o['bias_pct']:+.1f} %) over "
          f"{o['points']} points in {o['runs']} run{'s' if o['runs'] != 1 else ''}, {o['figures']} figures"
          + ("" if o["worst_top1_gap_pct"] is None else f"; worst top-1 gap {o['worst_top1_gap_pct']:.1f} %"))
    return 0


def _published(a) -> int:
    """`perfmodel accuracy --published [FILE]`: every published point predicted and scored."""
    t0 = time.perf_counter()

    def progress(j, n):
        if not a.json:
            print(f"\r  predicted {j}/{n} points ({time.perf_counter() - t0:.0f} s)", end="" if j < n else "\n",
                  file=sys.stderr, flush=True)

    rows, summ = published.score(a.published or None, figures="auto" if a.figures == "generation" else a.figures,
                                 progress=progress)
    if a.json:
        print(json.dumps(published.as_json(rows, summ), indent=1))
        return 0
    print("| source | device | row | kernel, tile | M x N x K | measured GFLOPS | predicted | error | bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r.source} | {r.device} | {r.row} | {r.config} | {r.M}x{r.N}x{r.K} | {r.measured_gflops:,.0f} | "
              f"{r.predicted_gflops:,.0f} | {r.error_pct:+.1f} % | {r.bound} |")
    for key, title in (("by_generation", "generation"), ("by_source", "source"), ("by_kernel", "kernel")):
        print(f"\n| {title} | points | MAPE | median APE | bias |")
        print("|---|---|---|---|---|")
        for k, v in summ[key].items():
            print(f"| {k} | {v['points']} | {v['mape_pct']:.1f} % | {v['median_ape_pct']:.1f} % | {v['bias_pct']:+.1f} % |")
    o = summ["overall"]
    print(f"\noverall: MAPE {o['mape_pct']:.1f} % (median {o['median_ape_pct']:.1f} %, bias {o['bias_pct']:+.1f} %) over "
          f"{o['points']} published points, {rows[0].figures if rows else a.figures} figures")
    return 0
