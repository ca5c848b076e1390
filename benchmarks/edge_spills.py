"""The recorded points whose blocks run the guarded edge body with a local frame: the local bytes a thread
moves per k-tile in the edge body's loop against the interior k-tile loop's (LDL + STL of each loop's
program, measure.sass.local_bytes_per_tile), and the measured against the predicted cycles per k-tile and
wave. CPU only; the same predictions and build facts as `perfmodel accuracy` (the reference calibration of
each run's device, else its own).

  python3 benchmarks/edge_spills.py [--ratio R] [--figures F] RUN ...

Prints one row per point (largest error first), then the points grouped by whether the edge loop moves more
than R times (default 2) the interior loop's local bytes: points, MAPE and bias."""
import argparse
import json
from pathlib import Path

import numpy as np

from perfmodel.accuracy import figures_for
from perfmodel.analysis import load_run, rows, run_facts
from perfmodel.catalogue import KernelConfig
from perfmodel.measure import sass


def loop_local_bytes(program, cfg: KernelConfig):
    """LDL + STL bytes one thread moves per k-tile in a loop program (None without one)."""
    return sass.local_bytes_per_tile(sass.program_loop_counts(program), cfg) if program else None


def points(run_dir: str, figures: str = "measured") -> list[dict]:
    """The run's verified points with a local frame whose grid has blocks on a ragged edge, each with both loops'
    local bytes per thread and k-tile, the measured and predicted cycles per k-tile and wave, and the error."""
    run = load_run(run_dir)
    rf = run_facts(run, run_dir)
    fig = figures_for(Path(run_dir), figures, None, Path("results"), own_fallback=True)
    out = []
    for r, m in zip(rows(run, fig, rf), run.measurements):
        if r.get("error_pct") is None or not m.spill_bytes:
            continue
        cfg = KernelConfig.make(m.kernel, **m.config)
        bf = rf.for_measurement(m, cfg)  # its edge program only where the point has blocks in the edge body
        if bf.edge_program is None or bf.program is None:
            continue
        p = r["_prediction"]
        clock = (r.get("clock_MHz") or p.sm_clock_MHz) * 1e6
        per = p.waves.waves * -(-m.K // (cfg.bk * (p.k_slices or 1)))  # k-tiles a block, times the waves
        out.append(dict(run=run_dir.rstrip("/").split("/")[-1], kernel=m.kernel, config=json.dumps(m.config, sort_keys=True),
                        shape=m.shape, frame=m.spill_bytes, interior=loop_local_bytes(bf.program, cfg),
                        edge=loop_local_bytes(bf.edge_program, cfg), measured_cycles=2.0 * m.M * m.N * m.K / (m.gflops_median * 1e9) * clock / per,
                        predicted_cycles=p.time_s * clock / per, error=r["error_pct"]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--ratio", type=float, default=2.0)
    ap.add_argument("--figures", default="measured", choices=("measured", "generation", "datasheet"))
    a = ap.parse_args()
    pts = [p for rd in a.runs for p in points(rd, a.figures)]
    pts.sort(key=lambda p: -abs(p["error"]))
    print("| run | kernel | configuration | shape | frame B | local B a k-tile (interior / edge) | cycles a k-tile and wave (measured / predicted) | error |")
    print("|---|---|---|---|---|---|---|---|")
    for p in pts:
        print(f"| {p['run']} | {p['kernel']} | {p['config']} | {p['shape']} | {p['frame']} | {p['interior']:,.0f} / {p['edge']:,.0f} "
              f"| {p['measured_cycles']:,.0f} / {p['predicted_cycles']:,.0f} | {p['error']:+.1f} % |")
    print(f"\n| edge loop's local bytes | points | MAPE | bias |\n|---|---|---|---|")
    for name, sel in ((f"more than {a.ratio:g} x the interior's", lambda p: p["edge"] > a.ratio * max(p["interior"], 1.0)),
                      (f"at most {a.ratio:g} x", lambda p: p["edge"] <= a.ratio * max(p["interior"], 1.0))):
        e = np.array([p["error"] for p in pts if sel(p)])
        if len(e):
            print(f"| {name} | {len(e)} | {np.mean(np.abs(e)):.1f} % | {np.mean(e):+.1f} % |")


if __name__ == "__main__":
    main()
