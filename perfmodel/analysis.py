"""Derived results: predictions for recorded measurements, errors, MAPE and Spearman. No GPU.

A recorded run (raw.json) is never modified; this recomputes everything from it, so a model or
device-file change is judged on the same measurements."""
from __future__ import annotations

import csv
import json
import lzma
import tomllib
from pathlib import Path
from typing import Optional

import numpy as np
from pydantic import ValidationError

from .catalogue import KernelConfig, kernel_specs
from .devices import DeviceSpec, attach_calibration, datasheet_only, load_device, shipped_devices
from .errors import UserError, read_json, validation_message
from .facts import RunFacts
from .measure.records import PEERS, Run, run_record
from .model.figures import Figures
from .model.predict import predict
from .model.uncertainty import coverage
from .shapes import CLASSES as SHAPE_CLASSES
from .shapes import corpus


SCHEMA_VERSIONS = (1,)


def load_run(run_dir: str | Path) -> Run:
    """A recorded run's raw.json (or raw.json.xz), or UserError (one line) naming the file and what is wrong with it."""
    if not Path(run_dir).is_dir():
        raise UserError(f"{run_dir} is not a folder (expected a results folder holding raw.json)")
    p = run_record(Path(run_dir))
    if p is None:
        raise UserError(f"{run_dir} holds no raw.json (not a perfmodel validate results folder)")
    if p.suffix == ".xz":
        try:
            data = json.loads(lzma.decompress(p.read_bytes()))
        except (lzma.LZMAError, ValueError) as exc:
            raise UserError(f"recorded run {p} does not unpack as JSON ({exc})") from None
    else:
        data = read_json(p, "recorded run")
    if not isinstance(data, dict):
        raise UserError(f"recorded run {p} holds a JSON {type(data).__name__}, not an object with environment and measurements")
    version = data.get("schema_version", 1)
    if version not in SCHEMA_VERSIONS:
        raise UserError(f"recorded run {p} has schema_version {version!r}; this perfmodel reads {', '.join(map(str, SCHEMA_VERSIONS))}")
    try:
        return Run.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"recorded run {p}: {validation_message(exc)}") from None


def run_device(run: Run, recorded: bool = False) -> DeviceSpec:
    """The shipped device file named in the run (current figures), or the run's own copy."""
    name = run.environment.device_file
    if not recorded and name in shipped_devices():
        return load_device(name)
    try:
        return DeviceSpec.model_validate(tomllib.loads(run.device_toml))
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise UserError(f"the device file recorded in the run ({name}) does not load: {str(exc).splitlines()[0]}") from None


def run_figures(run_dir: str | Path, figures: str = "auto", calibration: str | Path | None = None) -> Figures:
    """Figures for deriving a run: with the run's own calibration.toml (written by validate) when present
    and figures is 'auto' or 'measured'; an explicit calibration file wins; 'datasheet' uses none;
    'generation' the SM figures calibrate measured on a GPU of its generation (Figures.of_generation)."""
    run = load_run(run_dir)
    dev = run_device(run)
    own = Path(run_dir) / "calibration.toml"
    cal = calibration or (own if own.exists() else None)
    if figures == "datasheet":
        return Figures(datasheet_only(dev))
    if figures == "generation":  # the SM generation's measured figures, no calibration of that GPU
        fig = Figures.of_generation(dev)
        if not fig.generation:
            raise UserError(f"{run_dir}: generation sm_{dev.compute_capability.replace('.', '')} has no measured figures")
        return fig
    if cal is None:
        if figures == "measured":
            raise UserError(f"{run_dir} has no calibration.toml; pass --calibration FILE")
        return Figures(datasheet_only(dev))
    return Figures(attach_calibration(dev, cal), calibrated=True)


def run_facts(run: Run, run_dir: str | Path) -> RunFacts:
    """Build facts of a run's points, with the loop-program archives beside the runs (its parent folder)."""
    return RunFacts(run, [Path(run_dir).resolve().parent])


