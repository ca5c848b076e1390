"""Derived results: predictions for recorded measurements, errors, MAPE and Spearman. No GPU.

A recorded run (raw.json) is never modified; this recomputes everything from it, so a model or
device-file change is judged on the same measurements."""
from __future__ import annotations

import csv
import json
import tomllib
from pathlib import Path

import numpy as np

from .catalogue import KernelConfig
from .devices import DeviceSpec, load_device, shipped_devices
from .errors import UserError
from .measure.records import Run
from .measure.sass import sass_facts
from .model import predict


def load_run(run_dir: str | Path) -> Run:
    p = Path(run_dir) / "raw.json"
    if not p.is_file():
        raise UserError(f"{run_dir} holds no raw.json (not a perfmodel validate results folder)")
    from .measure import sass

    parent = Path(run_dir).resolve().parent
    if parent not in sass.ARCHIVE_DIRS:
        sass.ARCHIVE_DIRS.append(parent)  # loop-program archives recorded beside the runs
    return Run.model_validate_json(p.read_text())


def run_device(run: Run, recorded: bool = False) -> DeviceSpec:
    """The shipped device file named in the run (current figures), or the run's own copy."""
    name = run.environment.device_file
    if not recorded and name in shipped_devices():
        return load_device(name)
    return DeviceSpec.model_validate(tomllib.loads(run.device_toml))


def run_device_for(run_dir: str | Path, figures: str = "auto", calibration: str | None = None):
    """(device, figures) for deriving a run: the run's own calibration.toml (written by validate)
    when present and figures is 'auto' or 'measured'; an explicit calibration file wins."""
    from .devices import attach_calibration

    run = load_run(run_dir)
    dev = run_device(run)
    cal = calibration or (Path(run_dir) / "calibration.toml" if (Path(run_dir) / "calibration.toml").exists() else None)
    if figures == "datasheet":
        return dev, "datasheet"
    if cal is None:
        if figures == "measured":
            raise UserError(f"{run_dir} has no calibration.toml; pass --calibration FILE")
        return dev, "datasheet"
    return attach_calibration(dev, cal), "measured"


def _same_source_facts(run: Run, cfg) -> dict | None:
    """SASS facts of today's build of cfg, if the run was made with today's kernel sources (then they
    stand for the binary that ran); else None."""
    from .measure.validate import sources_sha256

    if run.environment.kernel_sources_sha256 != sources_sha256():
        return None
    return sass_facts(cfg, run.environment.compute_capability)


def _prefetch(run: Run, m, cfg) -> tuple:
    """Prefetch share for a double-buffered point: recorded from the binary that ran; else from the
    SASS of today's sources if the run used the same sources; else as the source intends."""
    if cfg.spec.buffers != 2:
        return None, "source"
    if m.prefetch_fraction is not None:
        return m.prefetch_fraction, "SASS of the binary that ran"
    facts = _same_source_facts(run, cfg)
    if facts is not None:
        return facts["prefetch_fraction"], f"SASS {facts['arch']} (same sources)"
    return None, "source intent (run predates SASS records)"


def _local_tile(run: Run, m, cfg) -> float | None:
    """Local bytes per thread per k-tile of a point with a local frame: recorded from the binary that
    ran; else from the SASS of today's sources if the run used the same sources; else None (estimate)."""
    if not m.spill_bytes:
        return None
    if m.local_tile_bytes is not None:
        return m.local_tile_bytes
    from .measure.sass import local_bytes_per_tile

    return local_bytes_per_tile(_same_source_facts(run, cfg), cfg)


def _program(run: Run, cfg) -> dict | None:
    """The k-tile loop program (measure.sass.loop_program) of the binary the run built for cfg: from an
    archive beside the runs (benchmarks/export_programs.py: any kernel sources, rebuilt at the commit
    that had them), else compiled here if the run used today's sources; else None (closed form)."""
    from .measure.sass import archive_key, archived_program

    if not cfg.spec.uses_smem:
        return None
    env = run.environment
    prog = archived_program(archive_key(env.kernel_sources_sha256, env.nvcc_flags, cfg))
    if prog is not None:
        return prog
    facts = _same_source_facts(run, cfg)
    return None if facts is None else facts.get("loop_program")


