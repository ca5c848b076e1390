"""A lone block's scalar tile loads queue for the L2's lines (terms.load_queue_cycles): the measured pass table,
where the term applies (one single-buffered block an SM, 4-byte tile loads, 4-32 warps), what it leaves alone,
and what it does to a recorded validate run of the H100 (the table was measured on the H200: the same SM and L2)."""
import importlib

import numpy as np
import pytest

from perfmodel import KernelConfig, analysis, load_device
from perfmodel.devices import datasheet_only
from perfmodel.model import terms as T
from perfmodel.model.predict import predict

TABLE = {"4": {"1": 335.6, "2": 341.9, "4": 348.6, "8": 384.0, "16": 456.0, "32": 817.5},
         "8": {"1": 336.3, "2": 343.0, "4": 352.0, "8": 393.3, "16": 500.1, "32": 945.4},
         "16": {"1": 339.3, "2": 346.8, "4": 362.3, "8": 463.7, "16": 838.4, "32": 1549.7},
         "32": {"1": 343.4, "2": 357.9, "4": 450.7, "8": 842.5, "16": 1329.8, "32": 2857.9}}


def test_the_pass_beyond_one_load_and_the_burst():
    # 8 warps x 32 loads: 945.4 - 336.3 - a 273-cycle burst; 16 warps x 16 loads: 838.4 - 339.3 - 100
    got = T.load_queue_cycles(np.array([8, 16]), np.array([32, 16]), TABLE, np.array([273.0, 100.0]))
    assert np.allclose(got, [945.4 - 336.3 - 273.0, 838.4 - 339.3 - 100.0])
    # halfway in log2 between 8 and 16 warps and between 8 and 16 loads
    mid = T.load_queue_cycles(np.array([8 * 2 ** 0.5]), np.array([8 * 2 ** 0.5]), TABLE, np.array([0.0]))[0]
    assert mid == pytest.approx(((393.3 + 500.1) / 2 + (463.7 + 838.4) / 2) / 2 - (336.3 + 339.3) / 2)
    # beyond 32 loads the pass grows at the rate it reached; a burst longer than the queue leaves nothing
    assert T.load_queue_cycles(np.array([8]), np.array([64]), TABLE, np.array([0.0]))[0] == pytest.approx(2 * 945.4 - 336.3)
    assert T.load_queue_cycles(np.array([8]), np.array([32]), TABLE, np.array([700.0]))[0] == 0.0


def test_nothing_outside_what_was_measured():
    # fewer warps than the table's fewest, one load a warp, or no table
    got = T.load_queue_cycles(np.array([2, 8, 8]), np.array([32, 1, 0]), TABLE, np.zeros(3))
    assert np.all(got == 0.0)
    assert np.all(T.load_queue_cycles(np.array([8]), np.array([32]), None, np.zeros(1)) == 0.0)


def test_a_hopper_generation_figure_that_datasheet_figures_drop():
    for name in ("h100-sxm", "h200"):
        dev = load_device(name)
        assert dev.memory.l2_load_pass_cycles_by_warps_by_loads == TABLE
        assert "load_inflight.py" in dev.source_of("memory.l2_load_pass_cycles_by_warps_by_loads")
        assert datasheet_only(dev).memory.l2_load_pass_cycles_by_warps_by_loads is None
    assert load_device("a100").memory.l2_load_pass_cycles_by_warps_by_loads is None


@pytest.mark.parametrize("table, message", [({"8": {"2": 340.0}}, "1 among them"), ({"0": {"1": 336.0}}, "not a positive integer"),
                                            ({"4": {"1": 336.0, "2": 340.0}, "8": {"1": 336.0}}, "the same counts")])
def test_a_bad_table_is_refused(table, message):
    h200 = load_device("h200")
    data = h200.memory.model_dump()
    data["l2_load_pass_cycles_by_warps_by_loads"] = table
    with pytest.raises(ValueError, match=message):
        type(h200.memory).model_validate(data)


CAL = "results/20261129-073253-h200-shapes-skinny-m-seed11/calibration.toml"


def _pair(cfg, M, N, K, registers):
    """The prediction with the H200's table, and without it (the same calibrated figures)."""
    from perfmodel.devices import attach_calibration
    from perfmodel.model.figures import Figures
    h200 = attach_calibration(load_device("h200"), CAL)
    bare = h200.model_copy(update=dict(memory=h200.memory.model_copy(update=dict(l2_load_pass_cycles_by_warps_by_loads=None))))
    return [predict(Figures(d, calibrated=True), cfg, M, N, K, registers=registers) for d in (h200, bare)]


