"""`perfmodel accuracy [RUN ...]`: the accuracy table over recorded runs."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from .. import published
import tomli_w

from ..accuracy import (accuracy_set, as_json, check_points_path, group_errors, missing_archive_warning, parse_group_keys,
                        score, spread_of, write_points)
from ..analysis import load_run, run_device
from ..measure.records import run_record
from ..model.figures import Figures
from ..progress import counter
from ..model.uncertainty import transfer_table
from ..errors import UserError


def _f(v, fmt="{:.1f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def run(a) -> int:
    if a.published is not None:
        return _published(a)
    results = Path(a.results)
    runs = [Path(r) for r in a.runs] if a.runs else [results / name for name in accuracy_set(results)]
    for r in runs:
        if run_record(r) is None:
            raise UserError(f"{r} holds no raw.json (not a recorded run)")
    if a.intervals:
        return _intervals(a, runs, results)
    keys = parse_group_keys(a.by) if a.by else None  # bad input fails before any scoring
    if a.points:
        check_points_path(Path(a.points))
    if a.model_spread:  # before any scoring
        if Path(a.model_spread).exists():
            raise UserError(f"{a.model_spread} exists; --model-spread writes a new file only (results are never overwritten)")
        if a.figures not in ("measured", "datasheet"):
            raise UserError("--model-spread takes --figures measured (the spread left when every figure is measured) or "
                            "datasheet (the spread of predictions from datasheet figures); not generation")
    count = counter("scored {j}/{n} runs", enabled=not a.json)

    def progress(j, n, s):
        count(j, n)

    scores, overall = score(runs, a.figures, a.calibration, results, progress,
                            own_fallback=bool(a.model_spread) and a.figures == "measured")
    for s, rd in zip(scores, runs):
        warning = missing_archive_warning(s, rd)
        if warning:
            print(warning, file=sys.stderr)
    if a.model_spread:
        return _write_spread(a, scores, overall)
    if not a.json and a.figures == "measured":
        print(f"measured figures: {a.calibration or 'the reference calibration of each run' + chr(39) + 's device'}\n")
    points = [p for s in scores for p in s.point_rows]
    if a.points:
        write_points(Path(a.points), points)
        if not a.json:
            print(f"wrote {a.points}: {len(points)} points", file=sys.stderr)
    by = group_errors(points, keys) if keys else None
    if a.json:
        print(json.dumps(dict(as_json(scores, overall), **({"by": by} if by is not None else {})), indent=1))
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
    if o.get("by_choice"):
        c = o["changed_choices"]
        print(f"by design choice (every point of a kernel with choices, once per choice; the {c['points']} points that change "
              f"a choice from their kernel's defaults: MAPE {c['mape_pct']:.1f} %, bias {c['bias_pct']:+.1f} %):\n")
        print("| choice | value | points | MAPE | bias |")
        print("|---|---|---|---|---|")
        for d in o["by_choice"]:
            print(f"| {d['choice']} | {d['value']} | {d['points']} | {d['mape_pct']:.1f} % | {d['bias_pct']:+.1f} % |")
        print()
    print(f"overall: MAPE {o['mape_pct']:.1f} % (median {o['median_ape_pct']:.1f} %, bias {o['bias_pct']:+.1f} %) over "
          f"{o['points']} points in {o['runs']} run{'s' if o['runs'] != 1 else ''}, {o['figures']} figures"
          + ("" if o["worst_top1_gap_pct"] is None else f"; worst top-1 gap {o['worst_top1_gap_pct']:.1f} %"))
    print(interval_line(o["intervals"]))
    if by is not None:
        _print_groups(keys, by, len(points))
    return 0


def _print_groups(keys: tuple[str, ...], by: list[dict], n: int) -> None:
    """The `--by` table: per group its points, MAPE, bias and share of the summed absolute error."""
    print(f"\nby {', '.join(keys)} (share: of the summed absolute error of all {n} points):\n")
    print("| " + " | ".join(keys) + " | points | MAPE | bias | share |")
    print("|" + "---|" * (len(keys) + 4))
    for g in by:
        print("| " + " | ".join(g["group"].values()) + f" | {g['points']} | {g['mape_pct']:.1f} % | "
              f"{g['bias_pct']:+.1f} % | {g['share_pct']:.1f} % |")


def interval_line(c: dict) -> str:
    """One line on how the intervals of scored points did (model.uncertainty.coverage)."""
    if not c.get("points"):
        return "intervals: no points"
    return (f"intervals: {c['inside_90_pct']:.1f} % of {c['points']} points inside their 90 % interval, "
            f"{c['inside_50_pct']:.1f} % inside their 50 %; median 90 % half-width {c['median_half_width_90_pct']:.1f} % "
            f"= {c['width_over_error']:.2f} x the median absolute error ({c['median_ape_pct']:.1f} %)")


def _write_spread(a, scores, overall) -> int:
    """`--model-spread FILE`: the model's residual quantiles per bound over the scored points (a new file only)."""
    out = Path(a.model_spread)
    src = (f"perfmodel accuracy --model-spread: ln(predicted / measured GFLOPS) over {overall['points']} verified points "
           f"of {overall['runs']} recorded runs (the corpus hold-out left out) with "
           + ("datasheet figures (no figure measured on any GPU)" if a.figures == "datasheet" else
              f"{a.calibration or 'the reference calibration of the device, else the run' + chr(39) + 's own'}"))
    table = spread_of(scores, src)
    out.write_text(tomli_w.dumps({**table, "runs": [s.run for s in scores]}))
    print(f"wrote {out}: {overall['points']} points, bounds " + ", ".join(f"{b} {n}" for b, n in table["points"].items()))
    return 0


