"""Replaying part of a recorded shape run (shared by the tests that score a term on it)."""
import contextlib
import importlib
from unittest import mock

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
