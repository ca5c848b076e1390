"""The DRAM wait against the lines in flight (terms.loaded_dram_latency): the measured ratio to the pointer
chase, where it applies (A's share of the DRAM bytes, a device that measured it), and what it does to the
recorded H200 shape runs."""
import importlib

import numpy as np
import pytest

from perfmodel import KernelConfig, analysis, load_device
from perfmodel.devices import datasheet_only
from perfmodel.model import terms as T
from perfmodel.model.predict import predict

TABLE = {"1": 1.0, "4": 1.156, "16": 1.382, "64": 1.6, "128": 1.938}


def test_the_ratio_is_interpolated_in_log2_of_the_lines():
    got = T.loaded_dram_latency(600.0, np.array([0.5, 1, 2, 4, 8, 64, 128, 1024]), TABLE)
    assert np.allclose(got[[0, 1, 3, 5, 6, 7]], 600 * np.array([1.0, 1.0, 1.156, 1.6, 1.938, 1.938]))
    assert np.isclose(got[2], 600 * (1.0 + 1.156) / 2)  # halfway between 1 and 4 lines in log2
    assert np.isclose(got[4], 600 * (1.156 + (1.382 - 1.156) / 2))
    assert np.allclose(T.loaded_dram_latency(600.0, np.array([1, 64]), None), 600.0)


def test_only_the_h200_has_the_table_and_datasheet_figures_drop_it():
    h200 = load_device("h200")
    assert h200.latency.dram_latency_ratio_by_lines_in_flight["64"] == pytest.approx(1.6)
    assert "load_inflight.py --dram-ratio" in h200.source_of("latency.dram_latency_ratio_by_lines_in_flight")
    assert datasheet_only(h200).latency.dram_latency_ratio_by_lines_in_flight is None
    assert load_device("h100-sxm").latency.dram_latency_ratio_by_lines_in_flight is None


@pytest.mark.parametrize("table, message", [({"4": 1.2}, 'needs the key "1"'), ({"1": 1.0, "0": 1.1}, "not a count of lines")])
def test_a_bad_table_is_refused(table, message):
    h200 = load_device("h200")
    data = h200.latency.model_dump()
    data["dram_latency_ratio_by_lines_in_flight"] = table
    with pytest.raises(ValueError, match=message):
        type(h200.latency).model_validate(data)


def test_it_slows_a_walk_of_a_and_leaves_a_stream_of_b():
    """The 16-column product streams A (64 MB in 256-byte row segments) from DRAM: slower with the table.
    The one-row product streams B: A's share of the DRAM bytes is 16 KB of 64 MB, it moves by under 0.1 %."""
    h200 = load_device("h200")
    bare = h200.model_copy(update=dict(latency=h200.latency.model_copy(update=dict(dram_latency_ratio_by_lines_in_flight=None))))
    cfg = KernelConfig.make("tiled_1d", bm=16, bn=16, bk=64, tm=4)
    slow, fast = (predict(d, cfg, 4096, 16, 4096, registers=128) for d in (h200, bare))
    assert slow.time_s > 1.1 * fast.time_s
    slow, fast = (predict(d, cfg, 1, 4096, 4096, registers=128) for d in (h200, bare))
    assert fast.time_s <= slow.time_s < 1.001 * fast.time_s


def _errors(run_dir: str, loaded: bool) -> np.ndarray:
    run = analysis.load_run(run_dir)
    pts = [m for m in run.measurements if not analysis.is_holdout(m.shape)]
    run = run.model_copy(update=dict(measurements=pts))
    facts, fig = analysis.run_facts(run, run_dir), analysis.run_figures(run_dir, calibration=f"{run_dir}/calibration.toml")
    Tm = importlib.import_module("perfmodel.model.terms")
    with pytest.MonkeyPatch.context() as mp:
        if not loaded:
            mp.setattr(Tm, "loaded_dram_latency", lambda dram_lat, lines, table: np.asarray(dram_lat, float))
        return np.array([r["error_pct"] for r in analysis.rows(run, fig, facts) if r.get("error_pct") is not None])


def test_the_skinny_n_run_of_the_h200(monkeypatch):
    """`results/20261129-100908-h200-shapes-skinny-n-seed12` (48 points, its own calibration): optimistic by
    5.4 % without the loaded DRAM latency (10.5 % MAPE) when the term came; with it the MAPE had to fall by a
    point and the bias come within 3 % of zero. Without the flush's write-back (terms.FLUSH_WRITEBACK) it still
    does: 10.0 -> 8.3 % (+5.8 -> -2.1 %). The write-back takes part of the same gap (the run's DRAM-bound points),
    so with it the loaded latency moves the run 9.05 -> 8.13 % (+4.9 -> -2.3 %): less than a point, not nothing.
    Since the programs of the H200 shape runs got their scoreboard fields (results/scoreboard-codes-sm_90-20261207.json.xz:
    the replay waits for the global loads on the scoreboards the math waits on) those waits take most of the gap: the
    run is +3.85 % without the term (8.15 % MAPE) and -3.77 % with it (8.07 %); without the write-back +4.81 % (9.11 %)
    and -3.60 % (8.24 %). Pinned so, with what it still shows: the term moves the run from optimistic to pessimistic.
    Since a ring of cp.async copies waits for its tile's landing from DRAM (terms.ring_landing_extra; the run's
    async_pipeline points): +3.23 % (8.31 %) without the term and -4.24 % (8.38 %) with it; without the write-back
    +4.20 % (9.27 %) and -4.08 % (8.55 %)."""
    from perfmodel.model import terms

    run = "results/20261129-100908-h200-shapes-skinny-n-seed12"
    with_term, without = _errors(run, True), _errors(run, False)
    assert len(with_term) == len(without) > 40
    pins = lambda e: (round(float(e.mean()), 2), round(float(np.abs(e).mean()), 2))  # noqa: E731  (bias, MAPE)
    assert np.allclose([pins(without), pins(with_term)], [(3.23, 8.31), (-4.24, 8.38)], atol=0.011)
    monkeypatch.setattr(terms, "FLUSH_WRITEBACK", False)
    with_term, without = _errors(run, True), _errors(run, False)
    assert np.allclose([pins(without), pins(with_term)], [(4.20, 9.27), (-4.08, 8.55)], atol=0.011)


def test_predict_says_what_the_dram_latency_is_loaded_by():
    from perfmodel.explain import render

    cfg = KernelConfig.make("tiled_1d", bm=16, bn=16, bk=64, tm=4)
    p = predict(load_device("h200"), cfg, 4096, 16, 4096, registers=128)
    assert p.dram_lines_in_flight == pytest.approx(64.5)  # two blocks a SM, each 16 rows of 256 bytes of A and B's 4 KB shared
    assert 657 * 1.59 < p.dram_latency_cycles < 657 * 1.61  # 1.60 at 64 lines, for A's 99 % of the DRAM bytes
    assert "the pointer chase's 657, A's share of the DRAM reads waiting as with 64 lines in flight a SM" in render(p)
    q = predict(load_device("h100-sxm"), cfg, 4096, 16, 4096, registers=128)
    assert q.dram_latency_cycles == pytest.approx(q.littles_law[-1].latency_cycles) and "waiting as with" not in render(q)