def rows(run: Run, device: DeviceSpec | None = None, figures: str = "datasheet") -> list[dict]:
    """One row per measurement: measured and predicted GFLOPS, error, bound, % of cuBLAS.

    The prediction uses the registers and local-memory bytes of the binary that ran and the SM
    clock NVML observed while it was timed."""
    dev = device or run_device(run)
    cublas = {(m.M, m.N, m.K): m.gflops_median for m in run.measurements if m.kernel == "cublas" and m.verified}
    out = []
    for m in run.measurements:
        r = dict(kernel=m.kernel, group=m.group, M=m.M, N=m.N, K=m.K, config=json.dumps(m.config, sort_keys=True),
                 verified=m.verified, verification=m.verification, registers=m.registers,
                 measured_gflops=m.gflops_median, cublas_gflops=cublas.get((m.M, m.N, m.K)))
        if m.timing:
            r.update(median_ms=m.timing.median_ms, q10_ms=m.timing.q10_ms, q90_ms=m.timing.q90_ms,
                     spread_pct=100 * (m.timing.q90_ms - m.timing.q10_ms) / m.timing.median_ms,
                     clock_MHz=m.timing.sm_clock_MHz_median)
        if m.gflops_median and r.get("cublas_gflops"):
            r["pct_of_cublas"] = 100 * m.gflops_median / r["cublas_gflops"]
        if m.kernel != "cublas":
            cfg = KernelConfig.make(m.kernel, **m.config)
            pf, pf_src = _prefetch(run, m, cfg)
            p = predict(dev, cfg, m.M, m.N, m.K, registers=m.registers,
                        registers_source="binary that ran" if m.registers else None,
                        clock_MHz=(m.timing.sm_clock_MHz_median if m.timing else None),
                        local_bytes=m.spill_bytes or 0, figures=figures, prefetch=pf, prefetch_source=pf_src,
                        local_tile_bytes=_local_tile(run, m, cfg), program=_program(run, cfg))
            r.update(_prediction=p, predicted_gflops=p.gflops, bound=p.bound, prefetch=p.prefetch, exposed_latency_cycles=p.exposed_latency_cycles,
                     cycles=p.cycles_per_tile, blocks_per_sm=p.occupancy.blocks_per_sm,
                     driver_blocks_per_sm=m.driver_blocks_per_sm, limiter=p.occupancy.limiter)
            if m.verified and m.gflops_median:
                r["error_pct"] = 100 * (p.gflops - m.gflops_median) / m.gflops_median
        out.append(r)
    return out


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
    sw = [r for r in pts if r["group"] == "sweep"]
    if sw:
        best_meas = max(sw, key=lambda r: r["measured_gflops"])
        top_pred = max(sw, key=lambda r: r["predicted_gflops"])
        s["sweep_top1_gap_pct"] = 100 * (1 - top_pred["measured_gflops"] / best_meas["measured_gflops"])
        s["sweep_best_measured"] = f"{best_meas['kernel']} {best_meas['config']}"
        s["sweep_model_top1"] = f"{top_pred['kernel']} {top_pred['config']}"
    return s


FIELDS = ["kernel", "group", "M", "N", "K", "config", "verified", "registers", "blocks_per_sm", "driver_blocks_per_sm",
          "limiter", "clock_MHz", "median_ms", "q10_ms", "q90_ms", "spread_pct", "measured_gflops", "predicted_gflops",
          "error_pct", "bound", "cublas_gflops", "pct_of_cublas", "verification"]


def write_derived(run_dir: str | Path, out_dir: str | Path, device: DeviceSpec | None = None,
                  figures: str = "datasheet") -> dict:
    """summary.csv + summary.json into out_dir (created; never overwrites)."""
    run = load_run(run_dir)
    table = rows(run, device, figures)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("summary.csv", "summary.json"):
        if (out / name).exists():
            raise UserError(f"{out / name} exists; results are never overwritten")
    with open(out / "summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in table:
            w.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()})
    s = summary(table)
    s["figures"] = figures
    s["device"] = (device or run_device(run)).name
    public = [{k: v for k, v in r.items() if not k.startswith("_")} for r in table]
    (out / "summary.json").write_text(json.dumps(dict(summary=s, rows=public), indent=1))
    return dict(summary=s, rows=table)
