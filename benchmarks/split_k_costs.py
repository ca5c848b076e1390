"""What split_k's second kernel costs (GPU only; run from the repository root). Writes JSON to $OUT (default
/tmp/out) and prints a table last.

1. second launch: an empty kernel, and two empty kernels back to back, each timed as validate times an
   SGEMM (L2 flushed before each repetition, one event pair around the launches): what a second launch
   adds to the timed window (latency.second_launch_us).
2. reduction: split_k at shapes where it pays, timed whole (the kernel, then reduce_splits) and without
   the reduction, beside what the model's reduction_seconds predicts for the difference.
    PYTHONPATH=. python3 benchmarks/split_k_costs.py
    PYTHONPATH=. python3 benchmarks/split_k_costs.py --case 512,2304,768:bm=64,bn=128,bk=16,splits=8 [--case ...] \
        --kscale 1,2,4     other shapes and configurations (M,N,K:key=value,...), each also at K x every scale
        (more k-tiles a slice, the same grid), so the main kernel's time splits into a part per block and a
        part per k-tile
    PYTHONPATH=. python3 benchmarks/split_k_costs.py --compare FILE [--launch programmatic|stream]   (CPU) a recorded
        JSON beside the model with the reference calibration of its device and the local compiler's facts: the main
        kernel (the prediction less its reduction), the reduction, and fixed + per-k-tile fits of both main kernels.
        The reduction is predicted launched as the record says it was (its `reduction_launch`); a record that does
        not say needs --launch: the catalogue launched reduce_splits behind the main kernel the usual way ("stream")
        until 2026-12-03 and programmatically on sm_90 and newer since (split-k-costs-20261204-h200-bench-misses.json)
    PYTHONPATH=. python3 benchmarks/split_k_costs.py --ncu FILE [FILE ...]   (CPU) ncu_choices.py summaries of split_k
        at one shape and several K: the cycles each warp of a block spends in each stall reason (stall reasons per
        issue x issued instructions / the grid's warps), fitted as fixed + per k-tile of the slice"""
import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Optional

import numpy as np

from perfmodel import KernelConfig, load_device
from perfmodel.catalogue import split_slices
from perfmodel.model.predict import reduction_seconds

CASES = [(512, 512, 16384, dict(splits=8)), (256, 256, 65536, dict(bm=64, bn=64, splits=16)),
         (1024, 1024, 16384, dict(splits=3)), (128, 1024, 65536, dict(bm=64, splits=12)),
         (2048, 2048, 2048, dict(splits=2)), (4096, 4096, 1024, dict(splits=4))]


def measure(cases, kscales) -> int:
    from perfmodel.measure.detect import match_shipped
    from perfmodel.measure.gpu import Gpu, Problem
    from perfmodel.measure.timing import bench_us

    OUT = Path(os.environ.get("OUT", "/tmp/out"))
    OUT.mkdir(parents=True, exist_ok=True)
    gpu = Gpu()
    device = load_device(match_shipped(gpu.name, gpu.cc) or "h100-sxm")
    mod = gpu.compiler.SourceModule('extern "C" __global__ void empty(float* c) {}', no_extern_c=True, options=["-O3"])
    empty = mod.get_function("empty")
    buf = gpu.drv.mem_alloc(1 << 20)

    def bench(fn):
        return bench_us(fn, gpu.flush, gpu.event, gpu.sync, 10.0, 60.0)

    def one():
        empty(buf, block=(256, 1, 1), grid=(1, 1, 1))

    def two():
        one()
        empty(buf, block=(256, 1, 1), grid=(1, 1, 1))

    def two_wide():
        one()
        empty(buf, block=(256, 1, 1), grid=(4 * gpu.sm_count, 1, 1))

    res = dict(device=gpu.name, device_file=device.name, launch={}, reduction=[],
               reduction_launch="programmatic" if gpu.programmatic else "stream")
    for name, fn in (("one empty", one), ("two empty", two), ("empty + empty of 4 x SMs blocks", two_wide)):
        res["launch"][name] = bench(fn)
    res["second_launch_us"] = res["launch"]["two empty"]["median_us"] - res["launch"]["one empty"]["median_us"]
    todo = [(M, N, K * s, params) for M, N, K, params in cases for s in kscales]
    for i, (M, N, K, params) in enumerate(todo):
        cfg = KernelConfig.make("split_k", **params)
        prob = Problem(gpu, M, N, K)
        whole, ok, how = prob.launch_verified(cfg)
        fn = gpu.function(cfg)
        slices = int(split_slices(K, cfg.bk, cfg.k_splits)[0])
        work = gpu.workspace(4 * slices * M * N)
        grid = (math.ceil(N / cfg.bn), math.ceil(M / cfg.bm), slices)
        args = (prob.A, prob.B, work, np.int32(M), np.int32(N), np.int32(K))
        t_whole, t_main = bench(whole), bench(lambda: fn(*args, block=(cfg.threads, 1, 1), grid=grid))
        model = float(reduction_seconds(device, M, N, slices, device.compute.sm_clock_boost_MHz * 1e6)) * 1e6
        res["reduction"].append(dict(config=cfg.label(), params=cfg.params(), M=M, N=N, K=K, slices=slices, verified=bool(ok),
                                     verification=how, whole=t_whole, main=t_main,
                                     reduction_us=t_whole["median_us"] - t_main["median_us"],
                                     model_without_second_launch_us=model))
        print(f"  {i + 1}/{len(todo)} {cfg.label()} {M}x{N}x{K}: {'ok' if ok else 'WRONG'}", flush=True)
        del prob
    (OUT / "split_k_costs.json").write_text(json.dumps(res, indent=1))
    print(f"{gpu.name}: median us (q10-q90)")
    for name, t in res["launch"].items():
        print(f"  {name:34} {t['median_us']:7.2f} ({t['q10_us']:.2f}-{t['q90_us']:.2f})")
    print(f"  second launch adds {res['second_launch_us']:.2f} us")
    print("  config                                          shape                slices   whole     main   reduction  model*")
    for r in res["reduction"]:
        print(f"  {r['config']:47} {r['M']}x{r['N']}x{r['K']:<7} {r['slices']:>4} {r['whole']['median_us']:8.1f} "
              f"{r['main']['median_us']:8.1f} {r['reduction_us']:8.2f} {r['model_without_second_launch_us']:8.2f} "
              f"{'ok' if r['verified'] else 'WRONG'}")
    print("  * the model's reduction_seconds with this device file (second_launch_us as the file has it)")
    return 0 if all(r["verified"] for r in res["reduction"]) else 1


