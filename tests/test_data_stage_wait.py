"""A prefetched tile's lines behind the block's own shared loads in the L1 data stage (terms.data_stage_wait): the rule
on numbers built by hand, where tile_cycles charges it, and what predict says of double_buffer's default alone on its SMs
(the case Nsight Compute's PC sampling measured on the H200, docs/model.md "The tile's lines behind the shared loads")."""
import importlib
from unittest import mock

import numpy as np
import pytest

from perfmodel import Figures, KernelConfig, facts
from perfmodel.model import terms as T
from perfmodel.measure import sass

P = importlib.import_module("perfmodel.model.predict")  # the module (the package exports its function)
H200_CAL = "results/20261129-160257-h200-bench-all/calibration.toml"


def test_the_lines_get_what_the_shared_loads_leave_and_at_least_half():
    lines = np.array([160.0, 160.0, 160.0, 160.0, 0.0])
    busy = np.array([0.0, 0.25, 0.5, 0.9, 0.4])
    # idle stage: nothing; a quarter busy: 160 lines in 160 / 0.75 clocks; half busy or more: the stage alternates
    assert T.data_stage_wait(lines, busy) == pytest.approx([0.0, 160 / 3, 160.0, 160.0, 0.0])
    assert T.data_stage_wait(100.0, -0.3) == 0.0  # a busy share under nothing (a rounding of the stage's work) is none


def _args(kind, return_lines, hide=0.25):
    one = np.ones(1)
    work = T.TileWork(ffma=1024 * one, other=200 * one, smem_wavefronts=1200 * one, l2_bytes=4096 * one, dram_bytes=0 * one,
                      local_bytes=0 * one, local_level=one, warps=8 * one, mem_latency=700 * one, kind=np.full(1, kind),
                      exposed_k=150 * one)
    rates = T.SMRates(schedulers=4, lanes=128, smem_bpc=128, l2_bpc=50, dram_bpc=20, port_bpc=120, smem_latency=30)
    f = T.Fractions(fma=one, smem=one, l2=one, dram=one)
    return dict(b=one, work=work, rates=rates, f=f, c_ffma=1.0, hide=hide * one, scheduled=1600 * one,
                return_lines=return_lines * one)


def test_tile_cycles_charges_it_to_a_prefetching_block_only():
    lat = T.TERMS.index("latency")
    base, exp0, _ = T.tile_cycles(**_args(2, 0.0))
    more, exp1, _ = T.tile_cycles(**_args(2, 160.0))
    # busy: (1,200 wavefronts - 160 lines) / 1,600 compute cycles = 0.65, so the 160 lines arrive 160 cycles later; the
    # load phase (700 + 4,096 / 120 cycles) outlasts the quarter of the compute phase that hides it with or without them
    assert exp1[0] - exp0[0] == pytest.approx(160.0)
    assert more[lat, 0] - base[lat, 0] == pytest.approx(160.0)
    assert np.allclose(np.delete(more, lat, axis=0), np.delete(base, lat, axis=0))  # the other terms are untouched
    # a single-buffered block (kind 1) waits for its tile with the stage idle: no charge
    s0, _, _ = T.tile_cycles(**_args(1, 0.0))
    s1, _, _ = T.tile_cycles(**_args(1, 160.0))
    assert s1[lat, 0] == pytest.approx(s0[lat, 0])
    # what the window hides is not exposed: with the whole compute phase hiding the loads nothing shows
    h0, e0, _ = T.tile_cycles(**_args(2, 0.0, hide=1.0))
    h1, e1, _ = T.tile_cycles(**_args(2, 160.0, hide=1.0))
    assert e0[0] == e1[0] == 0.0 and h1[lat, 0] == pytest.approx(h0[lat, 0])
    with mock.patch.object(T, "DATA_STAGE_WAIT", False):
        off, _, _ = T.tile_cycles(**_args(2, 160.0))
    assert off[lat, 0] == pytest.approx(base[lat, 0])


def _predict(M, N, K):
    cfg = KernelConfig.make("double_buffer")
    return P.predict(Figures.load("h200", H200_CAL), cfg, M, N, K, build=facts.compiled(cfg, "9.0"))