def rows(run: Run, figures: Figures | None, build_facts: RunFacts, holdout: bool = False) -> list[dict]:
    """One row per measurement: measured and predicted GFLOPS, error, bound, % of cuBLAS.

    The prediction uses the build facts of the binary that ran (facts.RunFacts: `run_facts(run, run_dir)`
    finds the loop-program archives beside the run) and the SM clock NVML observed while it was timed;
    figures None: the run's device with datasheet figures."""
    fig = figures or Figures(run_device(run))
    rf = build_facts
    cfgs = [KernelConfig.make(m.kernel, **m.config) for m in run.measurements if m.kernel not in PEERS]
    if len(cfgs) > 8 and hasattr(rf, "prebuild"):  # build what the replay needs in parallel, not one at a time
        rf.prebuild(cfgs)
    peers = {p: {(m.M, m.N, m.K): m.gflops_median for m in run.measurements if m.kernel == p and m.verified} for p in PEERS}
    out = []
    for m in run.measurements:
        r = dict(kernel=m.kernel, group=m.group, shape=m.shape, shape_class=shape_class(m.shape), holdout=is_holdout(m.shape),
                 M=m.M, N=m.N, K=m.K, config=json.dumps(m.config, sort_keys=True),
                 verified=m.verified, verification=m.verification, registers=m.registers,
                 measured_gflops=m.gflops_median, **{f"{p}_gflops": peers[p].get((m.M, m.N, m.K)) for p in PEERS},
                 gpu=f"gpu{m.gpu.index}@{m.gpu.host} {m.gpu.name} ({m.gpu.uuid})" if m.gpu else None)
        if m.timing:
            r.update(median_ms=m.timing.median_ms, q10_ms=m.timing.q10_ms, q90_ms=m.timing.q90_ms,
                     spread_pct=100 * (m.timing.q90_ms - m.timing.q10_ms) / m.timing.median_ms,
                     clock_MHz=m.timing.sm_clock_MHz_median)
        if m.gflops_median and r.get("cublas_gflops"):
            r["pct_of_cublas"] = 100 * m.gflops_median / r["cublas_gflops"]
        if m.kernel not in PEERS:
            cfg = KernelConfig.make(m.kernel, **m.config)
            build = rf.for_measurement(m, cfg)
            p = predict(fig, cfg, m.M, m.N, m.K, build=build, clock_MHz=(m.timing.sm_clock_MHz_median if m.timing else None))
            r.update(facts=build.origin, loop_program=build.program is not None)
            if p.interval is not None:
                r.update(q05_gflops=p.interval.q05_GFLOPS, q25_gflops=p.interval.q25_GFLOPS,
                         q75_gflops=p.interval.q75_GFLOPS, q95_gflops=p.interval.q95_GFLOPS)
            r.update(_prediction=p, predicted_gflops=p.gflops, bound=p.bound, regime=p.regime, prefetch=p.prefetch, exposed_latency_cycles=p.exposed_latency_cycles,
                     cycles=p.cycles_per_tile, blocks_per_sm=p.occupancy.blocks_per_sm,
                     driver_blocks_per_sm=m.driver_blocks_per_sm, limiter=p.occupancy.limiter)
            if m.verified and m.gflops_median and (holdout or not r["holdout"]):
                r["error_pct"] = 100 * (p.gflops - m.gflops_median) / m.gflops_median
        out.append(r)
    return out


def _shape(name: str | None):
    """The corpus shape a shape run's point was measured for (None for square runs and unknown names)."""
    return next((s for s in corpus() if s.name == name), None) if name else None


def shape_class(name: str | None) -> str | None:
    """The corpus class of a shape run's shape (None for square runs and unknown names)."""
    sh = _shape(name)
    return sh.cls if sh else None


