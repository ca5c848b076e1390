"""A shape run measured with one GPU against the same class measured with two at once (`bash
benchmarks/gpu_run.sh gpus CLASS 0` and `gpus CLASS 0,1`): the phases of each run from its log (planning,
building, measuring, and the whole command's wall time the script wrote), and per point the two-GPU run's
GFLOPS against the one-GPU run's (the points both plans hold), overall and per GPU that measured it.

    python benchmarks/two_gpus_compare.py --one RUN=LOG --two RUN=LOG [--two RUN=LOG ...] [--out PREFIX]

Writes PREFIX.txt and PREFIX.json (default results/archive/two-gpus-DATE-DEVICE)."""
from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from fleet_compare import _pair, stats
from perfmodel.analysis import load_run
from perfmodel.measure.records import measurement_key


def phases(log: Path) -> dict:
    """Seconds of each phase, from the run's log (progress lines end in carriage returns)."""
    text = log.read_text().replace("\r", "\n")

    def last(pattern):
        got = re.findall(pattern, text, re.M)
        return float(got[-1]) if got else None

    return dict(planning_s=last(r"planned \d+/\d+ shapes \(([\d.]+) s\)"),
                building_s=last(r"compiled \d+/\d+ kernels on \d+ worker\(s\) \(([\d.]+) s\)"),
                measuring_s=last(r"^measured \d+ points in ([\d.]+) s"),
                wall_s=last(r"wall ([\d.]+) s"),
                gpus=re.findall(r"^  worker \d+: (gpu\d+ .*? GPU-[0-9a-f-]+)", text, re.M))


def points(run: Path) -> dict:
    """{key: (GFLOPS, the GPU that measured it)} of the verified points."""
    return {measurement_key(m): (m.gflops_median, m.gpu.uuid if m.gpu else "?")
            for m in load_run(run).measurements if m.verified}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one", type=_pair, required=True, help="the one-GPU run and its log")
    ap.add_argument("--two", type=_pair, nargs="+", required=True, action="extend", help="a two-GPU run and its log")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    one_run, one_log = a.one
    dev = load_run(one_run).environment.device_file
    out = Path(a.out) if a.out else Path("results/archive") / f"two-gpus-{datetime.now(timezone.utc):%Y%m%d}-{dev}"
    base = points(one_run)
    p1 = phases(one_log)
    res = dict(one=dict(run=str(one_run), log=one_log.name, **p1, points=len(base)), two=[])
    lines = [f"one GPU: {one_run} ({len(base)} verified points)",
             f"  planning {p1['planning_s']} s, building {p1['building_s']} s, measuring {p1['measuring_s']} s, "
             f"wall {p1['wall_s']} s; {'; '.join(p1['gpus'])}"]
    for run, log in a.two:
        got, ph = points(run), phases(log)
        common = sorted(set(base) & set(got), key=repr)
        r = np.array([got[k][0] / base[k][0] for k in common])
        by_gpu = defaultdict(list)
        for k in common:
            by_gpu[got[k][1]].append(got[k][0] / base[k][0])
        ratio = {k: (round(ph[k] / p1[k], 3) if ph[k] and p1[k] else None) for k in ("planning_s", "building_s", "measuring_s", "wall_s")}
        entry = dict(run=str(run), log=log.name, **ph, points=len(got), common=len(common), per_point=stats(r),
                     per_gpu={g: stats(np.array(v)) for g, v in by_gpu.items()},
                     against_one_gpu=ratio)
        res["two"].append(entry)
        s = entry["per_point"]
        lines += [f"two GPUs: {run} ({len(got)} verified points, {len(common)} in both plans)",
                  f"  planning {ph['planning_s']} s, building {ph['building_s']} s, measuring {ph['measuring_s']} s, "
                  f"wall {ph['wall_s']} s; {'; '.join(ph['gpus'])}",
                  "  against the one-GPU run: " + ", ".join(f"{k[:-2]} {v:.2f}x" for k, v in ratio.items() if v is not None),
                  f"  per point GFLOPS two/one: median ratio {s['median_ratio']:.4f}, median |d| {s['median_abs_pct']:.2f} %, "
                  f"90th percentile {s['p90_abs_pct']:.2f} %, worst {s['max_abs_pct']:.2f} %"]
        for g, v in entry["per_gpu"].items():
            lines.append(f"    measured by {g}: {v['points']} points, median ratio {v['median_ratio']:.4f}, "
                         f"median |d| {v['median_abs_pct']:.2f} %, worst {v['max_abs_pct']:.2f} %")
    text = "\n".join(lines) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    for path in (out.with_suffix(".txt"), out.with_suffix(".json")):
        if path.exists():
            raise SystemExit(f"error: {path} exists; results are never overwritten (give --out)")
    out.with_suffix(".txt").write_text(text)
    out.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