def record_launch(res: dict, launch: Optional[str]) -> str:
    """How the record's reduce_splits was launched: its `reduction_launch`, else `launch` (the --launch option);
    ValueError where neither says or the two differ."""
    recorded = res.get("reduction_launch")
    if recorded is not None and launch is not None and recorded != launch:
        raise ValueError(f"--launch {launch}: the record says its reduction was launched {recorded!r}")
    if recorded is None and launch is None:
        raise ValueError("the record does not say how its reduction was launched; pass --launch stream (records "
                         "measured before 2026-12-03) or --launch programmatic (sm_90 and newer, since)")
    return recorded or launch


def compare(path: Path, launch: Optional[str] = None) -> int:
    """Each recorded case beside the model: main kernel = the prediction less its reduction; reduction =
    reduction_seconds with the second launch (what `whole - main` measures), the second kernel launched as the
    record's was (record_launch); and, per configuration and shape measured at two or more K, fixed us + ns per
    k-tile fitted to the measured and the predicted main kernel."""
    import dataclasses

    from perfmodel import facts
    from perfmodel.accuracy import reference_calibration
    from perfmodel.model.figures import Figures
    from perfmodel.model.predict import predict

    res = json.loads(path.read_text())
    how = record_launch(res, launch)
    cal = reference_calibration(Path("results"), res["device_file"])
    fig = Figures.load(res["device_file"], cal)
    print(f"model: {res['device_file']} with {cal}; the reduction launched {how!r} "
          f"({'as the record says' if res.get('reduction_launch') else 'as --launch says'})")
    print("| configuration | M x N x K | slices | k-tiles a slice | main us: measured / model (error: > 0 the model is fast) | reduction us: measured / model |")
    print("|---|---|---|---|---|---|")
    fits: dict = {}
    for r in res["reduction"]:
        if "params" not in r:
            continue
        cfg = KernelConfig.make("split_k", **r["params"])
        build = dataclasses.replace(facts.for_config(cfg, fig.device.compute_capability), reduction_launch=how)
        p = predict(fig, cfg, r["M"], r["N"], r["K"], build=build)
        red = p.reduction_us
        model_main, meas_main = p.time_s * 1e6 - red, r["main"]["median_us"]
        kt = math.ceil(math.ceil(r["K"] / r["slices"]) / cfg.bk)
        fits.setdefault((cfg.label(), r["M"], r["N"]), []).append((kt, meas_main, model_main))
        print(f"| {cfg.label()} | {r['M']}x{r['N']}x{r['K']} | {r['slices']} | {kt} | {meas_main:.1f} / {model_main:.1f} "
              f"({(meas_main / model_main - 1) * 100:+.1f} %) | "
              f"{r['reduction_us']:.2f} / {red:.2f} |")
    print()
    print("| configuration | M x N | main, measured: fixed us + ns per k-tile | model: fixed us + ns per k-tile |")
    print("|---|---|---|---|")
    for (label, M, N), pts in fits.items():
        if len({kt for kt, _, _ in pts}) < 2:
            continue
        kt = np.array([x[0] for x in pts], dtype=float)
        (bm_, am), (bp, ap) = np.polyfit(kt, [x[1] for x in pts], 1), np.polyfit(kt, [x[2] for x in pts], 1)
        print(f"| {label} | {M}x{N} | {am:.1f} + {bm_ * 1e3:,.0f} | {ap:.1f} + {bp * 1e3:,.0f} |")
    return 0


