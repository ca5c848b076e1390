import pytest

from perfmodel import KernelConfig, UserError, kernel_ids, load_device
from perfmodel.catalogue import runs_on

LADDER = ["naive", "coalesced", "smem_tiled", "tiled_1d", "tiled_2d", "tiled_2d_float4",
          "bank_conflict_free", "double_buffer", "warp_tiled", "split_k", "async_pipeline", "coalesced_split_k",
          "split_k_fused"]


def test_manifest_names_the_fixed_ladder_in_order():
    assert kernel_ids() == LADDER


@pytest.mark.parametrize("kernel", LADDER)
def test_defaults_are_valid_everywhere(kernel):
    cfg = KernelConfig.make(kernel)
    for dev in ("k620", "gtx1060m", "rtx2070s", "v100", "a100", "h100-sxm", "h200"):
        d = load_device(dev)
        if runs_on(cfg.spec, d.compute_capability):  # else refused as not applicable (tests/test_async_pipeline.py)
            assert cfg.device_violations(d) == []


def test_seed_004_parameters():
    # [gemm-optimisation-2]: bm=bn=128, bk=8, rm=rn=8 -> 128*128/64 = 256 threads; double-buffered smem
    # 2 x (128*8 + 8*128) x 4 B = 16384 B
    cfg = KernelConfig.make("double_buffer", bm=128, bn=128, bk=8, tm=8, tn=8)
    assert cfg.threads == 256
    assert cfg.smem_bytes == 16384


def test_seed_002_register_estimate():
    # [gemm-theory] eq. 9: regs = tm + tn + tm*tn + 32 = 8 + 8 + 64 + 32 = 112 for a scalar 8x8 tile
    assert KernelConfig.make("tiled_2d", tm=8, tn=8).estimated_registers() == 112


def test_warp_tiled_structure():
    cfg = KernelConfig.make("warp_tiled")  # 128x128, warps 64x64, tm=8, tn=4, wn_iter=4
    assert cfg.threads == (128 // 64) * (128 // 64) * 32
    assert cfg.wm_iter == 64 * 64 // (32 * 8 * 4 * 4)


@pytest.mark.parametrize("kernel, params, fragment", [
    ("tiled_2d", dict(bm=96, tm=8, tn=8), "bk*bn=1024 is not a multiple of vector width*threads=1*192"),
    ("tiled_2d", dict(bm=48, bn=48, bk=8, tm=4, tn=4), "threads per block = 144 is not a multiple of 32"),
    ("tiled_2d", dict(bm=100), "bm=100 is not a multiple of tm=8"),
    ("tiled_2d", dict(bm=256, bn=256, tm=2, tn=2), "exceeds 1024"),
    ("tiled_2d_float4", dict(bk=6), "whole vectors"),
    ("tiled_2d_float4", dict(tn=2, bn=64), "not a multiple of 4"),
    ("bank_conflict_free", dict(tm=4), "tm=4 is not a multiple of 8"),
    ("warp_tiled", dict(wn_iter=8), "32*tm*tn*wn_iter"),
    ("warp_tiled", dict(wm=48), "bm=128 is not a multiple of wm=48"),
    ("smem_tiled", dict(bm=32, bn=16, bk=32), "bm = bn = bk"),
    ("tiled_1d", dict(tn=4), "takes no parameter tn"),
    ("nonesuch", {}, "kernel ids:"),
])
def test_each_violation_is_named(kernel, params, fragment):
    with pytest.raises(UserError) as e:
        KernelConfig.make(kernel, **params)
    assert fragment in str(e.value)


def test_shared_memory_limit_is_checked_against_device():
    cfg = KernelConfig.make("double_buffer", bm=256, bn=256, bk=16, tm=16, tn=16)  # 2 x 8192 x 4 x 2 = 64 KB
    problems = dict(cfg.device_violations(load_device("h100-sxm")))
    assert "smem_per_block" in problems