@pytest.mark.skipif(not sass.available("9.0"), reason="no sm_90 toolchain or nvdisasm here: the binary's window is not read")
def test_double_buffer_alone_on_its_sms_waits_for_its_lines_and_the_full_waves_do_not():
    cfg = KernelConfig.make("double_buffer")
    lines = sum(P.tile_load_lines(cfg))  # 8 warp loads of A (16 lines each) and 8 of B (4 lines each)
    assert lines == 160
    lone = _predict(512, 512, 1024)  # 16 blocks, one an SM: the load-use window applies
    assert lone.load_use_share is not None
    # its shared loads keep the stage busy over half the time: the 160 lines come back 160 cycles later
    assert lone.data_stage_wait_cycles == pytest.approx(lines)
    assert lone.exposed_latency_cycles_tail > 0
    with mock.patch.object(T, "DATA_STAGE_WAIT", False):
        before = _predict(512, 512, 1024)
    assert before.time_s < lone.time_s and before.exposed_latency_cycles_tail < lone.exposed_latency_cycles_tail
    many = _predict(4096, 4096, 4096)  # many waves of two blocks an SM: other warps issue in the wait
    assert many.data_stage_wait_cycles == 0.0


H200_RUN = "results/20261123-222023-h200-shapes-all"
LONE_RUNS = ("results/20261127-044850-h100-sxm-lone-fetch", "results/20261127-051619-h100-sxm-lone-grid")


def _errors(rows, stage_wait: bool) -> dict:
    with mock.patch.object(T, "DATA_STAGE_WAIT", stage_wait):
        return {(r["run"], r["kernel"], r["config"], r["M"], r["N"], r["K"]): r["error_pct"] for r in rows()}


def test_the_first_h200_shape_run_and_the_lone_warp_runs():
    """Replayed with and without the wait, only double-buffered points where the load-use window applies move, each
    slower. The first H200 shape run with its own calibration: its 27 such points (most the default 128 x 128 x 8 in grids
    of one partial wave, the rest blocks of at most four warps alone on their schedulers) from 7.3 % (bias +5.9 %) to 5.5 %
    (-0.7 %) (7.3 % (+6.2 %) to 5.4 % (-0.5 %) before the replay took the scoreboard waits on global loads; 7.2 %
    (+6.1 %) to 5.4 % (-0.6 %) before the store phases counted only the elements inside C and the
    flush's write-back was charged). The two H100 runs of lone warps with the reference calibration (blocks of one to four warps, 38 points that
    the window took from 8.1 to 5.3 %): 5.3 % (-0.8 %) to 6.1 % (-4.7 %), too slow: where a warp is alone on its
    scheduler the wait overshoots (docs/model.md, "The tile's lines behind the shared loads"). Since each shared load
    took its own wavefronts in the replay the lone warps go from 5.4 % (-1.0 %) to 6.2 % (-4.9 %); since the replay took
    the scoreboard waits on global loads from 5.8 % (-1.7 %) to 6.7 % (-5.5 %)."""
    from recorded import replayed_rows

    def h200():
        return [dict(r, run=H200_RUN) for r in replayed_rows(H200_RUN, f"{H200_RUN}/calibration.toml")]

    def lone():
        return [dict(r, run=rd) for rd in LONE_RUNS for r in replayed_rows(rd, "results/reference-calibration-h100-sxm.toml")]

    for rows, n, before, after in ((h200, 27, (7.3, 5.9), (5.5, -0.7)), (lone, 38, (5.8, -1.7), (6.7, -5.5))):
        new, old = _errors(rows, True), _errors(rows, False)
        assert new.keys() == old.keys()
        moved = [k for k in new if abs(new[k] - old[k]) > 1e-9]
        assert len(moved) == n and {k[1] for k in moved} <= {"double_buffer", "split_k"}
        assert all(new[k] < old[k] for k in moved)
        e, f = np.array([new[k] for k in moved]), np.array([old[k] for k in moved])
        assert (round(np.abs(f).mean(), 1), round(f.mean(), 1)) == before
        assert (round(np.abs(e).mean(), 1), round(e.mean(), 1)) == after
