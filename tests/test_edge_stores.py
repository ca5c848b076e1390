"""The edge and scalar inner bodies' C stores (docs/model.md, "The edge bodies' C stores"): their sector count
from the store map, which blocks store so (edge_stage), what the last wave pays for them, and the recorded H200
run that checked it, read back and replayed with and without the scalar stores."""
import importlib
from pathlib import Path

import numpy as np
import pytest

from perfmodel import analysis
from perfmodel.catalogue import KernelConfig
from perfmodel.devices import load_device
from perfmodel.model.gstores import c_store_ratio, c_store_sectors
from perfmodel.model.predict import predict

P = importlib.import_module("perfmodel.model.predict")

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "results" / "20261129-123501-h200-edge-stores"
CAL = ROOT / "results" / "20261128-214206-h200-bench-all" / "calibration.toml"


@pytest.mark.parametrize("kernel, interior, scalar", [
    ("double_buffer", 1.0, 4.0), ("bank_conflict_free", 1.0, 4.0), ("split_k", 1.0, 4.0), ("warp_tiled", 1.0, 4.0),
    ("async_pipeline", 1.0, 4.0), ("tiled_2d_float4", 2.0, 8.0), ("tiled_2d", 8.0, 8.0), ("tiled_1d", 1.0, 1.0),
    ("smem_tiled", 1.0, 1.0)])
def test_scalar_stores_move_four_times_the_sectors_of_the_float4_maps(kernel, interior, scalar):
    """A float4 written as four scalars, q = 0..3 in turn: lanes 16 B apart write 4 of every 16 bytes, two lanes a
    sector, so a whole-sector float4 map moves 4 x its bytes; the kernels that store scalars everywhere keep theirs."""
    cfg = KernelConfig.make(kernel)
    assert (c_store_ratio(cfg), c_store_ratio(cfg, scalar=True)) == (interior, scalar)


def test_one_warp_of_the_quadrant_map_by_hand():
    """double_buffer's default: 256 threads, each 8 x 8 in four float4s a row; a warp's float4 store fills 16 whole
    sectors (512 contiguous bytes), each of its four scalar stores touches the same 16 sectors."""
    cfg = KernelConfig.make("double_buffer")
    assert c_store_sectors(cfg) == 8 * 16 * 16 and c_store_sectors(cfg, scalar=True) == 4 * 8 * 16 * 16


def _store_cycles(kernel, M, N, K, **kw):
    p = predict(load_device("h200"), KernelConfig.make(kernel, **kw), M, N, K, registers=128)
    return p.last_wave_store_us


def test_which_blocks_store_scalars():
    """ragged = edge: the blocks of the edge body (all of them where K is not a multiple of bk); inner: every block
    (body<1> stores scalars, on aligned sizes too); inner4 with K and N multiples of 4: the float4 inner body."""
    full = _store_cycles("split_k", 1024, 1024, 1024)
    assert _store_cycles("split_k", 1024, 1024, 1020) == pytest.approx(4 * full, rel=0.01)
    assert _store_cycles("split_k", 1024, 1024, 1024, ragged="inner") == pytest.approx(4 * full, rel=0.01)
    assert _store_cycles("split_k", 1024, 1024, 1020, ragged="inner4") == pytest.approx(full, rel=0.01)
    assert _store_cycles("split_k", 1024, 1024, 1023, ragged="inner4") == pytest.approx(4 * full, rel=0.01)
    # 1000 x 1000 with 128 x 128 tiles: the last block row and column (15 of 64 blocks) take the edge body, and
    # the blocks store only the elements inside C (terms.STORED_ELEMENTS: 1000^2 / 1024^2 of the tiles' bytes)
    part = _store_cycles("double_buffer", 1000, 1000, 1000)
    whole = _store_cycles("double_buffer", 1024, 1024, 1024)
    assert part == pytest.approx(whole * (1 + 3 * 15 / 64) * (1000 / 1024) ** 2, rel=0.01)


def _gflops(kernel, M, N, K, **kw):
    want = KernelConfig.make(kernel, **kw)
    return next(m.gflops_median for m in analysis.load_run(RUN).measurements
                if m.kernel == want.kernel and m.config == want.params() and (m.M, m.N, m.K) == (M, N, K) and m.verified)


def test_the_run_is_complete_and_verified():
    run = analysis.load_run(RUN)
    ms = [m for m in run.measurements if m.kernel != "cublas"]
    assert len(ms) == 60 and all(m.verified for m in run.measurements)


@pytest.mark.parametrize("kernel, ratio", [("split_k", 1.085), ("double_buffer", 1.093), ("warp_tiled", 1.296),
                                           ("tiled_2d_float4", 1.165), ("bank_conflict_free", 1.063), ("async_pipeline", 1.204)])
def test_the_edge_body_costs_what_the_docs_say(kernel, ratio):
    """Time at 1024 x 1024 x 1020 (every block in the edge body) over 1024^3 (none), per flop as measured."""
    t = [2.0 * 1024 * 1024 * k / _gflops(kernel, 1024, 1024, k) for k in (1020, 1024)]
    assert t[0] / t[1] == pytest.approx(ratio, abs=0.001)


def test_the_recorded_run_with_and_without_the_scalar_stores():
    """The run replayed with its own calibration's figures (the H200 bench run's): 7.7 % MAPE (+5.5 %) with the
    edge bodies storing as the interior, 5.0 % (-0.9 %) with their scalar stores (7.7 % (+5.5 %) and 5.0 % (-0.8 %)
    before the replay took the scoreboard waits on global loads; 7.8 % (+5.5 %) and 5.1 % (-0.8 %)
    before cp.async copies took their measured clocks in the replay; 8.4 % (+6.1 %) and 5.7 % (-0.2 %)
    before each shared load took its own wavefronts in the replay; 5.7 % (-0.3 %) before the store
    phases counted only the elements inside C and the flush's write-back was charged; 8.2 % (+5.8 %) and 5.8 % (-0.5 %)
    before split_k's reduction floor became what it adds behind its writer; 9.3 % (+8.3 %) and 6.5 % (+2.0 %)
    before a prefetched tile's lines waited behind the block's shared loads where the load-use window applies,
    terms.data_stage_wait; 10.5 % (+9.9 %) and 7.5 % (+3.6 %)
    before a block alone on its SM in one partial wave took its binary's load-use window, 11.2 % (+10.8 %) and
    8.0 % (+4.5 %) before the H200's DRAM wait against the lines in flight was given to A's walk)."""
    run = analysis.load_run(RUN)
    facts = analysis.run_facts(run, RUN)
    from perfmodel.accuracy import figures_for

    fig = figures_for(RUN, "measured", str(CAL), ROOT / "results")

    def errors():
        return np.array([r["error_pct"] for r in analysis.rows(run, fig, facts) if r.get("error_pct") is not None])

    with_scalar = errors()
    orig = P.edge_stage
    with pytest.MonkeyPatch.context() as mp:  # every block stores as the interior body does
        mp.setattr(P, "edge_stage", lambda configs, r, M, N, K: (orig(configs, r, M, N, K)[0], r))
        without = errors()
    assert len(with_scalar) == len(without) == 60
    assert (round(np.abs(without).mean(), 1), round(without.mean(), 1)) == (7.7, 5.4)
    assert (round(np.abs(with_scalar).mean(), 1), round(with_scalar.mean(), 1)) == (5.0, -0.9)
