"""The SM's load/store units (devices/generations/*.toml `ldst_units_per_sm`): a warp's memory instruction holds
the L1TEX pipe at least 32 / units clocks (model.schedule.lsu_pipe_clocks). Turing's 16 double what a
one-wavefront 4-byte load or store costs and leave a four-wavefront 16-byte one as it was (CPU)."""
import pytest

from perfmodel import KernelConfig, load_device, predict
from perfmodel.model.schedule import lsu_pipe_clocks, simulate


def _without_units(d):
    return d.model_copy(update={"compute": d.compute.model_copy(update={"ldst_units_per_sm": None})})


def test_clocks_per_memory_instruction():
    assert lsu_pipe_clocks(16) == 2.0 and lsu_pipe_clocks(32) == 1.0 and lsu_pipe_clocks(None) == 1.0
    assert load_device("t4").compute.ldst_units_per_sm == 16 and load_device("rtx2070s").compute.ldst_units_per_sm == 16
    assert load_device("v100").compute.ldst_units_per_sm == 32
    assert load_device("h100-sxm").compute.ldst_units_per_sm is None  # one clock, as a wavefront


def test_a_one_wavefront_load_takes_two_clocks_on_turing():
    # smem_tiled 16 x 16 x 16 and coalesced 16 x 16 on a T4: every shared and global access of theirs is one
    # wavefront (broadcasts, 16 contiguous words), so the pipe's clocks grow (all but the lines the tile loads
    # touch beyond their width) and the prediction falls
    d = load_device("t4")
    for cfg, regs in ((KernelConfig.make("smem_tiled", bm=16, bn=16, bk=16), 39), (KernelConfig.make("coalesced", bm=16, bn=16), 52)):
        two, one = (predict(dev, cfg, 4096, registers=regs) for dev in (d, _without_units(d)))
        assert 1.4 * one.cycles_per_tile["smem"] < two.cycles_per_tile["smem"] <= 2.0 * one.cycles_per_tile["smem"], cfg.label()
        assert two.gflops < 0.95 * one.gflops, cfg.label()


def test_float4_fragments_are_bound_by_the_banks_as_before():
    # double_buffer on the RTX 2070 SUPER reads its fragments with 16-byte loads (four wavefronts each) and stages
    # its tiles with 16-byte global loads: the units change nothing (the README's example)
    d = load_device("rtx2070s")
    for bm in (128, 64):
        cfg = KernelConfig.make("double_buffer", bm=bm)
        two, one = (predict(dev, cfg, 4096) for dev in (d, _without_units(d)))
        assert two.cycles_per_tile["smem"] == one.cycles_per_tile["smem"] and two.gflops == one.gflops


@pytest.mark.parametrize("lds_wavefronts,ratio", [(1.0, 2.0), (4.0, 1.0)])
def test_the_replay_holds_the_pipe_per_instruction(lds_wavefronts, ratio):
    # a loop of one shared load and the FFMA that uses it, 8 warps on the scheduler and 4 on the SM's others:
    # the pipe binds; a one-wavefront load takes it twice as long with 16 units, a four-wavefront one as long
    p = dict(id="t-lsu-SF", cls="SF", wide=[1, 0], deps=[[], [0]])
    one, two = (simulate(p, 8, 8, 1.0, 22, 32, 4, lds_wavefronts, 1.0, 4.0, lsu_pipe=x) for x in (1.0, 2.0))
    assert two == pytest.approx(ratio * one)


def test_predict_says_what_the_units_charge():
    # the one-element kernels' L1 line and the replayed loop's description name the two clocks on Turing, not on Hopper
    from perfmodel.explain import render as explain

    t4 = predict(load_device("t4"), KernelConfig.make("coalesced", bm=16, bn=16), 4096, registers=52)
    assert t4.lsu_pipe_clocks == 2.0 and "holding the pipe at least 2 clocks" in explain(t4)
    assert "4.0, is what smem counts" in explain(t4)  # A's two banked wavefronts and B's one, each at least 2 clocks
    h100 = predict(load_device("h100-sxm"), KernelConfig.make("coalesced", bm=16, bn=16), 4096, registers=52)
    assert h100.lsu_pipe_clocks == 1.0 and "load/store units" not in explain(h100)
