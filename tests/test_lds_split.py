"""Each shared load its own wavefronts in the replay (docs/model.md, "Each shared load its own wavefronts"): the bank
simulation's reads grouped by the FFMAs one read feeds (smem_banks.read_groups), matched to the loop program's shared
loads by the FFMAs that depend on them (schedule.lds_split)."""
import pytest

from perfmodel.catalogue import KernelConfig
from perfmodel.model import schedule, smem_banks


def test_async_pipelines_conflicted_a_reads_form_their_own_group():
    # default tile: A stored [128][8 + 4], a warp's eight rows of one LDS.128 96 words apart (one bank group):
    # 8 wavefronts, 4 k steps a load, tm = 8 rows -> 16 loads a k-tile, each feeding 4 x 16 columns; B's float4
    # reads (4 distinct 16-byte words, broadcast) 4 wavefronts, wn_iter = 4 a k step -> 32, each feeding 4 x 8 rows
    g = smem_banks.read_groups(KernelConfig.make("async_pipeline"))
    assert g == ((64.0, 16.0, 8.0), (32.0, 32.0, 4.0))


def test_square_thread_tiles_keep_one_mean():
    # tm x wm_iter == tn x wn_iter: A's and B's loads feed as many FFMAs, one group, the mean as before
    cfg = KernelConfig.make("double_buffer")
    g = smem_banks.read_groups(cfg)
    assert len(g) == 1
    li, lw, _, _ = smem_banks.smem_counts(cfg)
    assert g[0][2] == pytest.approx(lw / li)
    prog = dict(cls="SSFF", deps=[[], [], [1, 2], [2, 3]])
    assert schedule.lds_split(prog, g, lw / li, 1.0) == lw / li


def _program():
    # S0 feeds two FFMAs, S1 feeds one; X a shared load nothing depends on (kept at the mean)
    return dict(cls="SSSFFF", deps=[[], [], [], [3], [4, 3], [5]])


def test_loads_take_their_groups_wavefronts_in_order_of_what_they_feed():
    groups = ((2.0, 1.0, 8.0), (1.0, 1.0, 4.0))  # the load that feeds more is the conflicted one
    mean = 6.0
    out = schedule.lds_split(_program(), groups, mean, 1.0)
    assert isinstance(out, tuple) and len(out) == 6
    lds = [out[0], out[1], out[2]]
    assert sum(lds) == pytest.approx(3 * mean)  # the pipe's work of the pass is the mean's
    assert out[0] > out[2] > out[1]  # 8, 6 (no group: the mean), 4 before the scaling
    assert out[0] / out[1] == pytest.approx(2.0)
    assert out[3:] == (0.0, 0.0, 0.0)


def test_one_group_or_no_load_is_the_mean():
    assert schedule.lds_split(_program(), ((1.0, 2.0, 5.0),), 5.0, 1.0) == 5.0
    assert schedule.lds_split(dict(cls="FF", deps=[[], [1]]), ((2.0, 1.0, 8.0), (1.0, 1.0, 4.0)), 6.0, 1.0) == 6.0


def test_the_replay_waits_longer_for_a_conflicted_load():
    # two warps: a load of 8 wavefronts and one of 1 (mean 4.5), each read by an FFMA chain; per load the
    # FFMA after the conflicted one starts later than with the mean spread over both
    prog = dict(id="lds-split-test", cls="SSFF", wide=[4, 4, 0, 0], deps=[[], [], [2], [2]])
    base = dict(warps=2, warps_per_block=2, c_ffma=1.0, smem_latency=29.0, local_latency=30.0, fixed_latency=4.0,
                sts_wavefronts=1.0, share=4.0)
    mean = schedule.simulate(prog, lds_wavefronts=4.5, **base)
    split = schedule.simulate(prog, lds_wavefronts=(8.0, 1.0, 0.0, 0.0), **base)
    assert split > mean
