"""What `perfmodel bench` should show, written before it runs: the model's pick (perfmodel choose) for every
shape of the corpus outside the hold-out, predicted with a calibration, beside a previous bench run's
measured pick and cuBLAS for the same shape. No GPU needed (the local nvcc or the compiler wheels).

    python benchmarks/bench_predictions.py --calibration CAL --previous RUN [--shapes CLASS] > FILE
"""
import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfmodel.choose import choose  # noqa: E402
from perfmodel.model.figures import Figures  # noqa: E402
from perfmodel.model.predict import Problem  # noqa: E402
from perfmodel.shapes import select  # noqa: E402


def main(device: str, cal: str, previous: Path, which: str = "all") -> None:
    fig = Figures.load(device, cal)
    prev = {r["shape"]: r for r in json.loads((previous / "bench.json").read_text())["shapes"]}
    shapes = select(which, holdout=False)
    print(f"# perfmodel choose on {device} with {cal}, the corpus shapes ({which}) outside the hold-out; previous = "
          f"{previous.name} (its pick measured, cuBLAS)")
    print(f"{'shape':26} {'pick':90} {'predicted':>9} | {'previous pick':>13} {'cuBLAS':>7} | predicted / cuBLAS")
    ratios = []
    for s in shapes:
        pick = choose(fig, Problem(s.M, s.N, s.K))[0].pick
        p = prev.get(s.name, {})
        cub = p.get("cublas_gflops") or float("nan")
        ratios.append(pick.gflops / cub)
        print(f"{s.name:26} {pick.config.label()[:90]:90} {pick.gflops:9,.0f} | {p.get('pick_gflops', float('nan')):13,.0f} "
              f"{cub:7,.0f} | {pick.gflops / cub:.2f}", flush=True)
    ok = [r for r in ratios if math.isfinite(r)]
    print(f"geomean predicted pick / previous cuBLAS over {len(ok)} shapes: {math.exp(sum(map(math.log, ok)) / len(ok)):.3f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="h200")
    ap.add_argument("--calibration", required=True)
    ap.add_argument("--previous", type=Path, required=True, help="a bench run folder (its bench.json)")
    ap.add_argument("--shapes", default="all", help="one class of the corpus, or all (default)")
    a = ap.parse_args()
    main(a.device, a.calibration, a.previous, a.shapes)
