"""split_k_fused (step 13): step 10's kernel whose last slice of each tile sums the tile's partials in the same launch.
What the catalogue, the launcher's arguments and the model make of it (no GPU; tests/test_gpu.py runs it against
float64 and against split_k's bits)."""
import numpy as np
import pytest

from perfmodel.catalogue import KernelConfig, get_kernel, kernel_ids, ranked_kernels
from perfmodel.explain import render
from perfmodel.model.figures import Figures
from perfmodel.model.predict import Problem, fused_reduction_seconds, predict, predict_batch
from perfmodel.model import terms as T
from perfmodel.paths import data_dir


def test_it_is_step_10_with_the_sums_in_the_kernel():
    fused, plain = get_kernel("split_k_fused"), get_kernel("split_k")
    assert kernel_ids()[-1] == "split_k_fused" and fused.step == 13 and "split_k_fused" not in ranked_kernels()
    assert fused.reduction == "fused" and plain.reduction == "second_kernel" == get_kernel("coalesced_split_k").reduction
    same = ("params", "defaults", "choices", "mapping", "gmem_vector", "smem_read_vector", "a_transposed", "quadrants",
            "buffers", "barriers_per_tile", "values")
    assert all(getattr(fused, k) == getattr(plain, k) for k in same)
    src = (data_dir("kernels") / fused.source).read_text()
    assert "#define SPLIT_K 2" in src and '#include "outer_f4.cuh"' in src
    sums = (data_dir("kernels") / "reduce_splits.cuh").read_text()
    # the partials are read from the L2 and summed from slice 0 up, as reduce_splits does
    assert "for (int z = 1; z < slices; ++z)" in sums.split("sum_tile_if_last")[1] and "ld.global.cg" in sums


def test_the_model_drops_the_second_kernel_and_charges_the_busiest_sms_sums():
    fig = Figures.load("h200")
    dev = fig.effective
    cfgs = [KernelConfig.make(k, bm=16, bn=256, bk=16, tm=8, tn=8, splits=32) for k in ("split_k", "split_k_fused")]
    bt = predict_batch(fig, cfgs, Problem(1, 4096, 4096))
    plain, fused = bt.reduce_s
    # one row of 16 tiles of 16 x 256: each SM sums at most one tile; its 64 threads take the row's 64 float4 one
    # each, 32 partials in passes of four loads: 8 L2 latencies, longer than the bytes through the port; after three
    # L2 round trips
    port = fig.l2_port_bytes_per_clock or dev.memory.smem_bandwidth_bytes_per_clock_per_sm
    hz = dev.compute.sm_clock_boost_MHz * 1e6
    lat = dev.latency.l2_latency_cycles
    assert (32 + 1) * 256 * 4 / port < 8 * lat
    want = (8 * lat + 3 * lat) / hz
    assert fused == pytest.approx(want) and 0 < fused < plain
    assert np.all(bt.time_s[1] < bt.time_s[0])
    # the same loop, the same bounds: only the reduction differs
    assert bt.time_s[0] - bt.time_s[1] == pytest.approx(plain - fused, rel=1e-9)


def test_many_tiles_charge_the_sms_share_of_them_all():
    fig = Figures.load("h200")
    dev = fig.effective
    cfg = KernelConfig.make("split_k_fused", splits=8)
    r = predict_batch(fig, [cfg], Problem(2560, 2560, 2560)).resources
    got = fused_reduction_seconds(dev, r, 2560, 2560, np.array([8.0]), 120.0, 1.98e9)
    tiles = 20 * 20  # 128 x 128 tiles of 256 threads: 16 float4 a thread, 8 partials in two passes of four loads
    lat = dev.latency.l2_latency_cycles
    per_tile = max(9 * 128 * 128 * 4 / 120.0, 16 * 2 * lat) + 3 * lat
    want = np.ceil(tiles / dev.compute.sm_count) * per_tile / 1.98e9
    assert got == pytest.approx(want)
    one = fused_reduction_seconds(dev, r, 2560, 2560, np.array([1.0]), 120.0, 1.98e9)
    assert one == 0.0
    assert T.c_tile_filled(2560, 2560, 128, 128) == 1.0


def test_predict_says_where_the_sums_go():
    fig = Figures.load("h200")
    p = predict(fig, KernelConfig.make("split_k_fused", splits=8), 512, 768, 768)
    assert p.reduction_fused and p.k_slices == 8 and p.reduction_fixed_us == 0.0
    text = render(p)
    assert "the last of a tile's slices to finish sums the tile's 8 partials in the same launch" in text
    assert "a second kernel" not in text
    q = predict(fig, KernelConfig.make("split_k", splits=8), 512, 768, 768)
    assert not q.reduction_fused and "a second kernel reads the 8 partials" in render(q)
