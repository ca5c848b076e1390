"""Occupancy by CUDA's rules (cuda_occupancy.h, CUDA 13.0), vectorised over configs."""
from __future__ import annotations

import numpy as np

LIMITERS = ("warps", "registers", "shared_memory", "blocks")


def _round_up(x, unit):
    return np.ceil(np.asarray(x, dtype=float) / unit) * unit


def occupancy(limits, threads, regs, smem_bytes):
    """Blocks per SM and the limiting resource, exactly as cudaOccMaxActiveBlocksPerMultiprocessor.

    warps:  floor(max_warps / ceil(threads/32));  blocks: max_blocks_per_sm
    registers: regs*32 rounded up to the allocation unit (256) per warp; warps per sub-partition
      = floor((regs_per_sm / 4) / regs_per_warp); blocks = floor(4 * that / warps_per_block)
    shared memory: (smem + reserved per block) rounded up to the granularity; blocks =
      floor(smem_per_sm / that)  (the driver picks the largest carveout when it limits).
    Returns (blocks_per_sm, limiter_index, warps_per_block) as arrays; limiter indexes LIMITERS.
    """
    threads = np.asarray(threads, dtype=float)
    regs = np.asarray(regs, dtype=float)
    smem = np.asarray(smem_bytes, dtype=float)
    warps = np.ceil(threads / 32)
    by_warps = np.floor(limits.max_warps_per_sm / warps)
    by_blocks = np.full_like(warps, float(limits.max_blocks_per_sm))

    sub = limits.register_sub_partitions
    regs_per_warp = _round_up(regs * 32, limits.register_alloc_unit)
    warps_per_sub = np.floor((limits.registers_per_sm / sub) / np.maximum(regs_per_warp, 1))
    by_regs = np.floor(warps_per_sub * sub / warps)
    too_many = (regs > limits.max_registers_per_thread) | (regs_per_warp * _round_up(warps, sub) > limits.registers_per_block)
    by_regs = np.where(too_many, 0.0, by_regs)

    smem_alloc = block_smem_alloc(limits, smem)
    smem_limit = limits.smem_per_block_optin_bytes + limits.smem_reserved_per_block_bytes
    by_smem = np.where(smem > 0, np.floor(limits.smem_per_sm_bytes / np.maximum(smem_alloc, 1)), np.inf)
    by_smem = np.where(smem_alloc > smem_limit, 0.0, by_smem)

    stack = np.stack([by_warps, by_regs, by_smem, by_blocks])
    blocks = stack.min(axis=0)
    # name the first resource that reaches the minimum, preferring registers/smem over caps
    order = np.array([1, 2, 0, 3])
    limiter = order[np.argmin(stack[order], axis=0)]
    return blocks, limiter, warps


def block_smem_alloc(limits, smem_bytes):
    """Shared memory one block takes from an SM: its own plus the reserved bytes, rounded up to the
    allocation unit."""
    return _round_up(np.asarray(smem_bytes, dtype=float) + limits.smem_reserved_per_block_bytes, limits.smem_alloc_unit_bytes)


def register_cap(device, threads):
    """The most registers per thread nvcc gives a kernel with __launch_bounds__(threads): what one block
    leaves per thread in 8-register steps, at most the architecture's limit (the excess spills)."""
    lim_ = device.limits
    return np.minimum(lim_.max_registers_per_thread, np.floor(lim_.registers_per_block / (np.ceil(threads / 32) * 32) / 8) * 8)


def l1_data_bytes(device, smem_bytes, blocks_per_sm):
    """The L1 data cache an SM keeps beside its shared memory, per config. Where L1 and shared memory are
    one array (memory.l1_bytes_per_sm above the largest carveout: Volta and newer) the driver carves
    shared memory out of it in the steps limits.smem_carveout_KB, at least the smallest step that holds
    the blocks the SM can run (blocks_per_sm x block_smem_alloc); L1
    keeps the rest. ncu's launch__shared_mem_config_size on the H100 is that step for every recorded
    launch of one block per SM and one or two steps more for several (results/archive/ncu-*.csv,
    tests/test_occupancy.py), so this is what L1 keeps at most. Where L1 is its own array (Maxwell,
    Pascal) it keeps all of it."""
    lim, mem = device.limits, device.memory
    steps = np.array(sorted(lim.smem_carveout_KB), dtype=float) * 1024
    smem = np.asarray(smem_bytes, dtype=float)
    if mem.l1_bytes_per_sm <= steps[-1]:
        return np.full_like(smem, float(mem.l1_bytes_per_sm))
    need = np.where(smem > 0, block_smem_alloc(lim, smem), 0.0) * np.maximum(np.asarray(blocks_per_sm, dtype=float), 1.0)
    carve = steps[np.minimum(np.searchsorted(steps, need), len(steps) - 1)]
    return np.maximum(mem.l1_bytes_per_sm - carve, 0.0)
