"""Replaying part of a recorded shape run (shared by the tests that score a term on it)."""
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