def is_holdout(name: str | None) -> bool:
    """Whether a shape run's shape is in the corpus hold-out (its points are not scored unless asked)."""
    sh = _shape(name)
    return bool(sh and sh.holdout)


def summary(table: list[dict]) -> dict:
    from scipy.stats import spearmanr

    pts = [r for r in table if r.get("error_pct") is not None]
    err = np.array([abs(r["error_pct"]) for r in pts])
    s = dict(points=len(pts), failed=sum(1 for r in table if not r["verified"]),
             mape_pct=float(err.mean()) if len(pts) else None, median_ape_pct=float(np.median(err)) if len(pts) else None)
    for name, sel in (("all", pts), ("sweep", [r for r in pts if r["group"] == "sweep"])):
        if len(sel) >= 3:
            rho = spearmanr([r["predicted_gflops"] for r in sel], [r["measured_gflops"] for r in sel]).statistic
            s[f"spearman_{name}"] = float(rho)
    by_class = {}
    for r in pts:
        if r.get("shape_class"):
            by_class.setdefault(r["shape_class"], []).append(r["error_pct"])
    if by_class:  # a shape run: MAPE and bias per class of the corpus
        s["by_class"] = {c: dict(points=len(e), mape_pct=float(np.mean(np.abs(e))), bias_pct=float(np.mean(e)))
                         for c, e in ((c, by_class[c]) for c in SHAPE_CLASSES if c in by_class)}
        s["bias_pct"] = float(np.mean([r["error_pct"] for r in pts]))
        s["holdout_unscored"] = sum(1 for r in table if r.get("holdout") and r["kernel"] not in PEERS
                                    and r.get("error_pct") is None and r.get("measured_gflops"))
    gpus = sorted({r["gpu"] for r in table if r.get("gpu")})
    if len(gpus) > 1:  # measured by several workers: each GPU's points apart (GPUs of several models with --mixed-gpus)
        s["by_gpu"] = {g: dict(points=sum(1 for r in table if r.get("gpu") == g),
                               scored=len(e := [r["error_pct"] for r in pts if r.get("gpu") == g]),
                               mape_pct=float(np.mean(np.abs(e))) if e else None, bias_pct=float(np.mean(e)) if e else None)
                       for g in gpus}
    iv = [r for r in pts if r.get("q05_gflops")]
    if iv:  # how the intervals did (model.uncertainty.coverage)
        s["intervals"] = coverage(*zip(*[(r["measured_gflops"], r["predicted_gflops"], r["q05_gflops"], r["q25_gflops"],
                                          r["q75_gflops"], r["q95_gflops"]) for r in iv]))
    picks = shape_picks(pts)
    if picks:
        gaps = [v["gap_pct"] for v in picks.values()]
        s["picks"] = picks
        s["pick_gap_max_pct"], s["pick_gap_median_pct"] = float(max(gaps)), float(np.median(gaps))
        s["picks_within_3pct"] = sum(g <= 3.0 for g in gaps)
    by_choice = choice_errors(pts)
    if by_choice:
        s["by_choice"] = by_choice
    sw = [r for r in pts if r["group"] == "sweep"]
    if sw:
        best_meas = max(sw, key=lambda r: r["measured_gflops"])
        top_pred = max(sw, key=lambda r: r["predicted_gflops"])
        s["sweep_top1_gap_pct"] = 100 * (1 - top_pred["measured_gflops"] / best_meas["measured_gflops"])
        s["sweep_best_measured"] = f"{best_meas['kernel']} {best_meas['config']}"
        s["sweep_model_top1"] = f"{top_pred['kernel']} {top_pred['config']}"
    return s


