"""Compiler facts on the CPU: register counts, spills and SASS prefetch check (nvcc 13 targets
sm_75+; nvdisasm comes from the nvidia-cuda-nvdisasm wheel of the dev extra)."""
import pytest

from perfmodel import KernelConfig, kernel_ids, load_device, predict
from perfmodel.catalogue import get_kernel, runs_on
from perfmodel.measure import build, sass

needs_nvcc = pytest.mark.skipif(build.find_nvcc() is None, reason="nvcc not installed")
needs_sass = pytest.mark.skipif(not sass.available("9.0"), reason="no sm_90 toolchain or nvdisasm here")

LISTING = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0020*/              @!P2 LDG.E.128.CONSTANT R8, desc[UR4][R2.64] ;
""" + "        /*0030*/                   FFMA R0, R1, R2, R0 ;\n" * 70 + """
        /*0040*/                   STS [R3], R8 ;
        /*0048*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0050*/                   EXIT ;
"""


def test_prefetch_rule_on_a_listing():
    ops = sass.ops(LISTING)
    assert ops[:3] == ["LDC", "BAR.SYNC.DEFER_BLOCKING", "LDG.E.128.CONSTANT"]
    assert sass.prefetch_effective(ops) and sass.prefetch_fraction(ops) == 1.0
    sunk = LISTING.replace("@!P2 LDG.E.128.CONSTANT R8, desc[UR4][R2.64] ;", "NOP ;").replace("STS [R3], R8 ;", "LDG.E.128 R8, desc[UR4][R2.64] ;")
    assert not sass.prefetch_effective(sass.ops(sunk)) and sass.prefetch_fraction(sass.ops(sunk)) == 0.0


@needs_nvcc
@pytest.mark.parametrize("kernel,arch", [(k, a) for k in kernel_ids() for a in ("7.5", "8.0", "9.0")
                                         if runs_on(get_kernel(k), a)])
def test_default_kernels_compile_without_spills(kernel, arch):
    u = build.resource_usage(KernelConfig.make(kernel), arch)
    assert u["spill_stores"] == 0 and u["spill_loads"] == 0, u
    assert 16 <= u["registers"] <= 255
    assert u["smem_bytes"] == KernelConfig.make(kernel).smem_bytes


@needs_sass
def test_compiler_decides_whether_double_buffering_prefetches():
    # sm_90, nvcc 13: bk=8 keeps the loads of the next tile above the FFMAs (128 registers);
    # bk=16 needs 161 registers and nvcc sinks the loads below them: no prefetch left (ncu agreed:
    # long-scoreboard stalls appear only for bk=16)
    assert sass.sass_facts(KernelConfig.make("double_buffer"), "9.0")["prefetch"] is True
    assert sass.sass_facts(KernelConfig.make("double_buffer", bk=16), "9.0")["prefetch"] is False


def test_launch_bounds_cap_replaces_impossible_occupancy():
    # 1024 threads x estimated 112 registers cannot launch; __launch_bounds__ makes nvcc cap at
    # 65536 / 1024 = 64 registers and spill the rest, so the model predicts a slow kernel, not zero
    dev = load_device("h100-sxm")
    cfg = KernelConfig.make("tiled_2d", bm=256, bn=256, bk=8, tm=8, tn=8)
    assert cfg.threads == 1024 and cfg.estimated_registers() > 64
    p = predict(dev, cfg, 4096)
    assert p.resources.registers_per_thread == 64 and p.occupancy.blocks_per_sm == 1
    assert 0 < p.gflops < predict(dev, KernelConfig.make("tiled_2d"), 4096).gflops


LOOP = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   LDL.128 R4, [R1+0x10] ;
""" + "        /*0020*/                   FFMA R0, R1, R2, R0 ;\n" * 16 + """
        /*0030*/                   STL.64 [R1+0x20], R6 ;
        /*0040*/                   LDL R8, [R1+0x30] ;
        /*0050*/              @P0 BRA `(.L_x_1) ;
.L_x_2:
""" + "        /*0060*/                   FFMA R0, R1, R2, R0 ;\n" * 4 + """
        /*0070*/                   BRA `(.L_x_2) ;
        /*0080*/                   EXIT ;
"""


def test_main_loop_and_its_local_bytes_on_a_listing():
    loop = sass.main_loop(LOOP)
    # the loop with the most FFMAs (16, not the 4 of the second one); 16 + 4 B loaded, 8 B stored
    assert loop == dict(loop_ffma=16, loop_instructions=20, loop_local_bytes=16 + 8 + 4)
    cfg = KernelConfig.unchecked("tiled_2d", bm=16, bn=16, bk=4, tm=2, tn=2)  # 2*2*4 = 16 FFMAs per thread per tile
    assert sass.local_bytes_per_tile(loop, cfg) == 28
    cfg2 = KernelConfig.unchecked("tiled_2d", bm=16, bn=16, bk=4, tm=1, tn=2)  # 8 per tile: the loop holds two tiles
    assert sass.local_bytes_per_tile(loop, cfg2) == 14
    assert sass.local_bytes_per_tile(None, cfg) is None


@needs_sass
def test_spilling_config_local_traffic_from_its_sass():
    """tiled_2d 128x32x64, 8x16 on sm_90: one warp per block, 255 registers and a spilled frame; its
    k-tile loop (8,192 FFMAs, one tile) reloads ~2 KB of the frame per thread per tile, stores none."""
    cfg = KernelConfig.make("tiled_2d", bm=128, bn=32, bk=64, tm=8, tn=16)
    facts = sass.sass_facts(cfg, "9.0")
    assert facts["loop_ffma"] == 8 * 16 * 64
    per_tile = sass.local_bytes_per_tile(facts, cfg)
    assert 1000 < per_tile < 4000
    # a config without spills moves no local bytes in its loop
    ok = sass.sass_facts(KernelConfig.make("double_buffer"), "9.0")
    assert ok["loop_local_bytes"] == 0 and ok["loop_ffma"] == 8 * 8 * 8
