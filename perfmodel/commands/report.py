"""`perfmodel roofline` and `perfmodel report` (plots: matplotlib is imported when they run)."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from .. import facts
from ..analysis import is_bench, run_figures, write_derived
from ..catalogue import KernelConfig, get_kernel, kernel_ids, runs_on
from ..errors import UserError
from ..model.figures import Figures
from ..model.predict import predict


def _out_file(path: str) -> Path:
    p = Path(path)
    if p.suffix.lower() not in (".png", ".svg"):
        raise UserError(f"output {path} must end in .png or .svg")
    if p.exists():
        raise UserError(f"{path} exists; perfmodel never overwrites results (choose another name)")
    if not p.parent.exists():
        raise UserError(f"folder {p.parent} does not exist")
    if not p.parent.is_dir():
        raise UserError(f"{p.parent} is a file, not a folder (the output must go into a folder)")
    return p


def roofline(a) -> int:
    from ..report import plots  # matplotlib

    out = _out_file(a.output)
    fig = Figures.load(a.device, a.calibration, force=a.force_calibration, figures=a.figures)
    dev = fig.device
    kernels = a.kernel or [k for k in kernel_ids() if runs_on(get_kernel(k), dev.compute_capability)]
    for k in kernels:
        get_kernel(k)
    out.open("xb").close()  # an unwritable place fails here, before any compile
    out.unlink()
    preds = []
    for k in kernels:
        cfg = KernelConfig.make(k)
        preds.append(predict(fig, cfg, a.size, build=facts.for_config(cfg, dev.compute_capability)))
    path, _ = plots.roofline(dev, preds, out, f"{dev.name} ({dev.marketing_name}) roofline, predicted, "
                                              f"M = N = K = {a.size} ({fig.kind} figures)")
    print(f"wrote {path}")
    return 0


def report(a) -> int:
    from ..report.reports import write_bench, write_report  # matplotlib

    fig = run_figures(a.results_dir, a.figures, a.calibration)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    out = Path(a.out) if a.out else Path(a.results_dir) / f"derived-{stamp}-{fig.kind}"
    if out.exists():
        raise UserError(f"{out} exists; derived results are never overwritten")
    derived = write_derived(a.results_dir, out, fig, holdout=a.holdout)
    path = write_report(a.results_dir, out, derived, fig.device, svg=a.svg)
    if is_bench(a.results_dir):
        write_bench(out, derived["rows"], fig.device.name)
    s = derived["summary"]
    print(f"wrote {path} (MAPE {s['mape_pct']:.1f} %, Spearman {s.get('spearman_all', float('nan')):.3f}, "
          f"{s['points']} points, {fig.kind} figures)")
    return 0