def choice_errors(scored: list[dict]) -> list[dict]:
    """Error per design-choice value (kernels/manifest.toml `choices`) over the scored points of kernels
    that have choices: [{choice, value, points, mape_pct, bias_pct}], worst MAPE first. Empty unless a
    point changed a choice from its kernel's defaults (a run that measured the choices)."""
    groups: dict[tuple, list[float]] = {}
    changed = False
    specs = kernel_specs()
    for r in scored:
        if r["kernel"] not in specs or not specs[r["kernel"]].choices:
            continue
        cfg = KernelConfig.make(r["kernel"], **json.loads(r["config"]))
        changed |= bool(cfg.changed_choices())
        for k, v in cfg.choices().items():
            groups.setdefault((k, str(v)), []).append(r["error_pct"])
    if not changed:
        return []
    out = [dict(choice=k, value=v, points=len(e), mape_pct=float(np.mean(np.abs(e))), bias_pct=float(np.mean(e)))
           for (k, v), e in groups.items()]
    return sorted(out, key=lambda d: -d["mape_pct"])


def shape_picks(scored: list[dict]) -> dict:
    """Per shape of a shape run, model-guided tuning among the measured points: the configuration
    today's model predicts fastest (its pick) against the fastest measured, and how far below it the
    pick measured (gap_pct). Scored rows only (the hold-out is left out unless asked)."""
    by: dict[str, list[dict]] = {}
    for r in scored:
        if r.get("shape") and r["kernel"] not in PEERS and r.get("measured_gflops") and r.get("predicted_gflops"):
            by.setdefault(r["shape"], []).append(r)
    out = {}
    for shape, rows_ in by.items():
        pick = max(rows_, key=lambda r: r["predicted_gflops"])
        best = max(rows_, key=lambda r: r["measured_gflops"])
        out[shape] = dict(points=len(rows_), pick=f"{pick['kernel']} {pick['config']}", pick_gflops=pick["measured_gflops"],
                          best=f"{best['kernel']} {best['config']}", best_gflops=best["measured_gflops"],
                          gap_pct=100.0 * (1.0 - pick["measured_gflops"] / best["measured_gflops"]),
                          cublas_gflops=pick.get("cublas_gflops"))
    return out


FIELDS = ["kernel", "group", "shape", "shape_class", "holdout", "M", "N", "K", "config", "verified", "registers", "blocks_per_sm", "driver_blocks_per_sm",
          "limiter", "clock_MHz", "median_ms", "q10_ms", "q90_ms", "spread_pct", "measured_gflops", "predicted_gflops",
          "error_pct", "bound", "cublas_gflops", "pct_of_cublas", "verification"]


def write_derived(run_dir: str | Path, out_dir: str | Path, figures: Figures | None = None, holdout: bool = False) -> dict:
    """summary.csv + summary.json into out_dir (created; never overwrites)."""
    run = load_run(run_dir)
    fig = figures or Figures(run_device(run))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)  # fails before the replay, not after
    for name in ("summary.csv", "summary.json"):
        if (out / name).exists():
            raise UserError(f"{out / name} exists; results are never overwritten")
    table = rows(run, fig, run_facts(run, run_dir), holdout=holdout)
    with open(out / "summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in table:
            w.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()})
    s = summary(table)
    s["figures"] = fig.kind
    s["device"] = fig.device.name
    public = [{k: v for k, v in r.items() if not k.startswith("_")} for r in table]
    (out / "summary.json").write_text(json.dumps(dict(summary=s, rows=public), indent=1))
    return dict(summary=s, rows=table)


def _geomean(x) -> Optional[float]:
    x = [v for v in x if v]
    return float(np.exp(np.mean(np.log(x)))) if x else None


def is_bench(run_dir: str | Path) -> bool:
    """Whether a results folder is a `perfmodel bench` run (its plan says so)."""
    plan = Path(run_dir) / "plan.json"
    return plan.is_file() and bool(read_json(plan, "shape run plan").get("bench"))


