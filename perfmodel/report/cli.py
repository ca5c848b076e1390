"""`perfmodel roofline` and `perfmodel report`."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from ..errors import UserError


def _out_file(path: str) -> Path:
    p = Path(path)
    if p.suffix.lower() not in (".png", ".svg"):
        raise UserError(f"output {path} must end in .png or .svg")
    if p.exists():
        raise UserError(f"{path} exists; perfmodel never overwrites results (choose another name)")
    if not p.parent.exists():
        raise UserError(f"folder {p.parent} does not exist")
    return p


def cmd_roofline(a) -> int:
    from ..catalogue import KernelConfig, get_kernel, kernel_ids
    from ..devices import attach_calibration, load_device
    from ..model import predict
    from . import plots

    out = _out_file(a.output)
    dev = load_device(a.device)
    figures = "datasheet"
    if getattr(a, "calibration", None):
        dev, figures = attach_calibration(dev, a.calibration), "measured"
    kernels = a.kernel or kernel_ids()
    for k in kernels:
        get_kernel(k)
    preds = [predict(dev, KernelConfig.make(k), a.size, figures=figures) for k in kernels]
    path, _ = plots.roofline(dev, preds, out, f"{dev.name} ({dev.marketing_name}) roofline, predicted, "
                                              f"M = N = K = {a.size} ({figures} figures)")
    print(f"wrote {path}")
    return 0


def cmd_report(a) -> int:
    from ..analysis import run_device_for, write_derived
    from .reports import write_report

    dev, figures = run_device_for(a.results_dir, a.figures, a.calibration)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    out = Path(a.out) if a.out else Path(a.results_dir) / f"derived-{stamp}-{figures}"
    if out.exists():
        raise UserError(f"{out} exists; derived results are never overwritten")
    derived = write_derived(a.results_dir, out, dev, figures)
    path = write_report(a.results_dir, out, derived, dev, svg=a.svg)
    s = derived["summary"]
    print(f"wrote {path} (MAPE {s['mape_pct']:.1f} %, Spearman {s.get('spearman_all', float('nan')):.3f}, "
          f"{s['points']} points, {figures} figures)")
    return 0
