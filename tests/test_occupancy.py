"""Occupancy pinned to hand-worked cases from CUDA's rules (cuda_occupancy.h, CUDA 13.0)."""
import numpy as np
import pytest

from perfmodel import load_device
from perfmodel.model.occupancy import LIMITERS, l1_data_bytes, occupancy


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


@pytest.mark.parametrize("dev, smem, blocks, l1", [
    # CC 9.0 (256 KB of L1 and shared memory): 4 x (34,944 + 1,024 reserved) = 143,872 B -> the 164 KB step -> 92 KB left
    ("h100-sxm", 34944, 4, 256 * 1024 - 164 * 1024),
    # the same block, 2 per SM: 71,936 B -> 100 KB -> 156 KB left
    ("h100-sxm", 34944, 2, 256 * 1024 - 100 * 1024),
    # no shared memory: the 0 KB step, all 256 KB for L1
    ("h100-sxm", 0, 8, 256 * 1024),
    # exactly a step: 2 x (31,744 + 1,024) = 64 KB -> the 64 KB step itself
    ("h100-sxm", 31744, 2, 256 * 1024 - 64 * 1024),
    # CC 7.5 (96 KB, carveouts 32 or 64 KB): the smallest step is 32 KB even without shared memory
    ("rtx2070s", 0, 4, 64 * 1024),
    # CC 6.1: L1 is its own 24 KB array, shared memory another
    ("gtx1060m", 49152, 2, 24 * 1024),
])
def test_l1_keeps_what_the_shared_memory_carveout_leaves(dev, smem, blocks, l1):
    assert l1_data_bytes(load_device(dev), np.array([smem]), np.array([blocks]))[0] == l1


def _ncu_launches():
    """Every launch ncu recorded on the H100 with its driver-chosen shared-memory configuration."""
    import csv
    from pathlib import Path
    out = []
    for f in sorted((Path(__file__).resolve().parents[1] / "results" / "archive").glob("ncu-*-h100-sxm.csv")):
        lines = f.read_text().splitlines()
        start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
        if start is None:
            continue
        rows = list(csv.reader(lines[start:]))
        head = rows[0]
        for row in rows[2:]:
            d = dict(zip(head, row))
            if "launch__shared_mem_config_size" not in d:
                continue
            num = lambda k: int(float(d[k].replace(",", "")))
            out.append((f.name, num("launch__block_size"), num("launch__registers_per_thread"),
                        num("launch__shared_mem_per_block_static"), num("launch__shared_mem_config_size")))
    return out


def test_the_driver_carves_at_least_the_step_the_blocks_need():
    """On the H100 the driver's shared-memory configuration (ncu launch__shared_mem_config_size) is never
    below the smallest carveout step holding the blocks an SM can run, and is that step wherever one
    block runs per SM; l1_data_bytes keeps the rest for L1, an upper bound where the driver takes more."""
    dev = load_device("h100-sxm")
    launches = _ncu_launches()
    assert len(launches) >= 20
    one_block = 0
    for name, threads, regs, smem, config in launches:
        b, _, _ = occupancy(dev.limits, np.array([threads]), np.array([regs]), np.array([smem]))
        carve = dev.memory.l1_bytes_per_sm - l1_data_bytes(dev, np.array([smem]), b)[0]
        assert carve <= config, (name, threads, regs, smem)
        if b[0] == 1:
            one_block += 1
            assert carve == config, (name, threads, regs, smem)
    assert one_block >= 5
