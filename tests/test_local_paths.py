"""Local frames beyond L1: an SM running a block whose accumulators live in local memory moves them
through its own paths (loads through the L2->SM port, stores at its store rate), and a grid that leaves
SMs idle gives the busy ones more than an even share of the L2 (terms.tile_cycles, `local`)."""
from pathlib import Path

import numpy as np
import pytest

from perfmodel import analysis
from perfmodel.model import terms as T
from perfmodel.model.predict import local_store_share

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "results" / "20261123-185325-h100-sxm-shapes-all"


def _local_only(b, local_bytes, level=-0.0, store_share=0.5):
    one = np.ones(1)
    work = T.TileWork(ffma=one, other=one, smem_wavefronts=one, l2_bytes=one, dram_bytes=one, local_bytes=local_bytes * one,
                      local_level=level * one, warps=16 * one, mem_latency=400 * one, kind=one, exposed_k=0 * one,
                      local_store_share=store_share * one)
    rates = T.SMRates(schedulers=4, lanes=128, smem_bpc=128, l2_bpc=27.0, dram_bpc=11.0, port_bpc=120.0, smem_latency=30)
    f = T.Fractions(fma=one, smem=one, l2=one, dram=one)
    return dict(b=b * one, work=work, rates=rates, f=f, c_ffma=1.0)


def test_the_local_term_takes_the_slower_of_the_busy_sms_share_and_the_sms_own_paths():
    loc = T.TERMS.index("local")
    x = 1.0e6  # local bytes per block and k-tile, half of them stores
    share_all = T.tile_cycles(**_local_only(1, x))[0][loc, 0]
    assert share_all == pytest.approx(x / 27.0)  # no store rate: the even share, as before
    own = x * (0.5 / 120.0 + 0.5 / 28.8)
    every = T.tile_cycles(**_local_only(1, x), sms_share=1.0, store_bpc=28.8)[0][loc, 0]
    assert every == pytest.approx(x / 27.0) and own < x / 27.0  # every SM busy: the share is the slower
    few = T.tile_cycles(**_local_only(1, x), sms_share=132 / 16, store_bpc=28.8)[0][loc, 0]
    assert few == pytest.approx(own)  # 16 busy SMs: the SM's own paths
    stores = T.tile_cycles(**_local_only(1, x, store_share=0.9), sms_share=132 / 16, store_bpc=28.8)[0][loc, 0]
    assert stores == pytest.approx(x * (0.1 / 120.0 + 0.9 / 28.8)) and stores > few
    in_l1 = T.tile_cycles(**_local_only(1, x, level=1.0), sms_share=132 / 16, store_bpc=28.8)[0][loc, 0]
    assert in_l1 == pytest.approx(x / 128)  # frames in L1: the L1 rate, unchanged


def test_store_share_is_read_from_the_loop():
    assert local_store_share(None) == 0.5
    assert local_store_share(dict(cls="FLKFK", wide=[0, 4, 1, 0, 1])) == pytest.approx(2 / 6)
    assert local_store_share(dict(cls="FFS", wide=[0, 0, 4])) == 0.5


@pytest.mark.skipif(not RUN.exists(), reason="recorded run absent")
def test_recorded_local_bound_grids_under_one_wave(monkeypatch):
    """The recorded 256 x 256 tiles whose 32 or 64 registers leave the accumulators in local memory, on grids
    under one wave (one block per busy SM): 10.6 % MAPE with the SM's paths, 35.8 % (every one too slow) with
    the even share of the L2 alone; none moves away."""
    run = analysis.load_run(RUN)
    ms = [m for m in run.measurements if m.config.get("bm") == 256 and m.config.get("bn") == 256 and not analysis.is_holdout(m.shape)]
    run = run.model_copy(update=dict(measurements=ms))
    facts, fig = analysis.run_facts(run, RUN), analysis.run_figures(RUN)

    def errors():
        return {(r["shape"], r["config"]): r["error_pct"] for r in analysis.rows(run, fig, facts)
                if r.get("error_pct") is not None and r["bound"] == "local" and r["regime"] == "subwave"}

    now = errors()
    orig = T.tile_cycles
    monkeypatch.setattr(T, "tile_cycles", lambda *a, **k: orig(*a, **{**k, "store_bpc": None}))
    even = errors()
    common = sorted(set(now) & set(even))
    assert len(common) >= 8
    e_now, e_even = np.array([now[k] for k in common]), np.array([even[k] for k in common])
    assert np.mean(np.abs(e_now)) < 15.0 and np.mean(e_even) < -30.0
    assert np.all(np.abs(e_now) <= np.abs(e_even) + 1e-9) and np.sum(np.abs(e_now) < np.abs(e_even)) >= len(common) - 2


PATHS_RUN = ROOT / "results" / "20261128-101846-h200-local-paths"


@pytest.mark.skipif(not PATHS_RUN.exists(), reason="recorded run absent")
def test_the_check_run_measured_after_its_predictions(monkeypatch):
    """benchmarks/local_paths.py on the H200, measured after both predictions were committed, replayed from the
    Hopper generation figures: the 16 points on grids under one wave 19.2 % MAPE with the SM's paths against
    43.3 % with the even share alone, every one closer and still on the slow side; the four on a grid of more
    than a wave (4096, 256 blocks) predicted the same either way."""
    from perfmodel.accuracy import figures_for

    run = analysis.load_run(PATHS_RUN)
    fig = figures_for(PATHS_RUN, "generation", None, ROOT / "results")

    def errors():
        return {(r["kernel"], r["config"], r["M"]): r["error_pct"] for r in analysis.rows(run, fig, analysis.run_facts(run, PATHS_RUN))
                if r.get("error_pct") is not None}

    now = errors()
    orig = T.tile_cycles
    monkeypatch.setattr(T, "tile_cycles", lambda *a, **k: orig(*a, **{**k, "store_bpc": None}))
    even = errors()
    assert len(now) == len(even) == 20
    under = [k for k in now if k[2] < 4096]
    e_now, e_even = np.array([now[k] for k in under]), np.array([even[k] for k in under])
    assert len(under) == 16 and np.mean(np.abs(e_now)) < 22.0 and np.mean(np.abs(e_even)) > 40.0
    assert np.all(np.abs(e_now) < np.abs(e_even)) and np.all(e_now < 0)
    assert all(now[k] == pytest.approx(even[k]) for k in now if k[2] == 4096)
