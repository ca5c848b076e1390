"""The k steps of a one-element kernel (naive, coalesced) in recorded runs: per point, the model's cycles a
k step (issue, the latency each k step exposes, the latency term) beside the cycles the measurement implies
(CPU; replays the runs with their own calibration, as `perfmodel accuracy RUN --calibration RUN/calibration.toml`).

The measured time less what the model puts outside the k loop (launch, each wave's first tile, the last
wave's C stores) is the k loop's; spread over the loop's k steps in the model's proportions of its waves, it
gives the measured cycles of the busiest term's k step. Columns: blocks an SM runs at once, full waves, the
k steps a warp issues loads for each wait (predict.one_element_steps; "bin" where the binary's loop gives it),
the global latency taken, issue, exposed and latency-term cycles a k step (model), measured, measured / model.
    PYTHONPATH=. python3 benchmarks/one_element_steps.py [--kernel coalesced] RUN [RUN ...]"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

from perfmodel import KernelConfig
from perfmodel.analysis import load_run, run_facts, run_figures
from perfmodel.errors import UserError
from perfmodel.model import terms as T
from perfmodel.model.predict import Problem, predict_batch


def rows(run_dir: str, kernel: str) -> list[dict]:
    """One row per distinct verified point of `kernel` in the run (median of its repeats)."""
    run = load_run(run_dir)
    rf = run_facts(run, run_dir)
    cal = Path(run_dir) / "calibration.toml"
    fig = run_figures(run_dir, calibration=cal if cal.is_file() else None)
    groups: dict = {}
    for m in run.measurements:
        if m.kernel == kernel and m.verified and m.gflops_median:
            groups.setdefault((m.shape, m.M, m.N, m.K, json.dumps(m.config, sort_keys=True)), []).append(m)
    out = []
    for (shape, M, N, K, _), ms in groups.items():
        m = ms[0]
        cfg = KernelConfig.make(m.kernel, **m.config)
        bt = predict_batch(fig, [cfg], Problem(M, N, K), builds=[rf.for_measurement(m, cfg)],
                           clock_MHz=m.timing.sm_clock_MHz_median if m.timing else None)
        hz = bt.clock_MHz[0] * 1e6
        c, w, t = bt.compute, bt.waves, bt.traffic
        loop = T.tile_loop_cycles(t.ktiles, w, c.cycles, c.cycles_tail)[0]
        outside = bt.time_s[0] * hz - loop
        measured_s = 2.0 * M * N * K / (float(np.median([x.gflops_median for x in ms])) * 1e9)
        full = w.full_waves[0] >= 1
        cyc = c.cycles[:, 0] if full else c.cycles_tail[:, 0]
        exposed = c.exposed[0] if full else c.exposed_tail[0]
        measured = cyc.max() * (measured_s * hz - outside) / loop
        lat = T.TERMS.index("latency")
        out.append(dict(shape=shape or f"{M}x{N}x{K}", resident=int(bt.occupancy.blocks_per_sm[0] if full else w.resident[0]),
                        full_waves=int(w.full_waves[0]), steps=float(bt.littles_law.load_steps[0]),
                        from_binary=bool(bt.littles_law.load_steps_binary[0]), latency=float(t.mem_latency[0]),
                        issue=float(cyc[T.TERMS.index("issue")]), exposed=float(exposed), model=float(cyc[lat]),
                        busiest=float(cyc.max()), measured=float(measured)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel", default="coalesced", choices=("naive", "coalesced"))
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args(argv)
    ratios = {}
    try:
        got = [(rd, rows(rd, a.kernel)) for rd in a.runs]
    except UserError as e:
        print(f"one_element_steps: {e}", file=sys.stderr)
        return 2
    print(f"{'run':34s} {'shape':28s} {'b':>2s} {'waves':>5s} {'steps':>8s} {'lat':>5s} {'issue':>6s} {'expo':>6s} "
          f"{'model':>6s} {'meas':>6s} {'m/m':>5s}")
    for rd, rs in got:
        for r in rs:
            ratio = r["measured"] / r["busiest"]
            key = ("one block an SM, one wave" if r["full_waves"] == 0 and r["resident"] <= 1 else
                   "two or more an SM, one wave" if r["full_waves"] == 0 else "more than a wave")
            ratios.setdefault(key, []).append(ratio)
            steps = f"{r['steps']:.2f}{' bin' if r['from_binary'] else ''}"
            print(f"{Path(rd).name[:34]:34s} {r['shape'][:28]:28s} {r['resident']:2d} {r['full_waves']:5d} {steps:>8s} "
                  f"{r['latency']:5.0f} {r['issue']:6.1f} {r['exposed']:6.1f} {r['model']:6.1f} {r['measured']:6.1f} {ratio:5.2f}")
    print()
    for key, v in ratios.items():
        v = np.array(v)
        print(f"{key:28s} {len(v):3d} points: measured / model median {np.median(v):.2f} (range {v.min():.2f}-{v.max():.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
