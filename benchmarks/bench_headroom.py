"""Where a recorded `perfmodel bench` run's picks lose time that a kernel change could win back (CPU, no compiler
needed: the reduction's time does not depend on the picks' registers): for every shape, the pick's measured time and the
model's split of it into the second kernel that sums split_k's slices (its fixed part: the second launch and
the reduction's floor; the rest: reading the partials), and the ratios against cuBLAS the run would have
reached without it. Then the geometric means over the corpus and the shape classes three ways: as measured,
with the reduction's fixed part gone (what one launch that sums the slices itself could save at best), with
the whole reduction gone (the bound), and, with `--one-row GFLOPS`, with the one-row product's pick replaced
by a kernel measured at that speed beside the same run's cuBLAS.

    python3 benchmarks/bench_headroom.py RUN [--one-row GFLOPS]

The model's reduction figures are predictions (`Prediction.reduction_us`, `reduction_fixed_us`), not
measurements: the table says how much of the geomean hangs on them, not what a new kernel would measure."""
import argparse
import json
import math
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfmodel import KernelConfig, analysis  # noqa: E402
from perfmodel.facts import for_config  # noqa: E402
from perfmodel.model.predict import predict  # noqa: E402


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def rows(run: Path) -> list[dict]:
    """Per shape: the measured pick and cuBLAS, the model's reduction time for the pick (0 unless split_k)."""
    bench = json.loads((run / "bench.json").read_text())
    fig = analysis.run_figures(run)  # the run's device and its own calibration
    cc = fig.effective.compute_capability
    launch = analysis.load_run(run).environment.reduction_launch or "stream"  # how the run launched split_k's second kernel
    out = []
    for s in bench["shapes"]:
        kernel, params = s["pick"].split(" ", 1)
        cfg = KernelConfig.make(kernel, **json.loads(params))
        p = predict(fig, cfg, s["M"], s["N"], s["K"], build=replace(for_config(cfg, cc, estimate=True), reduction_launch=launch))  # the reduction needs no registers
        t = s["flop"] / (s["pick_gflops"] * 1e9) * 1e6  # measured microseconds
        out.append(dict(shape=s["shape"], cls=s["shape_class"], kernel=kernel, t=t, M=s["M"], flop=s["flop"],
                        cublas=s["cublas_gflops"], ratio=s["vs_cublas"], red=p.reduction_us if p.k_slices > 1 else 0.0,
                        fixed=p.reduction_fixed_us if p.k_slices > 1 else 0.0))
    return out


def headroom(run: Path, one_row: float | None = None) -> tuple[list[dict], dict[str, dict[str, float]]]:
    """The per-shape rows, and per way of counting (measured, no fixed part, no reduction, one-row kernel where
    one_row is given) each shape's ratio against cuBLAS."""
    rs = rows(run)
    ways: dict[str, dict[str, float]] = {"measured": {}, "no fixed part": {}, "no reduction": {}}
    if one_row is not None:
        ways["one-row kernel"] = {}
    for r in rs:
        r["no_fixed"] = r["ratio"] * r["t"] / (r["t"] - r["fixed"]) if r["fixed"] else r["ratio"]
        r["no_reduction"] = r["ratio"] * r["t"] / (r["t"] - r["red"]) if r["red"] else r["ratio"]
        ways["measured"][r["shape"]] = r["ratio"]
        ways["no fixed part"][r["shape"]] = r["no_fixed"]
        ways["no reduction"][r["shape"]] = r["no_reduction"]
        if one_row is not None:
            ways["one-row kernel"][r["shape"]] = one_row / r["cublas"] if r["M"] == 1 else r["ratio"]
    return rs, ways


def class_geomeans(rs: list[dict], ratio: dict[str, float]) -> dict[str, float]:
    """The geometric mean over the corpus ("all") and over each shape class."""
    classes = defaultdict(list)
    for r in rs:
        classes[r["cls"]].append(ratio[r["shape"]])
    return {"all": geomean(ratio.values()), **{c: geomean(v) for c, v in classes.items()}}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="a results folder of perfmodel bench (holding bench.json)")
    ap.add_argument("--one-row", type=float, default=None, metavar="GFLOPS",
                    help="a one-row kernel's measured GFLOPS to put in place of the M = 1 pick")
    a = ap.parse_args(argv)
    if not (a.run / "bench.json").is_file():
        print(f"error: {a.run} holds no bench.json (not a perfmodel bench run)", file=sys.stderr)
        return 2
    if a.one_row is not None and not a.one_row > 0:
        print(f"error: --one-row {a.one_row} is not a positive GFLOPS figure", file=sys.stderr)
        return 2
    rs, ways = headroom(a.run, a.one_row)
    print(f"{'shape':26} {'pick':14} {'measured us':>11} {'reduction us':>12} {'of it fixed':>11} "
          f"{'x cuBLAS':>8} {'no fixed':>8} {'none':>6}")
    for r in rs:
        print(f"{r['shape']:26} {r['kernel']:14} {r['t']:11,.1f} {r['red']:12,.2f} {r['fixed']:11,.2f} "
              f"{r['ratio']:8.2f} {r['no_fixed']:8.2f} {r['no_reduction']:6.2f}")
    table = {way: class_geomeans(rs, ratio) for way, ratio in ways.items()}
    names = list(table["measured"])
    print()
    print(f"{'geomean x cuBLAS':16} " + " ".join(f"{c:>11}" for c in names))
    for way, g in table.items():
        print(f"{way:16} " + " ".join(f"{g[c]:11.3f}" for c in names))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
