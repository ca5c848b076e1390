"""terms.ring_landing_extra: a ring of cp.async copies (async_pipeline) waits its SM's tile bytes landing from DRAM, as
benchmarks/copy_landing.py measured them (memory.dram_copy_landing_cycles_by_KB of the Hopper generation)."""
from pathlib import Path

import numpy as np
import pytest

from perfmodel import KernelConfig
from perfmodel.devices import load_device
from perfmodel.model import terms
from perfmodel.model.figures import Figures
from perfmodel.model.predict import predict

ROOT = Path(__file__).resolve().parent.parent
REF = ROOT / "results" / "reference-calibration-h100-sxm.toml"
TABLE = {"4": 1194.0, "8": 1412.0, "20": 2000.0}


def test_the_landing_reads_the_table_from_the_pointer_chase_and_extends_its_last_slope():
    got = terms.copy_landing_cycles([0.0, 2.0, 4.0, 8.0, 14.0, 20.0, 30.0], 700.0, TABLE)
    slope = (2000.0 - 1412.0) / 12.0
    assert np.allclose(got, [700.0, 947.0, 1194.0, 1412.0, 1412.0 + 6 * slope, 2000.0, 2000.0 + 10 * slope])


def test_the_wait_is_the_landing_beyond_the_load_phase_times_dram_s_share_of_the_latency():
    # 12 KB an SM from DRAM alone (share 1): landing 1,412 + 4 x 49 = 1,608 less the chase (700) and a 100-cycle burst
    one = terms.ring_landing_extra(12.0, 700.0, TABLE, dram_lat=700.0, l2_lat=300.0, mem_lat=700.0, burst=100.0)
    assert one == pytest.approx(1608.0 - 800.0)
    half = terms.ring_landing_extra(12.0, 700.0, TABLE, dram_lat=700.0, l2_lat=300.0, mem_lat=500.0, burst=100.0)
    assert half == pytest.approx(one / 2)
    assert terms.ring_landing_extra(12.0, 700.0, TABLE, dram_lat=700.0, l2_lat=300.0, mem_lat=300.0, burst=100.0) == 0.0
    assert terms.ring_landing_extra(1.0, 700.0, TABLE, dram_lat=700.0, l2_lat=300.0, mem_lat=700.0, burst=500.0) == 0.0
    assert np.all(terms.ring_landing_extra(np.array([4.0, 12.0]), 700.0, None, 700.0, 300.0, 700.0, 100.0) == 0.0)


A = dict(bm=64, bn=32, bk=32, tm=1, tn=4, wm=32, wn=16, wn_iter=2)


def test_the_two_stage_ring_of_a_12_kb_tile_waits_its_landing_and_the_three_stage_one_hides_it():
    """64 x 32 x 32 (12 KB a k-tile, one block an SM at 512 x 512 x 8192): measured 221 us with two stages, 160 with
    three (results/20261207-064441-h100-sxm-async-stages). From the compiled binary (`perfmodel predict`) the model
    gives 221 / 154 us with the landing and 151 / 154 without; here, with no binary (estimated registers, the closed
    form's compute phase), 229 / 193 with it and 193 / 193 without."""
    cal = Figures.load("h100-sxm", calibration=REF)
    dev = cal.device
    bare = Figures(dev.model_copy(update={"memory": dev.memory.model_copy(update={"dram_copy_landing_cycles_by_KB": None})}),
                   calibrated=True)
    got = {}
    for s in (2, 3):
        cfg = KernelConfig.make("async_pipeline", stages=s, **A)
        got[s] = [predict(f, cfg, M=512, N=512, K=8192) for f in (cal, bare)]
    (w2, o2), (w3, o3) = got[2], got[3]
    assert 205e-6 < w2.time_s < 235e-6 and w2.ring_landing_cycles > 500
    assert abs(o2.time_s / o3.time_s - 1.0) < 0.05 and o2.ring_landing_cycles == 0.0
    assert abs(w3.time_s / o3.time_s - 1.0) < 0.01  # two phases hide it
    assert w3.ring_landing_cycles == w2.ring_landing_cycles  # the same tile lands the same; what hides it differs


def test_only_rings_of_copies_on_a_device_that_measured_the_landing_wait_it():
    ring = KernelConfig.make("async_pipeline", stages=2, **A)
    assert predict(Figures.load("h100-sxm", calibration=REF), KernelConfig.make("double_buffer"),
                   M=512, N=512, K=8192).ring_landing_cycles == 0.0
    assert predict(Figures.load("h200", figures="datasheet"), ring, M=512, N=512, K=8192).ring_landing_cycles == 0.0
    assert predict(Figures.load("a100"), ring, M=512, N=512, K=8192).ring_landing_cycles == 0.0
    assert predict(Figures.load("h200"), ring, M=512, N=512, K=8192).ring_landing_cycles > 0.0  # Hopper's table
    assert load_device("h200").memory.dram_copy_landing_cycles_by_KB == load_device("h100-sxm").memory.dram_copy_landing_cycles_by_KB


@pytest.mark.parametrize("bad", [{"0": 1000.0}, {"x": 1000.0}, {"-4": 1000.0}])
def test_a_landing_table_needs_positive_kb(bad):
    dev = load_device("h100-sxm")
    with pytest.raises(ValueError, match="dram_copy_landing_cycles_by_KB"):
        type(dev.memory).model_validate({**dev.memory.model_dump(), "dram_copy_landing_cycles_by_KB": bad})
