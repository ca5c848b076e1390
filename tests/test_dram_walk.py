"""DRAM reads of A's k-tile walk: short row segments get a measured share of the stream rate
(memory.dram_row_segment_efficiency, terms.dram_walk_rate); what that does to the recorded points."""
import numpy as np
import pytest

from perfmodel import KernelConfig, analysis, load_device
from perfmodel.devices import datasheet_only
from perfmodel.model import terms as T
from perfmodel.model.figures import Figures
from perfmodel.model.predict import predict

SKINNY_N = "results/20261124-095721-h100-sxm-shapes-skinny-n"
CAL = "results/reference-calibration-h100-sxm.toml"
H100 = {"32": 0.629, "64": 0.667, "128": 0.928, "256": 0.982, "512": 0.980}


def _without(dev):
    return dev.model_copy(update=dict(memory=dev.memory.model_copy(update=dict(dram_row_segment_efficiency=None))))


def test_the_walk_rate_interpolates_the_measured_shares_and_mixes_by_a_share():
    assert T.dram_walk_rate(1.0, 32.0, None) == pytest.approx(1.0)
    assert T.dram_walk_rate(1.0, 32.0, H100) == pytest.approx(0.629)
    assert T.dram_walk_rate(1.0, 16.0, H100) == pytest.approx(0.629)  # held at the narrowest measured segment
    assert T.dram_walk_rate(1.0, 2048.0, H100) == pytest.approx(0.980)  # and at the widest
    mid = T.dram_walk_rate(1.0, np.sqrt(32.0 * 64.0), H100)  # halfway in log2 of the bytes
    assert mid == pytest.approx((0.629 + 0.667) / 2)
    # half the bytes at 0.667 of the rate, half at the stream's: the times add
    assert T.dram_walk_rate(0.5, 64.0, H100) == pytest.approx(1.0 / (0.5 / 0.667 + 0.5))
    assert T.dram_walk_rate(0.0, 32.0, H100) == pytest.approx(1.0)


def test_a_share_follows_the_dram_byte_accounting():
    l2 = 50 << 20
    # everything fits in the L2: compulsory traffic, A's share is A over A + B + C
    share = T.dram_a_share(512.0, 512.0, 512.0, 128.0, 128.0, 16.0, l2)
    assert share == pytest.approx(1.0 / 3.0)
    # a 16-column product streams A (64 MB) and nearly nothing else
    assert T.dram_a_share(4096.0, 16.0, 4096.0, 128.0, 16.0, 264.0, l2) > 0.95
    # a 64-row product streams B instead
    assert T.dram_a_share(64.0, 8192.0, 4096.0, 64.0, 128.0, 264.0, l2) < 0.05


def test_the_device_files_carry_the_measured_walk_and_datasheet_figures_drop_it():
    for name in ("h100-sxm", "h200"):
        dev = load_device(name)
        eff = dev.memory.dram_row_segment_efficiency
        assert eff and all(0.5 < v <= 1.0 for v in eff.values())
        assert eff["32"] < eff["128"] < eff["256"]
        assert "dram-walk-20261125" in dev.source_of("memory.dram_row_segment_efficiency")
        assert datasheet_only(dev).memory.dram_row_segment_efficiency is None
    assert load_device("a100").memory.dram_row_segment_efficiency is None


def test_bad_segment_tables_are_refused():
    from perfmodel.devices import Memory

    base = load_device("h100-sxm").memory.model_dump()
    for bad in ({"0": 0.5}, {"wide": 0.5}, {"32": 1.5}):
        with pytest.raises(ValueError, match="dram_row_segment_efficiency"):
            Memory(**dict(base, dram_row_segment_efficiency=bad))


def test_a_dram_bound_a_walk_slows_by_the_measured_share_and_a_square_does_not_move(monkeypatch):
    """The walk's rate against the stream's, alone: the flush's write-back (terms.FLUSH_WRITEBACK), which adds
    the same bytes with and without it, is left out here (tests/test_dram_stream.py checks it)."""
    from perfmodel.model import terms

    monkeypatch.setattr(terms, "FLUSH_WRITEBACK", False)
    fig = Figures.load("h100-sxm", CAL)
    dev = Figures(_without(fig.device), calibrated=True)
    walk = KernelConfig.make("split_k", bm=128, bn=16, bk=8, tm=8, tn=8, splits=16)
    with_term = predict(fig, walk, 4096, 16, 4096)
    without = predict(dev, walk, 4096, 16, 4096)
    assert with_term.bound == without.bound == "dram"
    # 32-byte segments of A at 63 % of the stream rate: the DRAM term of a k-tile (A's reads with B's and C's)
    assert with_term.cycles_per_tile["dram"] / without.cycles_per_tile["dram"] > 1.5
    # and the time, less: the grid is one partial wave (4 blocks per SM), whose compute phase, lengthened by
    # the data stage's work for A's loads (model.predict.ldg_returns), bounds it once DRAM runs at the stream rate
    assert without.gflops / with_term.gflops > 1.25
    square = KernelConfig.make("double_buffer")
    a, b = predict(fig, square, 4096, 4096, 4096), predict(dev, square, 4096, 4096, 4096)
    assert a.gflops == pytest.approx(b.gflops, rel=1e-3)


def test_the_walk_on_the_recorded_sixteen_column_product(monkeypatch):
    """The DRAM-bound points of the recorded skinny-N run (split_k on 4096 x 16 x 4096, A streamed in
    32- and 64-byte row segments) were 62-71 % too fast at the stream rate (45-57 % since split_k's
    reduction takes its measured floor, 39-54 % since a prefetched tile's lines wait behind the block's shared
    loads where the load-use window applies, terms.data_stage_wait); with the measured walk their error must fall by more than half,
    and no other point of the run may move by more than a point. The flush's write-back (terms.FLUSH_WRITEBACK),
    which takes part of the same gap, is left out: this is the walk's share alone."""
    from perfmodel.model import terms

    monkeypatch.setattr(terms, "FLUSH_WRITEBACK", False)
    run = analysis.load_run(SKINNY_N)
    facts, fig = analysis.run_facts(run, SKINNY_N), analysis.run_figures(SKINNY_N)
    plain = Figures(_without(fig.device), calibrated=fig.calibrated)

    def errors(f):
        return {(r["shape"], r["kernel"], str(r["config"])): (r["error_pct"], r["bound"])
                for r in analysis.rows(run, f, facts) if r.get("error_pct") is not None}

    with_term, without = errors(fig), errors(plain)
    assert with_term.keys() == without.keys()
    walk = [k for k, (_, bound) in without.items() if bound == "dram"]
    assert len(walk) >= 3
    for k in walk:
        assert without[k][0] > 35
        assert 0 < with_term[k][0] < 0.5 * without[k][0]
    others = [abs(with_term[k][0] - without[k][0]) for k in with_term if k not in walk]
    assert max(others) < 1.0
