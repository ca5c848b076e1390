"""Measuring with a worker per GPU (measure.fleet) on the CPU: simulated workers (measure.worker.SimulatedWorker)
as processes and as Ray actors; a worker killed mid-point, a slow one, a run interrupted and resumed. What
is checked: no finished point lost, none measured twice, the results the same as one worker's."""
import collections
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from perfmodel.cli import main
from perfmodel.errors import UserError
from perfmodel.measure import fleet, validate
from perfmodel.measure.records import GpuIdentity, Measurement, Plan, PlannedPoint
from perfmodel.measure.worker import SimulatedWorker
from perfmodel.model.figures import Figures
from perfmodel.shapes import select

from test_shape_runs import ENV

ROOT = Path(__file__).resolve().parent.parent
DELAY = 0.03  # seconds a simulated point takes


@pytest.fixture(scope="module")
def plan():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(validate, "SHAPE_SASS", 0)  # the closed form's ranking: no compiles here
        shapes = select("small")[:2] + select("skinny_m")[:1]
        pts = validate.shape_plan(Figures.load("h100-sxm"), shapes, seed=1)
    return Plan(shapes="test", seed=1, environment=ENV, device_toml="", points=pts)


@pytest.fixture(scope="module")
def cost(plan):
    return fleet.expected_seconds(Figures.load("h100-sxm"), plan.points)


def _specs(n, done_log, die_after=None, slow=None):
    """n simulated workers: worker 1 dies after `die_after` points, worker 0 is `slow` times slower."""
    return [(SimulatedWorker, (i, DELAY, (slow if (slow and i == 0) else 1.0), die_after if i == 1 else None, str(done_log)), {})
            for i in range(n)]


def _run(pool, plan, log, cost):
    try:
        ws = fleet.start_workers(pool)
        return fleet.run_points(pool, ws, validate.pending(plan, log), log, cost, fleet.compile_on(pool, ws, plan.points, log=_quiet),
                                echo=_quiet)
    finally:
        pool.close()


def _quiet(*a, **k):
    pass


def _results(log):
    """{point key: the measurement without the GPU that measured it}; each key exactly once."""
    ms = validate._recorded(log)
    keys = [validate.measurement_key(m) for m in ms]
    assert len(keys) == len(set(keys)), "a point was recorded twice"
    return {validate.measurement_key(m): m.model_copy(update={"gpu": None}) for m in ms}


def _measured_counts(done_log):
    return collections.Counter(Path(done_log).read_text().splitlines())


@pytest.fixture(scope="module")
def one_worker(plan, cost, tmp_path_factory):
    d = tmp_path_factory.mktemp("one")
    out = _run(fleet.ProcessPool(_specs(1, d / "done")), plan, d / "points.jsonl", cost)
    assert out.measured == len(plan.points) and out.failed == 0
    return _results(d / "points.jsonl")


def test_scheduler_keeps_a_shape_and_starts_with_the_longest(plan, cost):
    s = fleet.Scheduler(plan.points, cost)
    per_shape = collections.defaultdict(float)
    for p in plan.points:
        per_shape[p.shape] += cost[p.key()]
    first = s.take(None, set())
    assert first.shape == max(per_shape, key=per_shape.get)  # longest shape first
    assert cost[first.key()] == max(cost[p.key()] for p in plan.points if p.shape == first.shape)
    assert s.take(first.shape, set()).shape == first.shape  # a worker keeps its shape while it lasts
    other = s.take(None, {first.shape})
    assert other.shape != first.shape  # a second worker starts another shape
    s.put_back(other)
    assert s.take(None, {first.shape}) == other
    n = len(s)
    while s.take(None, set()):
        n -= 1
    assert n == 0 and s.seconds_left() == 0


def test_expected_seconds_follow_the_model(plan, cost):
    # every point costs at least the timing budgets; a slow naive kernel on a big shape costs more
    assert all(c >= fleet.FIXED_S + 0.125 - 1e-9 for c in cost.values())
    big = PlannedPoint(group="ladder", kernel="naive", config={"bm": 32, "bn": 32}, shape="big", M=8192, N=8192, K=8192)
    assert fleet.expected_seconds(Figures.load("h100-sxm"), [big])[big.key()] > 5


