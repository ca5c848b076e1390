"""A shape run ranks its shapes in parallel processes on a many-core host (validate.plan_jobs): the plan is the
one ranked shape after shape. Its own module: test_shape_runs replaces SHAPE_SASS for its whole module, which
the planning processes would not see."""
from pathlib import Path

from perfmodel.measure import validate
from perfmodel.measure.records import PlanDraft
from perfmodel.model.figures import Figures
from perfmodel.shapes import select

from test_shape_runs import ENV


def test_shapes_ranked_in_parallel_processes_give_the_serial_plan(tmp_path, monkeypatch):
    """plan_jobs shapes ranked at once in spawned processes (a many-core host): the same plan.json, in corpus
    order, as ranking them one after the other here; --sample sizes the random part of every shape."""
    calibration = Path(__file__).parents[1] / "results" / "reference-calibration-h100-sxm.toml"
    fig = Figures.load("h100-sxm", calibration)
    plans = {}
    for jobs in ("1", "2"):
        monkeypatch.setenv("PERFMODEL_PLAN_JOBS", jobs)
        assert validate.plan_jobs(3) == int(jobs) and validate.plan_jobs(1) == 1
        out = tmp_path / f"jobs{jobs}"
        out.mkdir()
        draft = PlanDraft(shapes="skinny_n", seed=2, environment=ENV, device_toml="", points=[], sample=4, planned=[])
        plans[jobs] = validate._plan_shapes(out, fig, draft)
        assert (out / "plan.json").is_file() and not (out / validate.DRAFT).exists()
    assert plans["1"] == plans["2"]
    shapes = select("skinny_n")
    assert list(dict.fromkeys(p.shape for p in plans["1"].points)) == [s.name for s in shapes]
    assert all(sum(p.shape == s.name and p.group == "random" for p in plans["1"].points) == 4 for s in shapes)
    monkeypatch.setenv("PERFMODEL_PLAN_JOBS", "0")  # not a count: one per PLAN_CORES cores
    assert validate.plan_jobs(100) == max(1, (validate.os.cpu_count() or 1) // validate.PLAN_CORES)
