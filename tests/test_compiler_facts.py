"""Compiler facts on the CPU: register counts, spills and SASS prefetch check (nvcc 13 targets
sm_75+; nvdisasm comes from the nvidia-cuda-nvdisasm wheel of the dev extra)."""
import pytest

from perfmodel import KernelConfig, kernel_ids, load_device, predict
from perfmodel.measure import build, sass

needs_nvcc = pytest.mark.skipif(build.find_nvcc() is None, reason="nvcc not installed")
needs_sass = pytest.mark.skipif(not sass.available(), reason="nvcc or nvdisasm not installed")

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
@pytest.mark.parametrize("arch", ["7.5", "8.0", "9.0"])
@pytest.mark.parametrize("kernel", kernel_ids())
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