def bench_summary(table: list[dict]) -> dict:
    """A bench run (`perfmodel bench`): per shape the model's pick (group `top`) measured against cuBLAS and,
    where measured, the Triton peer (ratios of measured GFLOPS), and the pick's prediction against its
    measurement; geometric means of the ratios per shape class and overall."""
    shapes: dict[str, dict] = {}
    for r in table:
        if not r.get("shape"):
            continue
        d = shapes.setdefault(r["shape"], dict(shape=r["shape"], shape_class=r["shape_class"], holdout=bool(r["holdout"]),
                                               M=r["M"], N=r["N"], K=r["K"], flop=2.0 * r["M"] * r["N"] * r["K"]))
        if r["kernel"] in PEERS:
            d[f"{r['kernel']}_gflops"] = r["measured_gflops"] if r["verified"] else None
        elif r["group"] == "top":
            meas, pred = (r["measured_gflops"] if r["verified"] else None), r.get("predicted_gflops")
            d.update(pick=f"{r['kernel']} {r['config']}", pick_gflops=meas, predicted_gflops=pred,
                     pick_error_pct=100 * (pred - meas) / meas if meas and pred else None)
    for d in shapes.values():
        for peer_name in PEERS:
            ref = d.get(f"{peer_name}_gflops")
            d[f"vs_{peer_name}"] = d["pick_gflops"] / ref if ref and d.get("pick_gflops") else None
    per = list(shapes.values())
    out = dict(shapes=per, by_class={}, overall={})
    for name, group in [(c, [d for d in per if d["shape_class"] == c]) for c in SHAPE_CLASSES] + [("overall", per)]:
        if not group:
            continue
        errs = [abs(d["pick_error_pct"]) for d in group if d.get("pick_error_pct") is not None]
        g = dict(shapes=len(group), **{f"geomean_vs_{p}": _geomean([d.get(f"vs_{p}") for d in group]) for p in PEERS},
                 pick_mape_pct=float(np.mean(errs)) if errs else None, pick_within_8pct=sum(e <= 8.0 for e in errs))
        if name == "overall":
            out["overall"] = g
        else:
            out["by_class"][name] = g
    return out


def bench_text(b: dict, device: str) -> str:
    """bench.md: the comparison as tables."""
    f = lambda v, fmt="{:.2f}": "-" if v is None else fmt.format(v)  # noqa: E731
    L = [f"# The model's pick against cuBLAS and Triton (IEEE FP32) on {device}", "",
         "Per shape: the model's top 1 (`perfmodel choose`), measured in the same process as cuBLAS FP32 (no TF32) and an",
         "autotuned Triton matmul kept in IEEE FP32 (measure.peer); ratios of measured GFLOPS (> 1: the pick is faster).", "",
         "| shape | class | pick | pick GFLOPS | predicted | error % | cuBLAS | Triton | vs cuBLAS | vs Triton |",
         "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for d in b["shapes"]:
        L.append(f"| {d['shape']}{' (hold-out)' if d['holdout'] else ''} | {d['shape_class']} | {d.get('pick', '-')} | "
                 f"{f(d.get('pick_gflops'), '{:,.0f}')} | {f(d.get('predicted_gflops'), '{:,.0f}')} | {f(d.get('pick_error_pct'), '{:+.1f}')} | "
                 f"{f(d.get('cublas_gflops'), '{:,.0f}')} | {f(d.get('triton_gflops'), '{:,.0f}')} | {f(d.get('vs_cublas'))} | {f(d.get('vs_triton'))} |")
    L += ["", "| class | shapes | geomean vs cuBLAS | geomean vs Triton | pick MAPE % | picks within 8 % |", "|---|---:|---:|---:|---:|---:|"]
    for name, g in list(b["by_class"].items()) + [("overall", b["overall"])]:
        L.append(f"| {name} | {g['shapes']} | {f(g['geomean_vs_cublas'])} | {f(g['geomean_vs_triton'])} | {f(g['pick_mape_pct'], '{:.1f}')} | "
                 f"{g['pick_within_8pct']} |")
    return "\n".join(L) + "\n"
