"""Replaying part of a recorded shape run (shared by the tests that score a term on it)."""
import contextlib
import importlib
import json
import math
from unittest import mock

import numpy as np

from perfmodel import analysis


def shape_run_errors(run_dir: str, classes: tuple, keep) -> dict:
    """{(shape, kernel, config): error %} over the run's points of these classes (hold-out left out)
    whose row and prediction `keep(row, prediction)` accepts, with today's model."""
    run = analysis.load_run(run_dir)
    ms = [m for m in run.measurements if analysis.shape_class(m.shape) in classes and not analysis.is_holdout(m.shape)]
    run = run.model_copy(update=dict(measurements=ms))
    facts, fig = analysis.run_facts(run, run_dir), analysis.run_figures(run_dir)
    return {(r["shape"], r["kernel"], r["config"]): r["error_pct"] for r in analysis.rows(run, fig, facts)
            if r.get("error_pct") is not None and keep(r, r["_prediction"])}


def replayed_rows(run_dir: str, calibration: str, lone_warps_window: bool = False) -> list:
    """The rows (analysis.rows) with an error of a recorded run replayed with this calibration file;
    lone_warps_window: with predict.window_applies as it was before, the window for lone warps only."""
    P = importlib.import_module("perfmodel.model.predict")
    old_rule = (lambda b, warps, schedulers, full_waves: P.lone_warps(b, warps, schedulers))
    patch = mock.patch.object(P, "window_applies", old_rule) if lone_warps_window else contextlib.nullcontext()
    with patch:
        run = analysis.load_run(run_dir)
        fig = analysis.run_figures(run_dir, calibration=calibration)
        return [r for r in analysis.rows(run, fig, analysis.run_facts(run, run_dir)) if r.get("error_pct") is not None]


def ktile_fits(run_dir: str, calibration: str, key) -> dict:
    """{key(row, config): ((measured fixed us, ns a k-tile), (predicted ...), [errors %])} over a recorded run's rows
    replayed with this calibration, grouped by key (None leaves a row out): time = fixed + per k-tile x k-tiles,
    fitted to the measured and to the predicted times of each group."""
    pts = {}
    for r in replayed_rows(run_dir, calibration):
        c = json.loads(r["config"])
        k = key(r, c)
        if k is None:
            continue
        flop = 2.0 * r["M"] * r["N"] * r["K"]
        pts.setdefault(k, []).append((math.ceil(r["K"] / c["bk"]), flop / r["measured_gflops"] * 1e-3,
                                      flop / r["predicted_gflops"] * 1e-3, r["error_pct"]))
    out = {}
    for k, p in pts.items():
        t = np.array([x[0] for x in p], float)
        fit = [tuple(np.polyfit(t, np.array([x[i] for x in p]), 1)[::-1] * (1.0, 1e3)) for i in (1, 2)]
        out[k] = (fit[0], fit[1], [x[3] for x in p])
    return out
