"""`perfmodel sweep`: rank every valid configuration; `--measure K` times the top K on the GPU."""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from ..catalogue import PARAM_NAMES, get_kernel, swept_kernels, tiled_kernels
from ..errors import UserError
from ..facts import can_compile, missing
from .. import kernel_tuner
from ..measure.gpu import require_gpu
from ..measure.tune import measure_sweep
from ..measure.validate import validate_shapes
from ..model.figures import Figures
from ..progress import counter
from ..model.occupancy import LIMITERS
from ..model.predict import BOUNDS, Problem
from ..model.uncertainty import OVERLAP
from ..sweep import rank


OVERLAP_SCAN = 200  # --measure-overlap looks this far down the ranking for configurations that overlap the first


def run(a) -> int:
    fig = Figures.load(a.device, a.calibration, force=a.force_calibration, figures=a.figures)
    swept = swept_kernels()
    kernels = a.kernel or tiled_kernels()
    for k in kernels:
        get_kernel(k)
        if k not in swept:
            raise UserError(f"sweep covers the kernels with tiles or slices of K ({', '.join(swept)}); '{k}' has no tile "
                            "parameters to sweep")
    if a.kernel_tuner:  # checked before the ranking: a bad name costs nothing
        if len(kernels) != 1:
            raise UserError("--kernel-tuner writes one kernel's search space: name it with --kernel")
        kernel_tuner.write_check(Path(a.kernel_tuner))
    if (a.measure or a.measure_overlap) and a.ray is None:  # fail on a machine without a GPU before compiling anything
        require_gpu()
    if a.shapes:  # tuning over the corpus: a shape run whose plan is the model's top K per shape
        return validate_shapes(a.shapes, seed=a.seed, tune_top=a.measure, sample=a.sample, device=a.device,
                               gpus=a.gpus, ray=a.ray, mixed=a.mixed_gpus)
    quiet = bool(a.json or a.csv)
    progress = counter("compiled and simulated {j}/{n} of the top configurations", enabled=not quiet)

    if a.sass > 0 and not can_compile(fig.device.compute_capability) and not quiet:
        print(f"note: {missing(fig.device.compute_capability)}: ranking by the closed form only", file=sys.stderr)
    rk = rank(fig, Problem(a.M, a.N, a.K), kernels, a.sass, progress, choices=a.choices == "all")
    configs, gflops, bt = rk.configs, rk.gflops, rk.batch
    peak = fig.device.peak_fp32_GFLOPS()
    shown = [int(i) for i in rk.order[: max(a.top, OVERLAP_SCAN if a.measure_overlap else 0)]]
    iv = rk.intervals(shown)
    overlap = [i for j, i in enumerate(shown) if j == 0 or iv["p_beats_first"][j] >= OVERLAP]
    rows = []
    for r, i in enumerate(rk.order[: a.top], 1):
        c = configs[i]
        pb, k = rk.batch_of(i)  # the batch that predicted it: its binary's registers and occupancy where built
        rows.append(dict(rank=r, kernel=c.kernel, **{k: getattr(c, k) for k in PARAM_NAMES},
                         choices=",".join(f"{k}={v}" for k, v in {**c.extra_params(), **c.changed_choices()}.items()),
                         threads=c.threads, registers_est=int(bt.resources.registers[i]),
                         registers=int(pb.resources.registers[k]), gflops=round(float(gflops[i]), 1),
                         from_binary=i in rk.refined, pct_of_peak=round(float(gflops[i] / peak * 100), 2),
                         blocks_per_sm=int(pb.blocks_per_sm[k]), occupancy_pct=round(float(pb.occupancy.occupancy[k] * 100), 1),
                         limiter=LIMITERS[int(pb.occupancy.limiter[k])], bound=BOUNDS[int(pb.bound[k])],
                         q05_gflops=round(float(iv["q05"][r - 1]), 1), q25_gflops=round(float(iv["q25"][r - 1]), 1),
                         q75_gflops=round(float(iv["q75"][r - 1]), 1), q95_gflops=round(float(iv["q95"][r - 1]), 1),
                         p_faster_than_first=round(float(iv["p_beats_first"][r - 1]), 3),
                         overlaps_first=r > 1 and bool(iv["p_beats_first"][r - 1] >= OVERLAP)))
    if a.measure_overlap:
        if len(overlap) == OVERLAP_SCAN:
            print(f"note: every one of the first {OVERLAP_SCAN} configurations overlaps the first; measuring those",
                  file=sys.stderr)
        print(f"measuring the {len(overlap)} configuration(s) that could be faster than the model's first "
              f"(in at least {100 * OVERLAP:.0f} % of the draws)", file=sys.stderr)
        return measure_sweep(fig.device, configs, gflops, a.M, a.N, a.K, 0, sample=0, chosen=overlap,
                             gpus=a.gpus, ray=a.ray, mixed=a.mixed_gpus)
    if a.measure:
        return measure_sweep(fig.device, configs, gflops, a.M, a.N, a.K, a.measure, sample=a.sample, seed=a.seed,
                             gpus=a.gpus, ray=a.ray, mixed=a.mixed_gpus)
    if a.kernel_tuner:
        kernel_tuner.write(Path(a.kernel_tuner), kernel_tuner.module_text(kernels[0], fig.device.name, a.M, a.N, a.K, configs, gflops))
        print(f"wrote {a.kernel_tuner}: {kernels[0]}'s {len(configs)} valid configurations on {fig.device.name} "
              f"(tune_params, restrictions), the model's order and its top as x0 ({configs[int(rk.order[0])].label()})")
        return 0
    total, why = rk.considered, rk.invalid_by_constraint
    if a.json:
        print(json.dumps(dict(device=fig.device.name, M=a.M, N=a.N, K=a.K, considered=total, valid=len(configs),
                              invalid_by_constraint=dict(why), seconds=rk.seconds, top=rows,
                              overlapping_first=len(overlap) - 1), indent=2))
        return 0
    if a.csv:
        w = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else ["rank"])
        w.writeheader()
        w.writerows(rows)
        return 0
    print(f"{fig.device.name} ({fig.kind} figures), M={a.M} N={a.N} K={a.K}: {total} configurations considered, {len(configs)} valid, "
          f"{total - len(configs)} invalid; predicted in {rk.seconds:.2f} s"
          + (f"; the top {len(rk.refined)} re-predicted from their binaries (compiler registers, simulated k-tile loop; "
             f"marked b)" if rk.refined else ""))
    for name, n in why.most_common():
        print(f"  invalid: {n:6d} first violate {name}")
    print(f"{'#':>3} {'kernel':18} {'bm':>4} {'bn':>4} {'bk':>3} {'tm':>3} {'tn':>3} {'wm':>4} {'wn':>4} {'wni':>3} "
          f"{'GFLOPS':>9} {'90 % interval':>17} {'P>#1':>5} {'%peak':>6} {'occ%':>5} {'limiter':>13} {'bound':>8}  stages, splits and the design "
          f"choices changed from the kernel's defaults")
    for r in rows:
        f = lambda v: "-" if v is None else str(v)  # noqa: E731
        pb = "" if r["rank"] == 1 else f"{100 * r['p_faster_than_first']:4.0f}%"
        print(f"{r['rank']:3d} {r['kernel']:18} {r['bm']:4d} {r['bn']:4d} {f(r['bk']):>3} {f(r['tm']):>3} {f(r['tn']):>3} "
              f"{f(r['wm']):>4} {f(r['wn']):>4} {f(r['wn_iter']):>3} {r['gflops']:9,.0f} "
              f"{r['q05_gflops']:8,.0f}-{r['q95_gflops']:<8,.0f} {pb:>5} {r['pct_of_peak']:6.1f} "
              f"{r['occupancy_pct']:5.1f} {r['limiter']:>13} {r['bound']:>8}{' b' if r['from_binary'] else '  '} {r['choices']}")
    n_over = sum(r["overlaps_first"] for r in rows)
    print(f"P>#1: the share of draws of the inputs and the model's residual in which a configuration is faster than #1; "
          f"{n_over} of the {len(rows) - 1} shown after #1 are in at least {100 * OVERLAP:.0f} % of them (their intervals overlap #1's): "
          + ("the ranking among those is not settled by the model; measure them (sweep --measure-overlap)" if n_over
             else "#1 is ahead of all of them"))
    return 0
