"""Where the latency term's floor moves a prediction: the binary's k-tile loop replayed with its global
loads' latency in issue order (terms.tile_cycles' scheduled_latency). Configurations are picked before
anything is measured: from a fresh random sample (validate's stratified samples of tiles and of design
choices, seed --seed), those whose predicted time the floor raises by --min or more at one of the grid's
problems (M = N = each --mn, K = --k) with the reference H100 calibration and this machine's build of each
(nvcc and nvdisasm), the first --n in sample order. The pick file holds the grid and every point's two
predictions (the closed form and with the floor); the GPU run measures the picked configurations on the
same grid beside cuBLAS, verified and timed as validate times them (benchmarks/grid_measure.py).

    python3 benchmarks/replayed_latency.py pick OUT.json [--seed 101] [--sample 240] [--n 24] [--min 1.10]   (CPU)
    python3 benchmarks/replayed_latency.py measure PICK.json [PICK.json ...]    (GPU: results/<date>-<device>-replayed-latency)
    python3 benchmarks/replayed_latency.py compare RUN PICK.json [PICK.json ...] (CPU: per point, measured beside both predictions)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from perfmodel import load_device
from perfmodel.catalogue import KernelConfig
from perfmodel.facts import compiled_many
from perfmodel.model import terms as T
from perfmodel.model.figures import Figures
from perfmodel.model.predict import Problem, predict_batch
from perfmodel.paths import write_json_atomic

from ktile_depth import _ints  # noqa: E402  (benchmarks/ on the path: run from the repository root)

CAL = "results/reference-calibration-h100-sxm.toml"
DEVICE = "h100-sxm"


def closed_and_floor(fig: Figures, cfgs, builds, M: int, N: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Predicted times (s) of cfgs at M x N x K: the closed-form latency term alone, and with the floor
    (today's model); the same batch, the tile loops summed again without scheduled_latency."""
    bt = predict_batch(fig, cfgs, Problem(M, N, K), builds)
    c = bt.compute
    full = T.tile_cycles(**{**c.tile_args_full, "scheduled_latency": None})[0]
    tail = T.tile_cycles(**{**c.tile_args_tail, "scheduled_latency": None})[0]
    now = T.tile_loop_cycles(bt.traffic.ktiles, bt.waves, c.cycles, c.cycles_tail)
    closed = T.tile_loop_cycles(bt.traffic.ktiles, bt.waves, full, tail)
    return bt.time_s - (now - closed) / (bt.clock_MHz * 1e6), bt.time_s


