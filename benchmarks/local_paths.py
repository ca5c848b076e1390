"""Local frames beyond L1 on grids that leave SMs idle (the local term's SM paths, docs/model.md, "Local frames
beyond L1: the SM's own paths"): 256 x 256 tiles whose 32 or 64 registers leave the accumulators in local
memory, at M = N = 512 to 4096 (4 to 256 blocks: one block on each of 4 to 121 SMs, then a grid of more than a
wave as the control), beside cuBLAS, every point verified and timed as validate times it.

    python3 benchmarks/local_paths.py --predict [--device h200]
        (CPU) the predictions with the SM's paths and with the even L2 share alone, written down first: the H100's
        with its reference calibration, the H200's from the Hopper generation figures (no H200 calibration here)
    python3 benchmarks/local_paths.py               (GPU) measures them into results/<date>-<device>-local-paths
    python3 benchmarks/local_paths.py --compare RUN (CPU) the recorded run replayed both ways, error per point
        (the H100's reference calibration for an H100 run, the generation figures for an H200 run)

Run from the repository root (PYTHONPATH=. for --predict and --compare)."""
from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from pathlib import Path

from perfmodel.catalogue import KernelConfig

CONFIGS = [dict(kernel="warp_tiled", bm=256, bn=256, bk=8, tm=4, tn=16, wm=32, wn=128, wn_iter=2),
           dict(kernel="warp_tiled", bm=256, bn=256, bk=16, tm=8, tn=8, wm=32, wn=128, wn_iter=2),
           dict(kernel="warp_tiled", bm=256, bn=256, bk=16, tm=8, tn=4, wm=32, wn=64, wn_iter=2),
           dict(kernel="tiled_2d_float4", bm=256, bn=256, bk=16, tm=8, tn=8)]
MN = (512, 1024, 2048, 2816, 4096)
K = 2048
CALIBRATION = Path("results/reference-calibration-h100-sxm.toml")


def configs() -> list[KernelConfig]:
    return [KernelConfig.make(**c) for c in CONFIGS]


@contextmanager
def even_share():
    """The local term without the SM's own paths (the even L2 share alone), as before them."""
    from perfmodel.model import terms as T

    orig = T.tile_cycles
    T.tile_cycles = lambda *a, **k: orig(*a, **{**k, "store_bpc": None})
    try:
        yield
    finally:
        T.tile_cycles = orig


def predict_table(device: str) -> int:
    from perfmodel import facts
    from perfmodel.model.figures import Figures
    from perfmodel.model.predict import predict

    fig = Figures.load(device, calibration=str(CALIBRATION)) if device == "h100-sxm" else Figures.load(device)
    print(f"{device}: {fig.kind} figures")
    print(f"{'configuration':72} {'M=N':>5} {'blocks':>6} {'paths':>8} {'even':>8}  (GFLOPS predicted, K = {K})")
    for cfg in configs():
        build = facts.for_config(cfg, "9.0")
        for mn in MN:
            p = predict(fig, cfg, mn, mn, K, build=build)
            with even_share():
                q = predict(fig, cfg, mn, mn, K, build=build)
            print(f"{cfg.label():72} {mn:5d} {p.waves.blocks:6d} {p.gflops:8.0f} {q.gflops:8.0f}  {p.bound}, "
                  f"{build.registers} registers")
    return 0


def compare(run_dir: Path) -> int:
    from perfmodel.accuracy import figures_for
    from perfmodel.analysis import load_run, rows, run_facts

    run = load_run(run_dir)
    fig = figures_for(run_dir, "measured" if "h100" in run_dir.name else "generation", None, Path("results"))
    now = [r for r in rows(run, fig, run_facts(run, run_dir)) if r.get("error_pct") is not None]
    with even_share():
        before = {(r["kernel"], r["config"], r["M"]): r for r in rows(run, fig, run_facts(run, run_dir))
                  if r.get("error_pct") is not None}
    print(f"{'configuration':90} {'M=N':>5} {'measured':>9} {'paths':>8} {'even':>8}")
    for r in now:
        b = before[(r["kernel"], r["config"], r["M"])]
        print(f"{r['kernel'] + ' ' + r['config']:90} {r['M']:5d} {r['measured_gflops']:9.0f} {r['error_pct']:+7.1f}% "
              f"{b['error_pct']:+7.1f}%  {r['bound']}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--predict", action="store_true", help="print the predictions both ways (CPU)")
    ap.add_argument("--compare", metavar="RUN", help="replay a recorded run both ways (CPU)")
    ap.add_argument("--device", default="h100-sxm", choices=["h100-sxm", "h200"], help="--predict: the GPU (default h100-sxm)")
    a = ap.parse_args()
    if a.predict:
        return predict_table(a.device)
    if a.compare:
        return compare(Path(a.compare))
    from grid_measure import measure_grid

    out, ms = measure_grid("local-paths", "local_paths", MN, (K,), configs())
    print(f"results in {out}")
    for m in ms:
        print(f"{m.kernel:16} {str(m.config):90} {m.M:5d} {m.gflops_median or float('nan'):9.0f} GFLOPS "
              f"{'verified' if m.verified else 'FAILED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