def test_a_lone_block_with_scalar_loads_waits_and_the_text_says_so():
    """tiled_2d 64 x 64 x 64, 4 x 4 (8 warps, 32 loads a thread) on the 64-row product: 128 blocks, one an SM.
    B streams (A's DRAM share is tiny), so nearly the whole table's queue applies: 945 - 336 - 273 cycles."""
    from perfmodel.explain import render
    cfg = KernelConfig.make("tiled_2d", bm=64, bn=64, bk=64, tm=4, tn=4)
    slow, fast = _pair(cfg, 64, 8192, 4096, 185)
    assert 320 < slow.load_queue_cycles < 340 and fast.load_queue_cycles == 0.0
    assert slow.time_s > 1.05 * fast.time_s
    assert "scalar loads queue for the L2's lines" in render(slow)


@pytest.mark.parametrize("kernel, params, M, N, K, registers", [
    ("tiled_2d_float4", dict(bm=64, bn=64, bk=64, tm=4, tn=4), 64, 8192, 4096, 128),  # float4 loads
    ("tiled_2d", dict(bm=64, bn=64, bk=64, tm=4, tn=4), 4096, 4096, 4096, 96),  # two blocks an SM
    ("tiled_2d", dict(bm=32, bn=32, bk=32, tm=4, tn=4), 64, 8192, 4096, 64),  # 2 warps: below the table
    ("double_buffer", dict(bm=64, bn=64, bk=16, tm=8, tn=8, load_width=1), 64, 8192, 4096, 128),  # prefetching
])
def test_where_it_does_not_apply(kernel, params, M, N, K, registers):
    slow, fast = _pair(KernelConfig.make(kernel, **params), M, N, K, registers)
    assert slow.load_queue_cycles == 0.0
    assert slow.time_s == pytest.approx(fast.time_s, rel=1e-9)


def _errors(run_dir: str, queue: bool, calibration: str) -> np.ndarray:
    run = analysis.load_run(run_dir)
    facts, fig = analysis.run_facts(run, run_dir), analysis.run_figures(run_dir, calibration=calibration)
    Tm = importlib.import_module("perfmodel.model.terms")
    with pytest.MonkeyPatch.context() as mp:
        if not queue:
            mp.setattr(Tm, "load_queue_cycles", lambda w, n, table, burst: np.zeros(np.shape(n)))
        rows = analysis.rows(run, fig, facts)
    return np.array([[r["error_pct"], r["kernel"] in ("tiled_1d", "tiled_2d")] for r in rows if r.get("error_pct") is not None])


def test_the_h100_validate_run_of_seed_3():
    """`results/20261122-112024-h100-sxm-seed3` with the H100's reference calibration: its tiled_1d and tiled_2d
    points whose blocks run alone on their SMs move; over all its points the error must fall and over the
    two kernels by half a point or more, their bias towards zero."""
    cal = "results/reference-calibration-h100-sxm.toml"
    with_term = _errors("results/20261122-112024-h100-sxm-seed3", True, cal)
    without = _errors("results/20261122-112024-h100-sxm-seed3", False, cal)
    assert len(with_term) == len(without) > 100
    assert np.abs(with_term[:, 0]).mean() < np.abs(without[:, 0]).mean()
    mine = with_term[:, 1] > 0
    assert np.abs(with_term[mine, 0]).mean() < np.abs(without[mine, 0]).mean() - 0.5
    assert abs(with_term[mine, 0].mean()) < abs(without[mine, 0].mean())


def test_the_h200_run_measured_after_the_predictions():
    """`results/20261202-003412-h200-load-queue` (14 points, the calibration of the H200 bench run the predictions were
    written with): the five configurations with a queue at M = N = 4096 were 7-15 % optimistic without it; with it the
    run's error must fall by two points or more and every point the term moves come closer to its measurement."""
    cal = "results/20261130-194847-h200-bench-all/calibration.toml"
    with_term = _errors("results/20261202-003412-h200-load-queue", True, cal)
    without = _errors("results/20261202-003412-h200-load-queue", False, cal)
    assert len(with_term) == len(without) == 14
    assert np.abs(with_term[:, 0]).mean() < np.abs(without[:, 0]).mean() - 2.0
    moved = np.abs(with_term[:, 0] - without[:, 0]) > 0.1
    assert moved.sum() >= 5
    assert np.all(np.abs(with_term[moved, 0]) < np.abs(without[moved, 0]))