def test_two_workers_one_killed_then_the_run_interrupted_and_resumed(plan, cost, one_worker, tmp_path):
    """Worker 1 dies in the middle of its 6th point; the coordinator is interrupted (SIGINT) after 20
    points; the run is resumed with two fresh workers. Every point recorded once, none measured twice
    (the point the dead worker held was never finished), results as one worker's."""
    log, done = tmp_path / "points.jsonl", tmp_path / "done"
    (tmp_path / "plan.json").write_text(plan.model_dump_json())
    (tmp_path / "cost.json").write_text(json.dumps([[list(map(str, k)), v] for k, v in cost.items()]))
    script = tmp_path / "drive.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from pathlib import Path
        from perfmodel.measure import fleet, validate
        from perfmodel.measure.records import Plan
        from test_fleet import _specs
        import signal
        # Ctrl-C as in a terminal, whatever this process inherited: a pytest started in the background by a
        # non-interactive shell ignores SIGINT, and so would this child without this line
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if __name__ == "__main__":
            d = Path({str(tmp_path)!r})
            plan = Plan.model_validate_json((d / "plan.json").read_text())
            cost = {{p.key(): 0.5 for p in plan.points}}
            pool = fleet.ProcessPool(_specs(2, d / "done", die_after=5))
            try:
                ws = fleet.start_workers(pool)
                fleet.run_points(pool, ws, plan.points, d / "points.jsonl", cost, fleet.compile_on(pool, ws, plan.points))
            except KeyboardInterrupt:
                print("interrupted", flush=True)
            finally:
                pool.close()
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    t0 = time.time()
    while (not log.exists() or len(log.read_text().splitlines()) < 20) and time.time() - t0 < 60 and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert "interrupted" in stdout, stderr
    assert "lost (worker process ended (exit code 3))" in stderr  # the coordinator said which worker it lost
    first = validate._recorded(log)
    assert 20 <= len(first) < len(plan.points)
    assert len({m.gpu.index for m in first}) == 2  # both workers measured before one died

    out = _run(fleet.ProcessPool(_specs(2, done)), plan, log, cost)
    assert out.measured == len(plan.points) - len(first) and not out.lost_workers
    assert _results(log) == one_worker
    assert set(_measured_counts(done).values()) == {1}  # no point measured twice
    assert sum(_measured_counts(done).values()) == len(plan.points)


def test_ctrl_c_between_an_answer_and_its_line_loses_nothing(plan, cost, tmp_path):
    """Ctrl-C arriving while the coordinator writes a finished point (here: from the progress line that
    follows it) stops the run only after the points in flight are recorded: every point a worker measured
    is in the log, and a resumed run measures none of them again."""
    log, done = tmp_path / "points.jsonl", tmp_path / "done"
    lines = []

    def echo(*a, **k):
        lines.append(a[0] if a else "")
        if sum("GFLOPS" in x for x in lines) == 5 and not any("interrupted" in x for x in lines):
            os.kill(os.getpid(), signal.SIGINT)  # delivered before echo returns, in the middle of the loop

    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    pool = fleet.ProcessPool(_specs(2, done))
    try:
        ws = fleet.start_workers(pool)
        with pytest.raises(KeyboardInterrupt):
            fleet.run_points(pool, ws, plan.points, log, cost, fleet.compile_on(pool, ws, plan.points, log=_quiet), echo=echo)
    finally:
        pool.close()
        signal.signal(signal.SIGINT, before)
    assert any("interrupted: recording" in x for x in lines)
    recorded = {repr(validate.measurement_key(m)) for m in validate._recorded(log)}
    assert 5 <= len(recorded) < len(plan.points)
    assert set(_measured_counts(done)) == recorded  # nothing measured and left out of the log
    out = _run(fleet.ProcessPool(_specs(2, done)), plan, log, cost)
    assert out.measured == len(plan.points) - len(recorded)
    assert set(_measured_counts(done).values()) == {1}


def test_a_slow_worker_takes_fewer_points(plan, cost, one_worker, tmp_path):
    log = tmp_path / "points.jsonl"
    out = _run(fleet.ProcessPool(_specs(2, tmp_path / "done", slow=4.0)), plan, log, cost)
    per_gpu = collections.Counter(m.gpu.index for m in validate._recorded(log))
    assert out.measured == len(plan.points)
    assert per_gpu[0] < per_gpu[1]  # points go to whichever worker is free
    assert _results(log) == one_worker


def test_a_point_that_loses_two_workers_is_recorded_failed(plan, cost, tmp_path):
    pts = plan.points[:6]
    sub = plan.model_copy(update={"points": pts})
    log = tmp_path / "points.jsonl"
    specs = [(SimulatedWorker, (i, DELAY, 1.0, 0 if i < 2 else None, None), {}) for i in range(3)]  # two die at once
    out = _run(fleet.ProcessPool(specs), sub, log, {p.key(): 1.0 for p in pts})
    ms = validate._recorded(log)
    assert len(ms) == len(pts) and len(out.lost_workers) == 2
    bad = [m for m in ms if not m.verified]
    # both dead workers held a point; one was re-queued to the other and died again, or each to the survivor
    assert all("lost" in m.error and "workers while measuring it" in m.error for m in bad)
    assert out.failed == len(bad) <= 1


