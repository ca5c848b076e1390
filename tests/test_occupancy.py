"""Occupancy pinned to hand-worked cases from CUDA's rules (cuda_occupancy.h, CUDA 13.0)."""
import numpy as np
import pytest

from perfmodel import load_device
from perfmodel.model.occupancy import LIMITERS, occupancy


def occ(dev, threads, regs, smem):
    b, lim, _ = occupancy(load_device(dev).limits, np.array([threads]), np.array([regs]), np.array([smem]))
    return int(b[0]), LIMITERS[int(lim[0])]


@pytest.mark.parametrize("dev, threads, regs, smem, blocks, limiter", [
    # CC 9.0: 128 regs x 32 = 4096 per warp; 16384 per sub-partition -> 4 warps x 4 = 16 warps -> 2 blocks of 8 warps (25 %)
    ("h100-sxm", 256, 128, 16384, 2, "registers"),
    # 127 regs -> 4064 rounds up to 4096: same as 128
    ("h100-sxm", 256, 127, 16384, 2, "registers"),
    # 40 regs -> 1280/warp -> 12 warps/sub -> 48 warps -> 6 blocks; smem (48 KB + 1 KB reserved) -> 233472/50176 = 4
    ("h100-sxm", 256, 40, 49152, 4, "shared_memory"),
    # CC 8.0: 64 regs x 1024 threads -> 2048/warp -> 8/sub -> 32 warps -> 1 block
    ("a100", 1024, 64, 0, 1, "registers"),
    # CC 8.0: smem 80000 + 1024 reserved = 81024 (multiple of 128) -> 167936 / 81024 = 2
    ("a100", 128, 32, 80000, 2, "shared_memory"),
    # CC 8.0: 1024 threads x 72 regs = 73728 > 65536 registers per block -> does not launch
    ("a100", 1024, 72, 0, 0, "registers"),
    # CC 7.5: 256 threads x 32 regs: warps cap 32/8 = 4 blocks (100 %)
    ("rtx2070s", 256, 32, 0, 4, "warps"),
    # CC 7.5: 32 KB smem -> 65536 / 32768 = 2 blocks
    ("rtx2070s", 256, 32, 32768, 2, "shared_memory"),
    # CC 7.0: 255 regs -> 8160 -> 8192/warp -> 2 warps/sub -> 8 warps -> 2 blocks of 4 warps
    ("v100", 128, 255, 0, 2, "registers"),
    # CC 6.1: 48 regs -> 1536/warp -> 10 warps/sub -> 40 warps -> 5 blocks of 8
    ("gtx1060m", 256, 48, 0, 5, "registers"),
    # CC 5.0: 20 KB smem, 256 B granularity -> 65536 / 20480 = 3 blocks
    ("k620", 64, 16, 20480, 3, "shared_memory"),
    # CC 5.0: 32 threads, few regs, no smem -> capped at 32 blocks per SM
    ("k620", 32, 16, 0, 32, "blocks"),
])
def test_occupancy_hand_worked(dev, threads, regs, smem, blocks, limiter):
    assert occ(dev, threads, regs, smem) == (blocks, limiter)


def test_vectorised_equals_scalar():
    lim = load_device("h100-sxm").limits
    t = np.array([256, 128, 1024]); r = np.array([128, 255, 32]); s = np.array([16384, 0, 0])
    b, _, _ = occupancy(lim, t, r, s)
    assert [occ("h100-sxm", *x)[0] for x in zip(t, r, s)] == list(b.astype(int))