def _published(a) -> int:
    """`perfmodel accuracy --published [FILE]`: every published point predicted and scored (with --by KEYS
    also grouped, with --points FILE every point written as CSV); with --model-spread FILE, their residual
    quantiles written to FILE (a new file) instead."""
    if a.model_spread and Path(a.model_spread).exists():
        raise UserError(f"{a.model_spread} exists; --model-spread writes a new file only (results are never overwritten)")
    keys = parse_group_keys(a.by, published.GROUP_KEYS) if a.by else None  # bad input fails before any scoring
    if a.points:
        check_points_path(Path(a.points))
    progress = counter("predicted {j}/{n} points", enabled=not a.json)

    rows, summ = published.score(a.published or None, figures="auto" if a.figures == "generation" else a.figures,
                                 progress=progress)
    records = [asdict(r) for r in rows]
    if a.points:
        write_points(Path(a.points), records, published.POINT_FIELDS)
        if not a.json:
            print(f"wrote {a.points}: {len(records)} published points", file=sys.stderr)
    by = group_errors(records, keys) if keys else None
    if a.model_spread:
        path = a.published or "published/sgemm.toml"
        table = transfer_table([r.predicted_gflops / r.measured_gflops for r in rows],
                               f"perfmodel accuracy --published --model-spread: ln(predicted / measured GFLOPS) over the "
                               f"{len(rows)} points of {len({r.source for r in rows})} sources in {path}, "
                               f"{rows[0].figures if rows else a.figures} figures, every bound pooled")
        Path(a.model_spread).write_text(tomli_w.dumps(table))
        print(f"wrote {a.model_spread}: {len(rows)} published points")
        return 0
    if a.json:
        print(json.dumps(dict(published.as_json(rows, summ), **({"by": by} if by is not None else {})), indent=1))
        return 0
    print("| source | device | row | kernel, tile | M x N x K | registers (blocks/SM) | measured GFLOPS | predicted | error | bound |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r.source} | {r.device} | {r.row} | {r.config} | {r.M}x{r.N}x{r.K} | {r.registers} ({r.blocks_per_sm}) | "
              f"{r.measured_gflops:,.0f} | {r.predicted_gflops:,.0f} | {r.error_pct:+.1f} % | {r.bound} |")
    for key, title in (("by_generation", "generation"), ("by_source", "source"), ("by_kernel", "kernel")):
        print(f"\n| {title} | points | MAPE | median APE | bias |")
        print("|---|---|---|---|---|")
        for k, v in summ[key].items():
            print(f"| {k} | {v['points']} | {v['mape_pct']:.1f} % | {v['median_ape_pct']:.1f} % | {v['bias_pct']:+.1f} % |")
    o = summ["overall"]
    print(f"\noverall: MAPE {o['mape_pct']:.1f} % (median {o['median_ape_pct']:.1f} %, bias {o['bias_pct']:+.1f} %) over "
          f"{o['points']} published points, {rows[0].figures if rows else a.figures} figures")
    print(interval_line(summ["intervals"]))
    if by is not None:
        _print_groups(keys, by, len(records))
    return 0


def _intervals(a, runs, results) -> int:
    """`--intervals`: how the intervals did per figure source: the runs replayed with measured figures
    (each device's reference calibration, else the run's own), the SM generation's and the datasheet's,
    and the published points with the generation's (where measured) and the datasheet's."""
    t0 = time.perf_counter()
    table = []
    for figures in ("measured", "generation", "datasheet"):
        use = runs
        if figures == "generation":  # only runs whose generation has measured figures
            use = [r for r in runs if Figures.of_generation(run_device(load_run(r))).generation]
        if not use:
            continue
        _, overall = score(use, figures, a.calibration if figures == "measured" else None, results, own_fallback=True)
        table.append((f"recorded, {figures}", len(use), overall["intervals"], overall["bias_pct"]))
        if not a.json:
            print(f"  scored {len(use)} runs with {figures} figures ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    seen = set()
    for figures in ("auto", "datasheet"):
        rows, summ = published.score(None, figures=figures)
        kinds = "/".join(sorted({r.figures for r in rows}))
        if kinds not in seen:  # no published GPU's generation measured: the two are the same points
            seen.add(kinds)
            table.append((f"published, {kinds}", len({r.source for r in rows}), summ["intervals"], summ["overall"]["bias_pct"]))
    if a.json:
        print(json.dumps([dict(group=g, sources=n, bias_pct=b, **c) for g, n, c, b in table], indent=1))
        return 0
    print("| points scored with | runs / sources | points | inside 50 % | inside 90 % | median 90 % half-width | "
          "median abs. error | half-width / error | bias |")
    print("|---|---|---|---|---|---|---|---|---|")
    for g, n, c, b in table:
        print(f"| {g} | {n} | {c['points']} | {c['inside_50_pct']:.1f} % | {c['inside_90_pct']:.1f} % | "
              f"{c['median_half_width_90_pct']:.1f} % | {c['median_ape_pct']:.1f} % | {c['width_over_error']:.2f} | {b:+.1f} % |")
    print("\ngoal per figure source: 85-95 % inside the 90 % interval, 40-60 % inside the 50 %; "
          "calibrated half-width at most 2 x the median absolute error")
    return 0
