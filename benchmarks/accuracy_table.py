"""Accuracy of the current model on every recorded H100 run made with today's kernels (CPU only).

One calibration for all runs (default: the newest complete one), datasheet and measured figures;
for the `sweep --measure` run also where its measured best ranked and the gap of the model's own top-1.
    python3 benchmarks/accuracy_table.py [CALIBRATION.toml]"""
import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from perfmodel.analysis import load_run, rows, run_device_for, summary

ROOT = Path(__file__).resolve().parent.parent
CAL = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "results" / "calibration-20261122-133331-h100-sxm.toml")
VALIDATE = ["20261122-102443-h100-sxm", "20261122-102712-h100-sxm-seed1", "20261122-110019-h100-sxm-seed2",
            "20261122-112024-h100-sxm-seed3", "20261122-114007-h100-sxm-seed4", "20261122-120847-h100-sxm-seed5",
            "20261122-125435-h100-sxm-seed6", "20261122-130135-h100-sxm-seed7",
            "20261122-131742-h100-sxm-seed8",
            "20261122-133937-h100-sxm-seed9", "20261122-153912-h100-sxm-seed10"]
TUNES = ["20261122-110302-h100-sxm-tune", "20261122-130917-h100-sxm-tune-seed1",
         "20261122-132007-h100-sxm-tune-seed2",
         "20261122-134157-h100-sxm-tune-seed3", "20261122-153808-h100-sxm-tune-seed4"]


def main():
    print(f"measured figures: {Path(CAL).name}\n")
    print("| run | figures | points | MAPE | median APE | Spearman all | Spearman sweep | model top-1 vs measured best |")
    print("|---|---|---|---|---|---|---|---|")
    pooled = {"measured": [], "datasheet": []}
    for name in VALIDATE:
        rd = ROOT / "results" / name
        for fig in ("measured", "datasheet"):
            dev, f = run_device_for(rd, fig, calibration=CAL if fig == "measured" else None)
            t = rows(load_run(rd), dev, f)
            pooled[fig] += [r["error_pct"] for r in t if r.get("error_pct") is not None]
            s = summary(t)
            print(f"| {name} | {fig} | {s['points']} | {s['mape_pct']:.1f} % | {s['median_ape_pct']:.1f} % | "
                  f"{s['spearman_all']:.3f} | {s['spearman_sweep']:.3f} | {s['sweep_top1_gap_pct']:.1f} % slower |")
    for tune in TUNES:
        tune_rows(tune, pooled)
    for fig, e in pooled.items():
        e = np.abs(e)
        print(f"\nall {len(e)} points, {fig} figures: MAPE {e.mean():.1f} %, median APE {np.median(e):.1f} %")


def tune_rows(tune, pooled):
    rd = ROOT / "results" / tune
    run = load_run(rd)
    for fig in ("measured", "datasheet"):
        dev, f = run_device_for(rd, fig, calibration=CAL if fig == "measured" else None)
        t = [r for r in rows(run, dev, f) if r.get("error_pct") is not None]
        pooled[fig] += [r["error_pct"] for r in t]
        e = np.abs([r["error_pct"] for r in t])
        rho = spearmanr([r["predicted_gflops"] for r in t], [r["measured_gflops"] for r in t]).statistic
        best = max(t, key=lambda r: r["measured_gflops"])
        top = max(t, key=lambda r: r["predicted_gflops"])
        print(f"| {tune} (model's top 10 + 100 random) | {fig} | {len(t)} | {e.mean():.1f} % | {np.median(e):.1f} % | "
              f"{rho:.3f} | {rho:.3f} | {100 * (1 - top['measured_gflops'] / best['measured_gflops']):.1f} % slower |")


if __name__ == "__main__":
    main()