def test_ray_two_workers_one_killed(plan, cost, one_worker, tmp_path):
    """The same on Ray: a local Ray, two actors without GPUs, one of them (the faster) dying in the middle
    of a point, the other three times slower."""
    pytest.importorskip("ray")
    log, done = tmp_path / "points.jsonl", tmp_path / "done"
    pool = fleet.RayPool([(f, a) for f, a, _ in _specs(2, done, die_after=5, slow=3.0)], gpus_each=0, address="auto")
    try:
        ws = fleet.start_workers(pool)
        out = fleet.run_points(pool, ws, plan.points, log, cost, fleet.compile_on(pool, ws, plan.points, log=_quiet), echo=_quiet)
    finally:
        pool.close()
        pool.ray.shutdown()
    assert out.measured == len(plan.points) and len(out.lost_workers) == 1 and "Ray actor died" in out.lost_workers[0]
    assert _results(log) == one_worker
    assert set(_measured_counts(done).values()) == {1}


def test_workers_of_two_models_are_refused_unless_asked():
    def h(slot, name):
        return fleet.Handle(slot=slot, gpu=GpuIdentity(index=slot, name=name, uuid=f"u{slot}", host="h"), compute_capability="9.0")

    two = [h(0, "NVIDIA H100 80GB HBM3"), h(1, "NVIDIA H200")]
    with pytest.raises(UserError, match="2 models .*--mixed-gpus"):
        fleet.check_models(two, mixed=False)
    fleet.check_models(two, mixed=True)
    with pytest.raises(UserError, match="planned on NVIDIA H200"):
        fleet.check_models(two[:1], mixed=False, planned_for="NVIDIA H200")


@pytest.mark.parametrize("text,count,msg", [("0,0", 2, "distinct"), ("2", 2, "0 to 1"), ("a", 2, "ordinals")])
def test_bad_gpu_lists(text, count, msg):
    with pytest.raises(UserError, match=msg):
        fleet.parse_gpus(text, count)
    assert fleet.parse_gpus("all", 3) == [0, 1, 2] and fleet.parse_gpus("1,0", 2) == [1, 0]


@pytest.mark.parametrize("argv,msg", [
    (["validate", "--ncu", "--gpus", "0"], "--ncu profiles on this process's GPU"),
    (["sweep", "--device", "h100-sxm", "--gpus", "all"], "give --measure K or --measure-overlap"),
    (["bench", "--gpus", "0;1"], "expected GPU ordinals"),
    (["bench", "--mixed-gpus"], "no effect without --gpus or --ray"),
    (["calibrate", "--gpus", "0", "--ray", "auto"], "not allowed with argument"),
])
def test_fleet_options_bad_input(argv, msg, capsys):
    with pytest.raises(SystemExit) as e:
        sys.exit(main(argv))
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err and len(err.strip().splitlines()) <= 2


def test_records_name_the_gpu():
    m = json.loads(SimulatedWorker(3).measure(PlannedPoint(group="baseline", kernel="cublas", config={}, shape="s",
                                                             M=8, N=8, K=8).model_dump_json(), None))
    g = Measurement.model_validate(m).gpu
    assert g.index == 3 and g.uuid.startswith("SIM-") and g.host


def test_points_of_several_gpus_are_reported_apart():
    from perfmodel.analysis import summary

    rows = [dict(kernel="cublas", config="{}", group="random", verified=True, gpu=g, error_pct=e, predicted_gflops=p,
                 measured_gflops=100.0 + e * e) for g, e, p in (("gpu0@a H100", 10.0, 110.0), ("gpu0@a H100", -4.0, 96.0),
                                                        ("gpu1@a H200", 2.0, 102.0), ("gpu1@a H200", 6.0, 106.0))]
    s = summary(rows)
    assert s["by_gpu"]["gpu0@a H100"] == dict(points=2, scored=2, mape_pct=7.0, bias_pct=3.0)
    assert s["by_gpu"]["gpu1@a H200"]["mape_pct"] == 4.0
    assert "by_gpu" not in summary([{**r, "gpu": "gpu0@a H100"} for r in rows])  # one GPU: nothing apart
