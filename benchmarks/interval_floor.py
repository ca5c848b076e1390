"""How narrow can a 90 % interval be on the recorded points and still hold 90 % of them? (CPU only.)

The interval goal asks for calibrated 90 % intervals whose median half-width is at most 2 x the median
absolute error. This gives the floor any interval built from grouped residuals could reach: each point's
90 % (50 %) interval is taken as its group's own 5-95 % (25-75 %) quantiles of ln(predicted / measured),
in sample (the points scored are the points the quantiles come from, which no real interval can do), and
the same statistics as `perfmodel accuracy --intervals` are computed (model.uncertainty.coverage's
definitions). Groupings: none, the bound (what model_spread.toml keys by), the kernel, kernel x bound,
kernel x bound. The model's own intervals are printed beside them.

  python3 benchmarks/interval_floor.py [--figures measured|generation|datasheet] [RUN ...]
      (default: the accuracy set with the reference calibration)
"""
import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

from perfmodel.accuracy import accuracy_set, score
from perfmodel.model.uncertainty import coverage


def grouped_floor(lr: np.ndarray, keys: list) -> dict:
    """In-sample intervals from each group's residual quantiles: coverage() of them."""
    groups = defaultdict(list)
    for i, k in enumerate(keys):
        groups[k].append(i)
    q = np.empty((len(lr), 4))
    for ix in groups.values():
        q[ix] = np.quantile(lr[ix], [0.05, 0.25, 0.75, 0.95])
    p = np.ones(len(lr))
    m = np.exp(-lr)  # measured / predicted
    # measured = predicted / exp(residual): the residual's high quantile is the interval's low end
    cov = coverage(m, p, np.exp(-q[:, 3]), np.exp(-q[:, 2]), np.exp(-q[:, 1]), np.exp(-q[:, 0]))
    cov["groups"] = len(groups)
    return cov


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--figures", default="measured", choices=("measured", "generation", "datasheet"))
    ap.add_argument("runs", nargs="*")
    a = ap.parse_args()
    runs = [Path(r) for r in a.runs] or [Path("results") / r for r in accuracy_set(Path("results"))]
    scores, overall = score(runs, a.figures, own_fallback=True)
    err = np.array([e for s in scores for e in s.errors_pct])
    lr = np.log1p(err / 100.0)
    bounds = [b for s in scores for b in s.bounds]
    kp = [k for s in scores for k in s.kernel_points]
    assert len(kp) == len(err) == len(bounds), "every scored point is a catalogue kernel's"
    kernels = [k["kernel"] for k in kp]
    rows = [("the model's intervals", overall["intervals"])]
    for name, keys in (("one group", [0] * len(lr)), ("by bound", bounds), ("by kernel", kernels),
                       ("by kernel x bound", list(zip(kernels, bounds)))):
        rows.append((f"residual quantiles {name}, in sample", grouped_floor(lr, keys)))
    print(f"{len(lr)} points, {len(runs)} runs, {a.figures} figures; median absolute error {np.median(np.abs(err)):.2f} %")
    print()
    print("| intervals | groups | inside 50 % | inside 90 % | median 90 % half-width | half-width / error |")
    print("|---|---|---|---|---|---|")
    for name, c in rows:
        print(f"| {name} | {c.get('groups', '')} | {c['inside_50_pct']:.1f} % | {c['inside_90_pct']:.1f} % | "
              f"{c['median_half_width_90_pct']:.1f} % | {c['width_over_error']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