STALLS = ("selected", "long_scoreboard", "short_scoreboard", "barrier", "wait", "dispatch_stall", "lg_throttle", "drain")


def ncu_fits(files: list[Path]) -> int:
    """Per configuration and M x N: each stall reason's cycles per warp of a block at every K, and the
    fixed + per-k-tile line through them (what a block pays once, what each k-tile of its slice costs)."""
    import lzma

    pts: dict = {}
    for f in files:
        d = json.loads(lzma.open(f, "rt").read() if f.suffix == ".xz" else f.read_text())
        M, N, K = d["M"], d["N"], d["K"]
        for label, v in d["kernels"].items():
            kernel, _, args = label.partition("(")
            cfg = KernelConfig.make(kernel, **{k: (int(x) if x.isdigit() else x)
                                               for k, x in (a.split("=") for a in args.rstrip(")").split(",") if a)})
            slices = int(split_slices(K, cfg.bk, cfg.k_splits)[0])
            warps = math.ceil(M / cfg.bm) * math.ceil(N / cfg.bn) * slices * cfg.threads // 32
            kt = math.ceil(math.ceil(K / slices) / cfg.bk)
            issued = v["smsp__issue_active.sum"]
            per = {r: v.get(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio", 0.0) * issued / warps for r in STALLS}
            pts.setdefault((cfg.label(), M, N), []).append((kt, per, v["gpu__time_duration.sum"] / 1e3))
    print("| configuration | M x N | k-tiles a slice | ncu us | " + " | ".join(STALLS) + " |")
    print("|---|---|---|---|" + "---|" * len(STALLS))
    for (label, M, N), rows in pts.items():
        rows.sort(key=lambda t: t[0])
        for kt, per, us in rows:
            print(f"| {label} | {M}x{N} | {kt} | {us:.1f} | " + " | ".join(f"{per[r]:,.0f}" for r in STALLS) + " |")
        if len(rows) > 1:
            kts = np.array([r[0] for r in rows], dtype=float)
            fit = [np.polyfit(kts, [r[1][s] for r in rows], 1) for s in STALLS]
            print(f"| {label} | {M}x{N} | fixed + per k-tile | | " + " | ".join(f"{b:,.0f} + {a:,.0f}" for a, b in fit) + " |")
    return 0


def _case(text: str):
    try:
        shape, _, rest = text.partition(":")
        M, N, K = (int(x) for x in shape.split(","))
        params = {k: (int(v) if v.isdigit() else v) for k, v in (kv.split("=") for kv in filter(None, rest.split(",")))}
        KernelConfig.make("split_k", **params)
    except Exception as e:
        raise argparse.ArgumentTypeError(f"{text!r}: want M,N,K:key=value,... of a split_k configuration ({e})")
    return M, N, K, params


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", type=_case, action="append", metavar="M,N,K:SPEC", help="a shape and split_k parameters "
                    "(default: six shapes where split_k pays)")
    ap.add_argument("--kscale", default="1", help="K multipliers, comma-separated (default 1)")
    ap.add_argument("--compare", metavar="FILE", help="a recorded split_k_costs.json beside the model (CPU)")
    ap.add_argument("--launch", choices=("programmatic", "stream"),
                    help="with --compare: how the record's reduction was launched, where the record does not say")
    ap.add_argument("--ncu", nargs="+", type=Path, metavar="FILE", help="ncu_choices.py summaries of split_k (CPU)")
    a = ap.parse_args()
    try:
        scales = [int(x) for x in a.kscale.split(",")]
        assert min(scales) >= 1
    except (ValueError, AssertionError):
        ap.error(f"--kscale {a.kscale!r}: positive integers, comma-separated")
    if a.compare is not None and not Path(a.compare).is_file():
        ap.error(f"--compare {a.compare}: no such file")
    if a.ncu:
        missing = [str(f) for f in a.ncu if not f.is_file()]
        if missing:
            ap.error(f"--ncu: no such file: {', '.join(missing)}")
        sys.exit(ncu_fits(a.ncu))
    if a.launch is not None and a.compare is None:
        ap.error("--launch goes with --compare")
    if a.compare is not None:
        try:
            sys.exit(compare(Path(a.compare), a.launch))
        except ValueError as e:  # record_launch: the record's launch is unknown or contradicted (before any output)
            ap.error(f"--compare {a.compare}: {e}")
    sys.exit(measure(a.case or CASES, scales))