def pick(out: Path, seed: int, sample: int, n: int, least: float, mn: tuple, k: int) -> int:
    from perfmodel.measure.validate import sweep_sample, variant_sample

    dev = load_device(DEVICE)
    fig = Figures.load(DEVICE, CAL)
    cands = sweep_sample(dev, sample, seed) + variant_sample(dev, sample // 2, seed)
    print(f"compiling {len(cands)} configurations (sm_90) ...", file=sys.stderr)
    builds = compiled_many(cands, dev.compute_capability,
                           progress=lambda j, t: print(f"\r  {j}/{t}", end="", file=sys.stderr))
    print(file=sys.stderr)
    keep = [j for j, b in enumerate(builds) if b is not None and b.program is not None]
    cfgs, bl = [cands[j] for j in keep], [builds[j] for j in keep]
    per = {}
    for size in mn:
        closed, floor = closed_and_floor(fig, cfgs, bl, size, size, k)
        per[size] = (closed, floor)
    ratio = np.max([per[s][1] / per[s][0] for s in mn], axis=0)
    chosen = [j for j in range(len(cfgs)) if ratio[j] >= least][:n]
    points = []
    for j in chosen:
        for s in mn:
            flops = 2.0 * s * s * k
            points.append(dict(kernel=cfgs[j].kernel, config=cfgs[j].params(), M=s, N=s, K=k,
                               closed_form_gflops=flops / per[s][0][j] * 1e-9, floor_gflops=flops / per[s][1][j] * 1e-9))
    write_json_atomic(out, dict(seed=seed, sample=len(cands), with_program=len(cfgs), min_ratio=least, mn=list(mn), k=k,
                                calibration=CAL, moved=int(np.sum(ratio >= least)), points=points))
    print(f"{len(cfgs)} of {len(cands)} sampled configurations have a loop program; the floor raises {int(np.sum(ratio >= least))} "
          f"by {least:.2f}x or more at one of M = N = {', '.join(map(str, mn))}, K = {k}; kept the first {len(chosen)} -> {out}")
    print(f"{'configuration':96} {'M=N':>5} {'closed':>8} {'floor':>8}")
    for p in points:
        print(f"{KernelConfig.make(p['kernel'], **p['config']).label():96} {p['M']:5d} {p['closed_form_gflops']:8,.0f} {p['floor_gflops']:8,.0f}")
    return 0


def measure(pick_files: list[Path]) -> int:
    """The configurations of every pick file (they share the grid) measured in one run."""
    from grid_measure import measure_grid

    ds = [json.loads(f.read_text()) for f in pick_files]
    grids = {(tuple(d["mn"]), d["k"]) for d in ds}
    if len(grids) > 1:
        raise SystemExit(f"the pick files have different grids {sorted(grids)}: measure them in separate runs")
    cfgs = list({KernelConfig.make(p["kernel"], **p["config"]).label(): KernelConfig.make(p["kernel"], **p["config"])
                 for d in ds for p in d["points"]}.values())
    run, ms = measure_grid("replayed-latency", "replayed_latency", ds[0]["mn"], [ds[0]["k"]], cfgs)
    print(f"{run}: {sum(m.verified for m in ms)} of {len(ms)} points verified")
    return 0


def compare(run_dir: Path, pick_files: list[Path]) -> int:
    """Measured against the pick's two predictions (made before the run) and against `perfmodel accuracy`'s
    replay of the run (the binary that ran, the SM clock it ran at)."""
    from perfmodel.accuracy import figures_for
    from perfmodel.analysis import load_run, rows, run_facts

    before = {(p["kernel"], json.dumps(p["config"], sort_keys=True), p["M"]): p
              for f in pick_files for p in json.loads(f.read_text())["points"]}
    run = load_run(run_dir)
    fig = figures_for(run_dir, "measured", None, Path("results"), own_fallback=True)
    err_c, err_f, err_r = [], [], []
    print("| configuration | M = N | measured | closed form (picked) | with the floor (picked) | replay of the run |")
    print("|---|---|---|---|---|---|")
    for r in rows(run, fig, run_facts(run, run_dir)):
        p = before.get((r["kernel"], r["config"], r["M"]))
        if p is None or r.get("error_pct") is None:
            continue
        m = r["measured_gflops"]
        err_c.append(100 * (p["closed_form_gflops"] - m) / m)
        err_f.append(100 * (p["floor_gflops"] - m) / m)
        err_r.append(r["error_pct"])
        label = KernelConfig.make(r["kernel"], **json.loads(r["config"])).label()
        print(f"| {label} | {r['M']} | {m:,.0f} | {p['closed_form_gflops']:,.0f} ({err_c[-1]:+.1f} %) | "
              f"{p['floor_gflops']:,.0f} ({err_f[-1]:+.1f} %) | {r['predicted_gflops']:,.0f} ({err_r[-1]:+.1f} %) |")
    for name, e in (("closed form", err_c), ("with the floor", err_f), ("replay of the run", err_r)):
        e = np.array(e)
        print(f"{name}: MAPE {np.mean(np.abs(e)):.1f} % (median {np.median(np.abs(e)):.1f} %, bias {np.mean(e):+.1f} %) over {len(e)} points")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pick")
    p.add_argument("out", type=Path)
    p.add_argument("--seed", type=int, default=101)
    p.add_argument("--sample", type=int, default=240, help="tile configurations sampled (and half as many with design choices)")
    p.add_argument("--n", type=int, default=24, help="configurations kept")
    p.add_argument("--min", type=float, default=1.10, help="the least ratio of the floor's time to the closed form's")
    p.add_argument("--mn", type=_ints, default=(1024, 2048))
    p.add_argument("--k", type=int, default=2048)
    m = sub.add_parser("measure")
    m.add_argument("pick", type=Path, nargs="+")
    c = sub.add_parser("compare")
    c.add_argument("run", type=Path)
    c.add_argument("pick", type=Path, nargs="+")
    a = ap.parse_args()
    if a.cmd == "pick":
        if a.out.exists():
            ap.error(f"{a.out} exists (a pick is never overwritten)")
        sys.exit(pick(a.out, a.seed, a.sample, a.n, a.min, a.mn, a.k))
    for f in a.pick + ([a.run] if a.cmd == "compare" else []):
        if not f.exists():
            ap.error(f"{f} does not exist")
    sys.exit(measure(a.pick) if a.cmd == "measure" else compare(a.run, a.pick))
