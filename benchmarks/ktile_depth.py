"""How the time of a block grows with its number of k-tiles (GPU): a few configurations at M = N = 1024 (one
partial wave) and 4096 (many waves), K = 64 to 4096, beside cuBLAS. Fitting time = fixed + per-tile x k-tiles per
(configuration, M = N) separates what a block costs once (its first tile's loads, writing C, the launch) from
what each k-tile costs, which the recorded runs, all at large K, cannot: configurations with 32 or fewer
k-tiles a block are predicted 8-26 % fast over the recorded H100 runs, and more so at bk = 16 than at 8
(docs/model.md). Every point verified and timed as validate times it. Writes
results/<date>-<device>-ktile-depth/raw.json (a perfmodel Run, group `ktile_depth`; `perfmodel accuracy RUN`
replays it) and prints a table last.

    python benchmarks/ktile_depth.py
    python benchmarks/ktile_depth.py --config SPEC [--config SPEC ...] --mn 4096,8192 --ks 32,64,128 --tag TAG
        other configurations (kernel:key=value,...), sizes and depths, into results/<date>-<device>-TAG
    python benchmarks/ktile_depth.py --fit RUN [--calibration FILE]   (CPU) per configuration and M = N: the error at
        each K, and fixed + per-tile x k-tiles fitted to the measured and to the predicted times (the reference
        calibration, else the run's own, or FILE)
    python benchmarks/ktile_depth.py --predict DEVICE --calibration FILE [--config SPEC ...] [--mn ...] [--ks ...]
        (CPU, before a run) the same fit to the predicted times alone, with blocks per SM and waves, from the
        compiler's build facts where a toolchain is here"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from perfmodel.accuracy import figures_for
from perfmodel.analysis import load_run, rows, run_facts
from perfmodel.catalogue import KernelConfig

from grid_measure import measure_grid
from ncu_choices import parse

CONFIGS = [dict(kernel="double_buffer", bm=128, bn=128, bk=8, tm=16, tn=8),
           dict(kernel="double_buffer", bm=128, bn=128, bk=16, tm=16, tn=8),
           dict(kernel="double_buffer", bm=128, bn=256, bk=16, tm=16, tn=8),
           dict(kernel="double_buffer", bm=64, bn=256, bk=8, tm=16, tn=8),
           dict(kernel="tiled_2d_float4"),
           dict(kernel="warp_tiled")]
MN = (1024, 4096)
KS = (64, 128, 256, 512, 1024, 4096)


def configs() -> list[KernelConfig]:
    return [KernelConfig.make(**c) for c in CONFIGS]


def main(cfgs: list[KernelConfig], MN=MN, KS=KS, tag: str = "ktile-depth") -> int:
    _, ms = measure_grid(tag, "ktile_depth", MN, KS, cfgs)
    print(f"{'config (median us)':62} {'M=N':>5} " + " ".join(f"{'K=' + str(k):>8}" for k in KS))
    for mn in MN:
        for c in [None] + cfgs:
            t = {m.K: (m.timing.median_ms * 1e3 if m.verified and m.timing else float("nan")) for m in ms
                 if m.M == mn and (m.kernel == "cublas" if c is None else (m.kernel == c.kernel and m.config == c.params()))}
            print(f"{'cublas' if c is None else c.label():62} {mn:5d} " + " ".join(f"{t[k]:8.1f}" for k in KS))
    return 0


def fit(run_dir: Path, calibration: Path | None = None) -> int:
    """Least-squares fixed (us) + per-tile (ns) x k-tiles to the measured and the predicted times (the device's
    reference calibration, the run's own, or `calibration`)."""
    run = load_run(run_dir)
    fig = figures_for(run_dir, "measured", calibration, Path("results"), own_fallback=True)
    pts: dict = {}
    for r in rows(run, fig, run_facts(run, run_dir)):
        if r["kernel"] == "cublas" or r.get("error_pct") is None:
            continue
        pts.setdefault((r["kernel"], r["config"], r["M"]), {})[r["K"]] = (r["median_ms"] * 1e3, r["_prediction"].time_s * 1e6,
                                                                         r["error_pct"])
    all_ks = sorted({k for d in pts.values() for k in d})
    print("| configuration | M = N | error at K = " + " / ".join(str(k) for k in all_ks) + " | measured: fixed us + ns per k-tile "
          "| predicted: fixed us + ns per k-tile |")
    print("|---|---|---|---|---|")
    for (kernel, config, mn), d in pts.items():
        bk = json.loads(config)["bk"]
        ks = sorted(d)
        if len(ks) < 2:
            continue
        kt = np.array([k / bk for k in ks])
        (bm_, am), (bp, ap) = np.polyfit(kt, [d[k][0] for k in ks], 1), np.polyfit(kt, [d[k][1] for k in ks], 1)
        label = KernelConfig.make(kernel, **json.loads(config)).label()
        print(f"| {label} | {mn} | " + " / ".join(f"{d[k][2]:+.1f}" for k in ks) +
              f" % | {am:.1f} + {bm_ * 1e3:,.0f} | {ap:.1f} + {bp * 1e3:,.0f} |")
    return 0


def predicted(device: str, calibration: Path, cfgs: list[KernelConfig], MN=MN, KS=KS) -> int:
    """Per configuration and M = N: blocks per SM, waves, the predicted time at each K and fixed (us) + per-tile (ns)
    x k-tiles fitted to it, as `fit` fits a recorded run's predictions (written before the run measures them)."""
    from perfmodel import facts, predict
    from perfmodel.model.figures import Figures

    fig = Figures.load(device, calibration=calibration)
    print(f"predicted with {fig.label}")
    print("| configuration | M = N | blocks/SM | waves | predicted us at K = " + " / ".join(str(k) for k in KS) +
          " | predicted: fixed us + ns per k-tile |")
    print("|---|---|---|---|---|---|")
    for cfg in cfgs:
        build = facts.for_config(cfg, fig.device.compute_capability)
        for mn in MN:
            ps = [predict(fig, cfg, mn, mn, k, build=build) for k in KS]
            slope, fixed = np.polyfit([k / cfg.bk for k in KS], [p.time_s * 1e6 for p in ps], 1)
            print(f"| {cfg.label()} | {mn} | {ps[0].occupancy.blocks_per_sm} | {ps[0].waves.waves:.2f} | " +
                  " / ".join(f"{p.time_s * 1e6:.1f}" for p in ps) + f" | {fixed:.1f} + {slope * 1e3:,.0f} |")
    return 0


def _spec(text: str) -> KernelConfig:
    try:
        return parse(text)
    except Exception as e:  # the catalogue says what is wrong
        raise argparse.ArgumentTypeError(f"{text!r}: {e}")


def _ints(text: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers")
    if min(vals) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: sizes must be at least 1")
    return vals


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", metavar="RUN", help="fit a recorded run (CPU) instead of measuring")
    ap.add_argument("--predict", metavar="DEVICE", help="predict the grid on this shipped device (CPU) instead of measuring")
    ap.add_argument("--calibration", type=Path, metavar="FILE", help="with --fit or --predict: predict with this calibration file")
    ap.add_argument("--config", type=_spec, action="append", metavar="SPEC", help="kernel:key=value,... (default: the six above)")
    ap.add_argument("--mn", type=_ints, default=MN, help="M = N sizes, comma-separated (default 1024,4096)")
    ap.add_argument("--ks", type=_ints, default=KS, help="K values, comma-separated (default 64,...,4096)")
    ap.add_argument("--tag", default="ktile-depth", help="the results folder's tag (default ktile-depth)")
    a = ap.parse_args()
    if a.fit is not None and not (Path(a.fit) / "raw.json").is_file() and not (Path(a.fit) / "raw.json.xz").is_file():
        ap.error(f"--fit takes a recorded run folder (results/*-ktile-depth) holding raw.json or raw.json.xz, got {a.fit}")
    if a.tag and not all(ch.isalnum() or ch == "-" for ch in a.tag):
        ap.error(f"--tag {a.tag!r}: letters, digits and '-' only")
    if a.calibration is not None and ((a.fit is None and a.predict is None) or not a.calibration.is_file()):
        ap.error(f"--calibration goes with --fit or --predict and takes a calibration file, got {a.calibration}")
    if a.predict is not None and (a.fit is not None or a.calibration is None):
        ap.error("--predict takes --calibration FILE and excludes --fit")
    if a.predict is not None:
        sys.exit(predicted(a.predict, a.calibration, a.config or configs(), a.mn, a.ks))
    sys.exit(fit(Path(a.fit), a.calibration) if a.fit is not None else main(a.config or configs(), a.mn, a.ks, a.tag))
