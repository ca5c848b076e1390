"""The sectors the kernels' stores of C send to L2 (model.gstores), from their thread maps, and what
counting them does to the recorded small-K shapes."""
import importlib

import numpy as np
import pytest

from perfmodel import KernelConfig, analysis, kernel_ids, load_device
from perfmodel.catalogue import enumerate_configs, tiled_kernels
from perfmodel.model.gstores import c_store_ratio, c_store_sectors

SHAPE_RUN = "results/20261123-185325-h100-sxm-shapes-all"


@pytest.mark.parametrize("kernel, params, ratio", [
    ("naive", {}, 8.0),                      # lanes along M: one float per sector
    ("coalesced", {}, 1.0),
    ("tiled_1d", {}, 1.0),
    ("tiled_2d", {}, 8.0),                   # lanes TN = 8 floats apart: a sector each
    ("tiled_2d", dict(tn=4, tm=8), 4.0),
    ("tiled_2d_float4", {}, 2.0),            # float4 per lane, 32 B apart: half of each sector
    ("tiled_2d_float4", dict(tn=4, tm=8, bk=16), 1.0),
    ("double_buffer", {}, 1.0),              # quadrants: consecutive float4s
    ("warp_tiled", {}, 1.0),
])
def test_bytes_moved_per_byte_of_c(kernel, params, ratio):
    assert c_store_ratio(KernelConfig.make(kernel, **params)) == ratio


def test_every_valid_configuration_moves_at_least_its_c_and_at_most_a_sector_per_float():
    valid, _, _ = enumerate_configs(load_device("h100-sxm"), tuple(tiled_kernels()))
    r = np.array([c_store_ratio(c) for c in valid])
    assert len(r) > 5000 and r.min() == 1.0 and r.max() == 8.0
    for k in kernel_ids():
        cfg = KernelConfig.make(k)
        assert c_store_sectors(cfg) * 32 >= 4 * cfg.bm * cfg.bn


def test_sector_counting_on_the_recorded_small_k_shapes():
    """The small-K class of the recorded shape run (hold-out left out), with and without the sector
    bytes of C in the L2 traffic: the error must fall, and not turn pessimistic on average (beyond 3 %:
    with every wave's lone-block stores charged too the class is unbiased, -0.05 %)."""
    P = importlib.import_module("perfmodel.model.predict")

    run = analysis.load_run(SHAPE_RUN)
    small_k = [m for m in run.measurements if analysis.shape_class(m.shape) == "small_k" and not analysis.is_holdout(m.shape)]
    run = run.model_copy(update=dict(measurements=small_k))
    fig, facts = analysis.run_figures(SHAPE_RUN), analysis.run_facts(run, SHAPE_RUN)

    def errors():
        return np.array([r["error_pct"] for r in analysis.rows(run, fig, facts) if r.get("error_pct") is not None])

    with_term = errors()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(P, "c_store_ratio", lambda cfg, scalar=False: 1.0)
        without = errors()
    assert len(with_term) == len(without) == 66
    assert np.abs(with_term).mean() < 0.9 * np.abs(without).mean()
    assert -3.0 < with_term.mean() < without.mean()


def test_the_share_of_a_grids_c_tiles_inside_c():
    """terms.c_tile_filled: the edge bodies store only the elements inside C, so a store phase moves that share of
    the tiles' sector bytes: all of it where the tiles divide C, one sixteenth for 16-row tiles at one row."""
    from perfmodel.model import terms

    got = terms.c_tile_filled(np.array([4096, 1, 1000, 4096]), np.array([4096, 4096, 1000, 16]),
                              np.array([128, 16, 128, 128]), np.array([128, 256, 128, 64]))
    assert np.allclose(got, [1.0, 1 / 16, 1000 * 1000 / (1024 * 1024), 16 / 64])


def test_the_stored_elements_rule_is_on_and_scales_a_one_row_grids_store_phase(monkeypatch):
    """terms.STORED_ELEMENTS is on in the shipped model: split_k 16 x 256 at one row stores a sixteenth of its
    tiles' sector bytes in the last wave's store phase (off, the whole tiles')."""
    from perfmodel.model import terms
    from perfmodel.model.figures import Figures
    from perfmodel.model.predict import predict

    from pathlib import Path

    run = Path(__file__).resolve().parent.parent / "results" / "20261129-073253-h200-shapes-skinny-m-seed11"
    cal = Figures.load("h200", calibration=run / "calibration.toml")
    cfg = KernelConfig.make("split_k", bm=16, bn=256, bk=16, tm=8, tn=8, splits=32)
    assert terms.STORED_ELEMENTS
    on = predict(cal, cfg, M=1, N=4096, K=4096)
    monkeypatch.setattr(terms, "STORED_ELEMENTS", False)
    off = predict(cal, cfg, M=1, N=4096, K=4096)
    assert not np.isclose(off.last_wave_store_us, 0.0)
    assert np.isclose(on.last_wave_store_us, off.last_wave_store_us / 16)
    assert on.time_s < off.time_s
