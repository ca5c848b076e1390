"""The model against benchmarks/flush_state.py --warm records (CPU): each case predicted after validate's flush (the
device's figures with the calibration) and warm (the same with the DRAM latency set to the calibration's L2 latency and
the loaded-latency table left out: every load an L2 hit), beside the measured times after the memset flush ("dirty")
and with no flush. Prints per kernel and tile depth the GFLOPS error (predicted / measured GFLOPS - 1, the measured
time over the predicted) as MAPE and median, then all cases; with --cases every case too. The binaries' facts come
from the toolchain here (facts.compiled: registers and the k-tile loop's SASS); without one they are estimated, and
the header says so.

    python3 benchmarks/flush_warm_score.py [--calibration FILE] [--cases] RECORD.json ...
      (default: results/archive/flush-warm{,-grids,-depth}-20261130-h200.json and the calibration their
      expectations used, results/20261129-160257-h200-bench-all/calibration.toml)"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RECORDS = [ROOT / "results" / "archive" / f"flush-warm{s}-20261130-h200.json" for s in ("", "-grids", "-depth")]
CALIBRATION = ROOT / "results" / "20261129-160257-h200-bench-all" / "calibration.toml"


def figures(calibration: Path):
    """The H200's figures with the calibration, and the same with every load an L2 hit (warm)."""
    from perfmodel import Figures

    fig = Figures.load("h200", str(calibration))
    dev = fig.device
    warm = dev.model_copy(update={
        "measured": dev.measured.model_copy(update={"dram_latency_cycles": dev.measured.l2_latency_cycles}),
        "latency": dev.latency.model_copy(update={"dram_latency_ratio_by_lines_in_flight": None})})
    return fig, dataclasses.replace(fig, device=warm)


def score(records: list[Path], calibration: Path) -> tuple[list[dict], str]:
    """Per case: kernel, tile depth, shape, measured and predicted times both ways and the two errors (%)."""
    from perfmodel import KernelConfig, facts, predict

    fig, warm = figures(calibration)
    out, origin = [], set()
    for path in records:
        rec = json.loads(path.read_text())
        if not rec.get("warm"):
            raise ValueError(f"{path}: not a flush_state.py --warm record (no warm times)")
        for c in rec["cases"]:
            cfg = KernelConfig.make(c["kernel"], **c["params"])
            bf = facts.compiled(cfg, "9.0")
            origin.add("compiled" if bf is not None else "estimated")
            pf = predict(fig, cfg, c["M"], c["N"], c["K"], build=bf).time_s * 1e6
            pw = predict(warm, cfg, c["M"], c["N"], c["K"], build=bf).time_s * 1e6
            mf, mw = c["dirty"]["median_us"], c["warm"]["median_us"]
            out.append(dict(config=c["config"], kernel=c["kernel"], bk=cfg.bk, shape=f"{c['M']}x{c['N']}x{c['K']}",
                            measured_flushed=mf, predicted_flushed=pf, measured_warm=mw, predicted_warm=pw,
                            error_flushed=(mf / pf - 1) * 100, error_warm=(mw / pw - 1) * 100))
    return out, " and ".join(sorted(origin))


def main(records: list[Path], calibration: Path, cases: bool = False) -> int:
    rows, origin = score(records, calibration)
    print(f"{len(rows)} cases of {len(records)} records; calibration {calibration}; binaries' facts {origin}")
    if cases:
        for r in rows:
            print(f"  {r['config'][:62]:62s} {r['shape']:>16s} flushed {r['measured_flushed']:8.1f} vs {r['predicted_flushed']:8.1f} "
                  f"({r['error_flushed']:+6.1f} %)  warm {r['measured_warm']:8.1f} vs {r['predicted_warm']:8.1f} ({r['error_warm']:+6.1f} %)")
    groups = defaultdict(list)
    for r in rows:
        groups[f"{r['kernel']}, bk {r['bk']}"].append(r)
    print(f"  {'kernel, tile depth':26s} {'cases':>5s}   {'flushed: MAPE':>13s} {'median':>7s}   {'warm: MAPE':>10s} {'median':>7s}")
    for name, rs in sorted(groups.items()) + [("all", rows)]:
        f = np.array([r["error_flushed"] for r in rs])
        w = np.array([r["error_warm"] for r in rs])
        print(f"  {name:26s} {len(rs):5d}   {np.abs(f).mean():12.2f}% {np.median(f):+6.1f}%   {np.abs(w).mean():9.2f}% {np.median(w):+6.1f}%")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="*", type=Path, help="flush_state.py --warm JSON records (default: the three of 2026-11-30)")
    ap.add_argument("--calibration", type=Path, default=CALIBRATION, help="a calibration file of the GPU that measured them")
    ap.add_argument("--cases", action="store_true", help="print every case too")
    a = ap.parse_args()
    for p in [a.calibration, *a.records]:
        if not p.is_file():
            print(f"error: {p}: no such file (want flush_state.py --warm records and a calibration file)", file=sys.stderr)
            sys.exit(2)
    try:
        sys.exit(main(a.records or RECORDS, a.calibration, a.cases))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
