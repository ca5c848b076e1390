"""From (DeviceSpec, KernelConfig, M, N, K) to a typed `Prediction`; `predict_batch` for sweeps."""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Optional, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..catalogue import KernelConfig, edge_blocks, split_slices
from ..devices import DeviceSpec
from ..errors import UserError
from ..facts import ESTIMATED, BuildFacts, given
from . import terms as T
from . import uncertainty as U
from .figures import Figures
from .gstores import c_store_ratio
from .occupancy import LIMITERS, l1_data_bytes, occupancy, register_cap
from .schedule import compute_cycles_per_tile, fp32_pipe_clocks, global_load_waits, lds_split, load_use_window, lsu_pipe_clocks
from .smem_banks import read_groups, smem_counts, smem_counts_many

REASONS = {
    "fma": "the FP32 FMA pipe is saturated: tiles, occupancy and issue all keep up",
    "issue": "warp schedulers are full: non-FFMA instructions (loads, address math, barriers) take issue slots from FFMA",
    "smem": "shared-memory/L1 wavefronts (bank conflicts, uncoalesced lines) are the busiest pipe",
    "l2": "L2->SM bandwidth: the block tile is too small to reuse data enough",
    "dram": "DRAM bandwidth: arithmetic intensity against DRAM is below the ridge point",
    "local": "local memory: spilled registers or arrays the compiler put in local memory dominate the traffic",
    "latency": "latency is exposed: too few resident blocks or no prefetch to hide global-load latency",
    "fixed": "launch and fixed costs: the problem is too small for the tiles (most of each block's work is its first "
             "load or padding beyond the problem), so no pipe is what limits it",
}
BOUNDS = T.BOUNDS  # what PredictionBatch.bound indexes
ONE_ELEMENT_UNROLL = 4  # k steps of loads the naive and coalesced k loops issue before a wait, where the binary is not known (a lower bound)


def one_element_steps(fig: Figures, r: "ResourceStage", builds: Sequence[BuildFacts]) -> tuple[np.ndarray, np.ndarray]:
    """Per config, the k steps of loads a warp of a one-element kernel (naive, coalesced) issues for each time
    it waits for them: the k steps of its binary's loop (one FFMA a k step) over the loop's global-load waits
    (schedule.global_load_waits). nvcc 13.0 unrolls these loops 16 times; for sm_75, sm_86 and sm_89 it issues
    the 32 loads before the first FFMA (16 k steps a wait), for sm_80 and sm_90 in three batches between the
    FFMAs (16/3). Checked on Hopper, whose figures are measured (the H100 and H200 shape runs' coalesced points,
    docs/model.md "One-element kernels: the waits of the binary's loop"); with datasheet figures (a generation
    nobody measured here) and where the binary's loop is not known, ONE_ELEMENT_UNROLL, the lower bound: the
    published measurements of such kernels on A100s and an RTX 4090 are slower than even that predicts. The
    tiled kernels get ONE_ELEMENT_UNROLL too (not used there). Returns (steps, whether they are the binary's)."""
    out, known = np.full(len(builds), float(ONE_ELEMENT_UNROLL)), np.zeros(len(builds), bool)
    if not fig.calibrated:
        return out, known
    for k, b in enumerate(builds):
        waits = None if r.uses_smem[k] > 0 else global_load_waits(b.program)
        if waits:
            out[k], known[k] = b.program["cls"].count("F") / waits, True
    return out, known


def _structure(cfg: KernelConfig) -> tuple:
    """Per-config counts the terms need (the only per-config Python work; cached)."""
    s = cfg.spec
    thr = cfg.threads
    warps = thr / 32
    if s.uses_smem:
        lds_i, lds_w, sts_i, sts_w = smem_counts(cfg)
        if s.staging == "async":  # cp.async writes shared memory (the wavefronts count) from its LDGSTS, counted as ldg
            sts_i = 0.0
        vec = 1 if cfg.ragged == "inner" else cfg.gmem_vector  # the scalar inner body's unchecked loads
        ldg = (cfg.bm * cfg.bk + cfg.bk * cfg.bn) / (vec * thr)
        l1_w = 0.0
        bk = cfg.bk
    else:  # one k step per "tile"; its loads go through L1, counted per problem by l1_lines_stage
        lds_i = lds_w = sts_i = sts_w = 0.0
        ldg = 2.0
        bk = 1
        l1_w = 0.0
    ffma = cfg.bm * cfg.bn * bk / thr
    return (thr, cfg.bm, cfg.bn, bk, ffma, lds_i, lds_w + sts_w + l1_w, sts_i, ldg, cfg.barriers_per_tile,
            cfg.buffers, float(s.uses_smem), (lds_i / max(warps, 1)) / bk, lds_w / max(lds_i, 1e-9) if lds_i else 1.0,
            ldg_returns(cfg))


def _pipe_clocks(cfg: KernelConfig, lsu: float) -> float:
    """A block's shared loads' and stores' clocks of the L1TEX pipe per k-tile where a warp's memory instruction
    holds it at least `lsu` clocks (schedule.lsu_pipe_clocks): each instruction the larger of its wavefronts
    and lsu (smem_counts' wavefronts per instruction of each kind); cp.async's shared writes are its LDGSTS
    (counted with the global loads), so their wavefronts stand alone."""
    if not cfg.spec.uses_smem:
        return 0.0
    lds_i, lds_w, sts_i, sts_w = smem_counts(cfg)
    if cfg.spec.staging == "async":
        return max(lds_w, lsu * lds_i) + sts_w
    return max(lds_w, lsu * lds_i) + max(sts_w, lsu * sts_i)


def ffma_per_thread_per_tile(cfg: KernelConfig) -> float:
    """FFMAs one thread issues per k-tile (per k step for the kernels without shared memory): a binary's
    k-tile loop that holds fewer is an inner loop (issue_stage does not replay it)."""
    return float(_structure(cfg)[4])


@dataclass(frozen=True)
class Problem:
    """C (M x N) = A (M x K) . B (K x N); ints, or arrays with one entry per config."""

    M: object
    N: object
    K: object

    def __post_init__(self):
        for nm in ("M", "N", "K"):
            v = np.asarray(getattr(self, nm))
            if v.size and (np.any(v < 1) or np.any(np.floor(v) != v)):
                raise UserError(f"{nm}={getattr(self, nm)} must be a positive integer")

    def arrays(self, n: int):
        return tuple(np.broadcast_to(np.asarray(x, dtype=float), (n,)) for x in (self.M, self.N, self.K))


# ---- the stages: each a function of the earlier ones, each result a typed record ----------------
@dataclass(frozen=True)
class ResourceStage:
    """Per block: threads, shared memory; per thread: registers and local frame (compiler's or
    estimated); the kernel structure's per-tile counts (_structure)."""

    threads: np.ndarray
    registers: np.ndarray
    smem_bytes: np.ndarray
    local_bytes: np.ndarray
    bm: np.ndarray
    bn: np.ndarray
    bk: np.ndarray
    ffma_per_thread: np.ndarray
    lds_block: np.ndarray
    smem_wavefronts_block: np.ndarray
    sts_block: np.ndarray
    ldg_per_thread: np.ndarray
    barriers: np.ndarray
    buffers: np.ndarray
    uses_smem: np.ndarray
    lds_per_step: np.ndarray
    wavefronts_per_lds: np.ndarray
    ldg_returns: np.ndarray  # data-stage wavefronts a warp's global loads of a k-tile take beyond their width (ldg_returns)
    c_store_ratio: np.ndarray  # sector bytes the C stores move per byte of C (model.gstores; after edge_stage, all blocks')
    splits: np.ndarray  # slices of K asked for (split_k; 1 for the others)
    # the smem-less kernels' warp loads per k step (l1_lines_stage; NaN for the others): distinct 128-byte
    # lines (A's rows and the B line) and the most words of A in one bank (+1 for the B line)
    l1_lines: Optional[np.ndarray] = None
    l1_bank_wavefronts: Optional[np.ndarray] = None
    c_store_ratio_scalar: Optional[np.ndarray] = None  # the same on the edge and scalar inner bodies' path (scalar stores)


def resources(device, configs: Sequence[KernelConfig], builds: Sequence[BuildFacts]) -> ResourceStage:
    """Resources per config. Without the compiler's count, registers are estimated: __launch_bounds__(threads)
    makes nvcc fit one block, so they are capped at what the register file leaves per thread (8-register
    steps) and the excess spills (4 B each)."""
    n = len(configs)
    smem_counts_many(configs)  # one vectorised bank-conflict simulation for all new configs
    st = np.array([_structure(c) for c in configs], dtype=float).reshape(n, -1).T
    thr, bm, bn, bk, ffma_t, lds_i, smem_w, sts_i, ldg_t, bars, bufs, uses_smem, lds_per_step, wf_per_lds, returns = st
    lsu = lsu_pipe_clocks(device.compute.ldst_units_per_sm)
    if lsu > 1.0:  # each shared load and store holds the pipe at least lsu clocks (schedule.lsu_pipe_clocks)
        smem_w = np.array([_pipe_clocks(c, lsu) for c in configs], dtype=float)
    smem = np.array([c.smem_bytes for c in configs], dtype=float)
    local = np.array([float(b.local_bytes) for b in builds])
    known = np.array([b.registers is not None for b in builds], dtype=bool)
    given = np.array([float(b.registers) if b.registers is not None else 0.0 for b in builds])
    if not known.all():
        est = np.array([c.estimated_registers() for c in configs], dtype=float)
        cap = register_cap(device, thr)
        regs_est = np.minimum(est, cap)
        regs = np.where(known, given, regs_est)
        local = np.where(known, local, np.maximum(local, 4.0 * (est - regs_est)))
    else:
        regs = given
    return ResourceStage(threads=thr, registers=regs, smem_bytes=smem, local_bytes=local, bm=bm, bn=bn, bk=bk,
                         ffma_per_thread=ffma_t, lds_block=lds_i, smem_wavefronts_block=smem_w, sts_block=sts_i,
                         ldg_per_thread=ldg_t, barriers=bars, buffers=bufs, uses_smem=uses_smem, lds_per_step=lds_per_step,
                         wavefronts_per_lds=wf_per_lds, ldg_returns=returns, c_store_ratio=np.array([c_store_ratio(c) for c in configs]),
                         c_store_ratio_scalar=np.array([c_store_ratio(c, scalar=True) for c in configs]),
                         splits=np.array([float(c.k_splits) for c in configs]))


@dataclass(frozen=True)
class OccupancyStage:
    blocks_per_sm: np.ndarray
    limiter: np.ndarray  # index into LIMITERS
    warps_per_block: np.ndarray
    occupancy: np.ndarray  # resident warps / the SM's maximum


def occupancy_stage(device, r: ResourceStage) -> OccupancyStage:
    """CUDA's occupancy rules (occupancy.occupancy) on the resources."""
    b, limiter, warps = occupancy(device.limits, r.threads, r.registers, r.smem_bytes)
    return OccupancyStage(blocks_per_sm=b, limiter=limiter, warps_per_block=warps,
                          occupancy=b * warps / device.limits.max_warps_per_sm)


@dataclass(frozen=True)
class TrafficStage:
    blocks: np.ndarray
    ktiles: np.ndarray
    flops: np.ndarray
    l2_bytes: np.ndarray
    dram_bytes: np.ndarray
    smem_bytes: np.ndarray  # bytes the shared-memory pipe moves (wavefronts x 128 B)
    l2_bytes_tile: np.ndarray  # per block per k-tile
    dram_bytes_tile: np.ndarray
    mem_latency: np.ndarray  # average global-load latency (cycles)
    l2_hit: np.ndarray
    slices: np.ndarray  # the grid's slices of K (catalogue.split_slices; 1 but for split_k)
    dram_rate: np.ndarray  # the share of the DRAM stream rate its reads get (terms.dram_walk_rate; 1: the stream's)
    dram_segment_bytes: np.ndarray  # the bytes of each A row one k-tile reads (bk x 4, at least a sector)
    dram_latency: np.ndarray  # the DRAM latency the mix takes (cycles): the pointer chase, loaded for A's share (terms.loaded_dram_latency)
    dram_lines_in_flight: np.ndarray  # the resident blocks' DRAM lines of one k-tile per SM, that loading's key
    l2_latency: np.ndarray  # the L2 hits' latency the mix takes (cycles): first and second reads (terms.tile_l2_latency)
    second_share: np.ndarray  # the share of the tile bytes that are second reads (terms.second_read_share)
    # what writing back the flush's dirty lines costs the kernel's DRAM traffic (terms.flush_writeback_us): microseconds
    # in all (0 where nobody measured it or terms.FLUSH_WRITEBACK is off), and the bus's floor under the dram term
    # per block per k-tile: the kernel's reads and that write-back on the one bus (terms.dram_bus_bytes)
    writeback_us: np.ndarray
    dram_bus_bytes_tile: np.ndarray
    # the share of the tile loads that wait the loaded DRAM latency: A's share of the DRAM bytes, of the loads DRAM serves
    # (all of them in a grid of one wave, else the L2's misses), where the device measured that latency; else 0
    dram_a_loaded: np.ndarray


def traffic(device, r: ResourceStage, o: OccupancyStage, M, N, K) -> TrafficStage:
    """Bytes per level (terms.l2_to_sm_bytes with the sector bytes of the kernel's C stores,
    terms.dram_bytes with the blocks running at once) and the average global-load latency the loads'
    L2 hit rate gives (terms.mem_latency), DRAM's where all blocks run in one wave (terms.one_wave_latency),
    and the share of the DRAM stream rate those bytes get, A's coming as a walk of bk x 4-byte row segments
    (terms.dram_walk_rate, memory.dram_row_segment_efficiency where it was measured).
    split_k: each of its s slices of K is a GEMM of M x N x K/s in the same grid (s times the blocks, the
    slice's k-tiles each), which writes a partial C: s partials of C in the L2 and DRAM traffic."""
    mem, lat = device.memory, device.latency
    _, _, blocks, _ = T.grid(M, N, K, r.bm, r.bn, r.bk)
    slices, ktiles = split_slices(K, r.bk, r.splits)
    blocks = blocks * slices
    conc = np.minimum(blocks, o.blocks_per_sm * device.compute.sm_count)
    l2b = T.l2_to_sm_bytes(M, N, K, r.bm, r.bn, r.c_store_ratio * slices)
    drb = slices * T.dram_bytes(M, N, K / slices, r.bm, r.bn, conc, mem.l2_bytes)
    a_share = T.dram_a_share(M, N, K / slices, r.bm, r.bn, conc, mem.l2_bytes)
    segment = np.maximum(T.FLOAT * r.bk, T.SECTOR_BYTES)  # the bytes of each A row a k-tile reads, at least a sector
    rate = T.dram_walk_rate(a_share, segment, mem.dram_row_segment_efficiency)
    tiles_total = np.maximum(blocks * ktiles, 1)
    sms = device.compute.sm_count
    resident = np.minimum(np.maximum(o.blocks_per_sm, 1), np.ceil(blocks / sms))  # blocks an SM runs at once
    lines = resident * (drb / tiles_total) / T.WAVEFRONT_BYTES
    L_load = T.loaded_dram_latency(lat.dram_latency_cycles, lines, lat.dram_latency_ratio_by_lines_in_flight)
    # A's k-tile walk (short segments of many rows, as the measurement's warps each walk a region of their own)
    # waits the loaded latency; B's (neighbouring blocks reading neighbouring segments of the same rows) streams
    L_dram = lat.dram_latency_cycles + a_share * (L_load - lat.dram_latency_cycles)
    # the L2 hits of tile loads: first reads, and (with T.SECOND_READS, off) second reads of the lines earlier waves
    # read (tile_l2_latency)
    second = T.second_read_share(M, N, r.bm, r.bn, conc) * T.SECOND_READS
    L_l2 = T.tile_l2_latency(lat, second)
    L_mem, hit = T.mem_latency(drb, T.l2_to_sm_bytes(M, N, K, r.bm, r.bn, slices), L_l2, L_dram)
    L_mem = T.one_wave_latency(L_mem, L_dram, blocks, np.maximum(o.blocks_per_sm, 1) * sms)
    # the flush's dirty lines that the kernel's reads evict (its C stores' evictions are its C bytes in drb already)
    read_bytes = np.maximum(drb - slices * T.FLOAT * M * N, 0.0)
    wb_us = T.flush_writeback_us(read_bytes, mem.flush_writeback_us_by_MiB) * T.FLUSH_WRITEBACK
    bus = T.dram_bus_bytes(drb / rate, wb_us * 1e-6 * mem.dram_bandwidth_GBps * 1e9, blocks, sms)
    return TrafficStage(blocks=blocks, ktiles=ktiles, flops=2.0 * M * N * K, l2_bytes=l2b, dram_bytes=drb,
                        smem_bytes=r.smem_wavefronts_block * tiles_total * T.WAVEFRONT_BYTES,
                        l2_bytes_tile=l2b / tiles_total, dram_bytes_tile=drb / tiles_total, mem_latency=L_mem, l2_hit=hit,
                        slices=slices, dram_rate=np.broadcast_to(rate, np.shape(drb)),
                        dram_segment_bytes=np.broadcast_to(segment, np.shape(drb)),
                        dram_latency=np.broadcast_to(L_dram, np.shape(drb)), dram_lines_in_flight=np.broadcast_to(lines, np.shape(drb)),
                        l2_latency=np.broadcast_to(L_l2, np.shape(drb)), second_share=np.broadcast_to(second, np.shape(drb)),
                        writeback_us=np.broadcast_to(wb_us, np.shape(drb)), dram_bus_bytes_tile=bus / tiles_total,
                        dram_a_loaded=np.broadcast_to(a_share * bool(lat.dram_latency_ratio_by_lines_in_flight) * np.where(
                            T.one_wave(blocks, np.maximum(o.blocks_per_sm, 1) * sms), 1.0, 1.0 - hit), np.shape(drb)))


@dataclass(frozen=True)
class IssueStage:
    """Warp instructions per block per k-tile by kind; `programs`/`has_program`/`tiles_per_pass`: the
    binary's k-tile loop where known (a loop with less than a tile of FFMAs is an inner loop: not used)."""

    ffma: np.ndarray
    lds: np.ndarray
    sts: np.ndarray
    ldg: np.ndarray
    bar: np.ndarray
    other: np.ndarray
    non_ffma: np.ndarray
    issue: np.ndarray
    programs: list
    has_program: np.ndarray
    tiles_per_pass: np.ndarray


def issue_stage(r: ResourceStage, o: OccupancyStage, builds: Sequence[BuildFacts]) -> IssueStage:
    """terms.issue_counts; with the binary's loop its non-FFMA instructions replace the estimated
    integer and branch work."""
    ffma, lds, sts, ldg, bar, other = T.issue_counts(r.threads, r.ffma_per_thread, r.lds_block, r.sts_block,
                                                     r.ldg_per_thread, r.barriers, r.buffers, r.uses_smem)
    warps = o.warps_per_block
    progs = [b.program for b in builds]
    tiles_pp = np.array([(p["cls"].count("F") / f) if p and uses and f > 0 else np.nan
                         for p, uses, f in zip(progs, r.uses_smem, r.ffma_per_thread)])
    has_prog = np.isfinite(tiles_pp) & (tiles_pp >= 0.99)
    if has_prog.any():
        nonf = np.array([(len(p["cls"]) - p["cls"].count("F")) if ok else 0.0 for p, ok in zip(progs, has_prog)])
        other = np.where(has_prog, np.maximum(0.0, nonf / np.where(has_prog, tiles_pp, 1.0) * warps - (lds + sts + ldg + bar)),
                         other)
    non_ffma = lds + sts + ldg + bar + other
    return IssueStage(ffma=ffma, lds=lds, sts=sts, ldg=ldg, bar=bar, other=other, non_ffma=non_ffma, issue=ffma + non_ffma,
                      programs=progs, has_program=has_prog, tiles_per_pass=tiles_pp)


@dataclass(frozen=True)
class LittlesLawStage:
    """Per SM and level: parallelism needed (latency x throughput), available, and the fraction of
    the ceiling that is achievable (terms.littles_law)."""

    needed: T.Fractions
    available: T.Fractions
    fraction: T.Fractions
    l2_bytes_per_clock: np.ndarray  # the SM's share of the L2 bandwidth
    dram_bytes_per_clock: np.ndarray
    tile_bytes: np.ndarray  # one block's A and B tile
    load_steps: np.ndarray  # one-element kernels: the k steps of loads a warp issues for each wait (one_element_steps)
    load_steps_binary: np.ndarray  # and whether that is the binary's loop's count


def littles_law_stage(device, r: ResourceStage, o: OccupancyStage, hz, steps=(ONE_ELEMENT_UNROLL, False)) -> LittlesLawStage:
    """FMA pipe: each warp's independent accumulators; shared memory: each warp's independent loads
    of a k step, each as many wavefronts as its bank conflicts make it; L2 / DRAM: the resident
    blocks' tile bytes in flight."""
    cmp_, mem, lat = device.compute, device.memory, device.latency
    sms = cmp_.sm_count
    b, warps = o.blocks_per_sm, o.warps_per_block
    l2_bpc = mem.l2_bandwidth_GBps * 1e9 / hz / sms
    dram_bpc = mem.dram_bandwidth_GBps * 1e9 / hz / sms
    tile_bytes = (r.bm + r.bn) * r.bk * T.FLOAT
    # one-element kernels: each warp's k loop issues `steps` k steps' loads (one_element_steps) before its FFMAs
    # wait, each step a new 128-byte line (coalesced: the B row segment of the warp's 32 columns; naive_rows:
    # its 32 rows of A, a line each, each line serving 32 k steps)
    steps, known = steps
    inflight_bytes = np.where(r.uses_smem > 0, b * tile_bytes, b * warps * steps * T.WAVEFRONT_BYTES)
    need_l2 = l2_bpc * lat.l2_latency_cycles
    need_dram = dram_bpc * lat.dram_latency_cycles
    need_fma = lat.fma_latency_cycles * (cmp_.fp32_lanes_per_sm / 32.0)
    avail_fma = b * warps * np.minimum(r.bm * r.bn / r.threads, need_fma)
    need_smem = lat.smem_latency_cycles * (mem.smem_bandwidth_bytes_per_clock_per_sm / T.WAVEFRONT_BYTES)
    avail_smem = np.where(r.uses_smem > 0, b * warps * np.maximum(r.lds_per_step, 1.0) * np.maximum(r.wavefronts_per_lds, 1.0),
                          need_smem)
    needed = T.Fractions(fma=need_fma, smem=need_smem, l2=need_l2, dram=need_dram)
    available = T.Fractions(fma=avail_fma, smem=avail_smem, l2=inflight_bytes, dram=inflight_bytes)
    fraction = T.Fractions(**{k: T.littles_law(getattr(needed, k), getattr(available, k)) for k in ("fma", "smem", "l2", "dram")})
    return LittlesLawStage(needed=needed, available=available, fraction=fraction, l2_bytes_per_clock=l2_bpc,
                           dram_bytes_per_clock=dram_bpc, tile_bytes=tile_bytes,
                           load_steps=np.broadcast_to(np.asarray(steps, float), np.shape(tile_bytes)),
                           load_steps_binary=np.broadcast_to(np.asarray(known, bool), np.shape(tile_bytes)))


@dataclass(frozen=True)
class LocalStage:
    """Local-memory bytes per block per k-tile, where the frames live (level: 1 L1, else minus the
    share only DRAM holds) and the L1TEX wavefronts per block per k-tile (shared + tile loads + local in L1)."""

    bytes_tile: np.ndarray
    level: np.ndarray
    l1tex_wavefronts: np.ndarray
    latency: np.ndarray  # cycles a local load (LDL) waits: L1's where the frames fit there, else L2's and DRAM's by share
    store_share: np.ndarray  # the share of bytes_tile that are stores (STL): the binary's loop, else half


def local_stage(device, r: ResourceStage, o: OccupancyStage, builds: Sequence[BuildFacts], tile_bytes, blocks) -> LocalStage:
    """Without registers for the accumulators and their fragments the arrays live in local memory:
    every FFMA loads and stores its accumulator (8 B) and, once the frame also holds the fragments,
    loads both operands (8 B more); otherwise the frame holds spilled registers, reloaded once per
    tile (or the binary's loop's LDL + STL where known). L1 holds the frames while an SM's resident
    ones fit in the L1 the shared-memory carveout leaves (occupancy.l1_data_bytes: the driver sizes the
    carveout for the blocks an SM can hold, not for those a small grid gives it), else the L2 holds
    L2 bytes / (the frames that exist at once) of them and DRAM the rest. Frames exist only for blocks that run: a grid of fewer blocks than a
    wave holds (blocks < SMs x blocks per SM) has that many frames, not a full wave's, and an SM
    holds no more blocks than the grid gives it. One L1TEX data pipe (128 B/clk) serves shared,
    global and local accesses alike: a block's tile loads take tile bytes / 128 wavefronts, and where
    the kernel stages through kernels/tile_f4.cuh the lines its warps' loads touch beyond that
    (ldg_returns: one wavefront per line)."""
    mem = device.memory
    thr, local, b = r.threads, r.local_bytes, o.blocks_per_sm
    acc_floats = r.bm * r.bn / thr
    frag_bytes = 4.0 * (r.bm / np.maximum(thr / np.maximum(r.bn, 1), 1) + r.bn)  # generous bound on fragments
    arrays = (local > 0) & (r.registers < acc_floats + 16)  # no room for accumulators plus fragments
    per_ffma = 8.0 + 8.0 * np.clip((local - 4 * acc_floats) / np.maximum(frag_bytes, 1), 0, 1)
    local_tile = np.where(arrays, per_ffma * r.ffma_per_thread, local) * thr * (local > 0)
    lt = np.array([np.nan if bf.local_tile_bytes is None else float(bf.local_tile_bytes) for bf in builds])
    local_tile = np.where(np.isfinite(lt) & (local > 0), lt * thr, local_tile)
    sms = device.compute.sm_count
    resident = np.minimum(np.maximum(b, 1), np.ceil(np.asarray(blocks, float) / sms))  # blocks an SM really holds
    live = np.minimum(np.asarray(blocks, float), sms * np.maximum(b, 1))  # blocks running at once, all SMs
    in_l1 = local * thr * resident <= l1_data_bytes(device, r.smem_bytes, b)
    l2_share = np.clip(mem.l2_bytes / np.maximum(local * thr * live, 1.0), 0.0, 1.0)
    lsu = lsu_pipe_clocks(device.compute.ldst_units_per_sm)  # a warp's load holds the pipe at least lsu clocks
    ldg_w = np.where(r.uses_smem > 0, np.maximum(tile_bytes / T.WAVEFRONT_BYTES, lsu * r.ldg_per_thread * thr / 32 if lsu > 1.0 else 0.0)
                     + r.ldg_returns * thr / 32, 0.0)  # + the lines beyond the widths
    lat = device.latency
    beyond = l2_share * lat.l2_latency_cycles + (1.0 - l2_share) * lat.dram_latency_cycles
    return LocalStage(bytes_tile=local_tile, level=np.where(in_l1, 1.0, -(1.0 - l2_share)),
                      l1tex_wavefronts=r.smem_wavefronts_block + ldg_w + np.where(in_l1, local_tile / T.WAVEFRONT_BYTES, 0.0),
                      latency=np.where(in_l1, lat.l1_latency_cycles, beyond),
                      store_share=np.array([local_store_share(bf.program) for bf in builds], dtype=float))


def local_store_share(program: Optional[dict]) -> float:
    """The share of a loop's local bytes that are stores (STL over LDL + STL, by access width), 0.5 without a
    loop program or without local accesses in it: a frame of accumulators is loaded and stored alike (the loops
    of the 20 local-bound configurations of the ten H100 shape runs store 48.6-49.9 % of their bytes)."""
    if not program:
        return 0.5
    cls, wide = program["cls"], program["wide"]
    ld = sum(wide[i] for i, c in enumerate(cls) if c == "L")
    st = sum(wide[i] for i, c in enumerate(cls) if c == "K")
    return st / (ld + st) if ld + st else 0.5


@dataclass(frozen=True)
class WavesStage:
    blocks_per_wave: np.ndarray
    full_waves: np.ndarray
    tail: np.ndarray  # the busiest SM's blocks in the last partial wave
    n_waves: np.ndarray
    resident: np.ndarray  # blocks an SM really holds (small grids hold fewer)
    tail_refilled: np.ndarray  # the tail holds more blocks an SM than spread one to an SM would (terms.waves' refill)


def refill_blocks(device, warps_per_block) -> np.ndarray:
    """Blocks an SM takes at once when a full wave's blocks free their slots (terms.waves' refill): as many as
    fit in the generation's measured refill_warps_per_sm, at least one; 1 where it was not measured."""
    w = device.compute.refill_warps_per_sm
    warps = np.maximum(np.asarray(warps_per_block, float), 1.0)
    return np.ones_like(warps) if w is None else np.maximum(np.floor(w / warps), 1.0)


def waves_stage(device, o: OccupancyStage, t: TrafficStage) -> WavesStage:
    """terms.waves with at least one block per SM."""
    sms = device.compute.sm_count
    safe_b = np.maximum(o.blocks_per_sm, 1)
    per_wave, full, tail = T.waves(t.blocks, safe_b, sms, refill_blocks(device, o.warps_per_block))
    return WavesStage(blocks_per_wave=per_wave, full_waves=full, tail=tail, n_waves=full + (tail > 0),
                      resident=np.minimum(safe_b, np.ceil(t.blocks / sms)),
                      tail_refilled=tail > T.waves(t.blocks, safe_b, sms)[2])


@dataclass(frozen=True)
class ComputeStage:
    """Cycles per k-tile by term (terms.TERMS) with the full resident blocks and with the tail wave's,
    and what went into them."""

    cycles: np.ndarray  # (7, n)
    cycles_tail: np.ndarray
    exposed: np.ndarray  # latency exposed per k-tile (cycles)
    exposed_tail: np.ndarray  # the same with the tail wave's blocks
    tile_args_full: dict  # terms.tile_cycles' arguments for the full waves (model.uncertainty varies them)
    tile_args_tail: dict  # and for the tail wave
    load_phase_share: np.ndarray  # single-buffered, calibrated: X (NaN where it does not apply)
    c_ffma: np.ndarray  # issue cycles per FFMA at the resident warps
    overlap: np.ndarray
    code_bytes: np.ndarray  # the unrolled k-tile loop's code
    scheduled: np.ndarray  # simulated compute phase (NaN where no loop program)
    bank_floor: np.ndarray  # the register-file floor of it (Figures.register_bank_floor; NaN where none)
    scheduled_latency: np.ndarray  # the whole k-tile pass simulated with its global loads' latency (NaN where no loop program)
    edge_blocks: np.ndarray  # blocks that run the guarded edge body (catalogue.edge_blocks)
    edge_extra_full: np.ndarray  # cycles per k-tile the edge body adds to an SM whose b blocks all run it
    edge_extra_last: np.ndarray  # the same for the last wave's busiest SM
    lockstep: np.ndarray  # cycles the unused sectors of lone blocks' lines add to a load phase (terms.lockstep_load_cycles)
    load_queue: np.ndarray  # cycles a lone block's scalar tile loads queue beyond latency + burst (terms.load_queue_cycles)
    # the last wave's: cycles its blocks' prefetched lines wait behind their shared loads in the L1 data stage (terms.data_stage_wait)
    data_stage_wait: np.ndarray
    lone_fetch_interval: np.ndarray  # the fewest clocks between a lone warp's instructions the fetch allows (last wave; 0: none)
    load_use_share: np.ndarray  # the last wave's prefetch share where the load-use window cuts it (window_applies; NaN: not cut)
    ring_landing: np.ndarray  # cycles a cp.async ring's tile waits beyond its load phase to land from DRAM (terms.ring_landing_extra;
    # the full waves', or the tail's where the grid is one partial wave)


def window_applies(blocks_per_sm, warps_per_block, schedulers, full_waves) -> np.ndarray:
    """Where a double-buffered block's next-tile loads are hidden only by the FFMAs before their first consumer
    (schedule.load_use_window: the shared stores that stage the tile), not by all those before the barrier (the
    prefetch share, measure.sass.prefetch_fraction).

    A warp that reaches those stores while its loads are in flight waits there; the FFMAs it would issue after
    them hide nothing unless another warp of its scheduler issues meanwhile. That is so (1) where a block's warps
    on an SM are at most its schedulers, each warp alone on its scheduler (docs/model.md, "Where the model
    misses": 38 lone points measured on the H100), and (2) where one block is alone on its SM in a grid of one
    partial wave: its warps share the schedulers only with each other, they meet at the barrier every k-tile, so
    they reach their stores within a few instructions of one another and wait together, and no later block comes
    to fill the wait. Case (2) is what Nsight Compute sampled on the H200 (docs/model.md, "A first touch's wait,
    sampled"): double_buffer's default, one block of eight warps on each of 16 SMs after the L2 flush, spent 151
    cycles a k-tile on the long scoreboard, at its shared stores, where the prefetch share hid all but a few. With
    two or more blocks an SM one block's FFMAs fill another's wait (the same sampling: 8-25 cycles), and in the
    later waves of grids of one block an SM the recorded points keep the prefetch share (docs/model.md, "The
    load-use window of a block alone in one wave")."""
    b = np.asarray(blocks_per_sm)
    return lone_warps(b, warps_per_block, schedulers) | ((b == 1) & (np.asarray(full_waves) == 0))


def lone_warps(blocks_per_sm, warps_per_block, schedulers) -> np.ndarray:
    """Whether a block's warps on an SM are at most its schedulers: each warp alone on its scheduler."""
    return np.asarray(blocks_per_sm) * warps_per_block <= schedulers


def compute_stage(fig: Figures, r: ResourceStage, o: OccupancyStage, t: TrafficStage, i: IssueStage, ll: LittlesLawStage,
                  loc: LocalStage, w: WavesStage, builds: Sequence[BuildFacts], configs, hz, edge=0.0) -> ComputeStage:
    """terms.tile_cycles for the full waves and the tail. The FFMA rate: calibrate's FFMA-only one with
    the calibrated pipe overlap (the overlap term charges the shared loads); without it, the rate of the
    shared-memory-fed outer product (4 LDS.128 per k step). The k-tile loop is unrolled: its code is one
    warp's instructions per tile x 16 B (checked against the SASS of the recorded configs: median ratio
    1.01); past the instruction cache issue slows. Where the binary's loop is known its compute phase
    is simulated (model.schedule). `edge`: blocks on the ragged edge (catalogue.edge_blocks), and what their
    guarded body adds per k-tile (_edge_extra). Under a calibrated FFMA rate the replayed compute phase is never
    shorter than the same loop replayed with its register-bank reads at the chip's own FFMA rate
    (Figures.register_bank_floor)."""
    device = fig.effective
    cmp_, lat = device.compute, device.latency
    n = len(configs)
    warps = o.warps_per_block
    safe_b = np.maximum(o.blocks_per_sm, 1)
    # a ring of cp.async copies waits its SM's tile bytes landing from DRAM (terms.ring_landing_extra), added to the
    # load phase its prefetch hides (hide_of): the bb blocks an SM runs at once copy theirs together
    ring = np.array([c.spec.staging == "async" for c in configs])

    def landing_of(bb):
        if not ring.any() or not device.memory.dram_copy_landing_cycles_by_KB:
            return np.zeros(n)
        port = fig.l2_port_bytes_per_clock or ll.l2_bytes_per_clock
        kb = bb * t.l2_bytes_tile
        return ring * T.ring_landing_extra(kb / 1024.0, lat.dram_latency_cycles, device.memory.dram_copy_landing_cycles_by_KB,
                                           t.dram_latency, t.l2_latency, t.mem_latency, kb / port)
    lanes = cmp_.fp32_lanes_per_sm
    rates = T.SMRates(schedulers=cmp_.warp_schedulers_per_sm * cmp_.issue_per_scheduler_per_clock, lanes=lanes,
                      smem_bpc=device.memory.smem_bandwidth_bytes_per_clock_per_sm, l2_bpc=ll.l2_bytes_per_clock,
                      dram_bpc=ll.dram_bytes_per_clock, port_bpc=fig.l2_port_bytes_per_clock,
                      smem_latency=lat.smem_latency_cycles)
    pf = np.array([1.0 if bf.prefetch is None else float(bf.prefetch) for bf in builds])
    kind = np.where(r.uses_smem > 0, np.where((r.buffers >= 2) & (pf > 0), 2, 1), 0)
    u = ll.load_steps  # one-element kernels: the k steps between two waits for their loads
    exposed_k = (t.mem_latency + u * lat.fma_latency_cycles) / u
    work = T.TileWork(ffma=i.ffma, other=i.non_ffma, smem_wavefronts=loc.l1tex_wavefronts, l2_bytes=t.l2_bytes_tile,
                      dram_bytes=t.dram_bytes_tile / t.dram_rate, dram_bus_bytes=t.dram_bus_bytes_tile, local_bytes=loc.bytes_tile, local_level=loc.level, warps=warps,
                      mem_latency=t.mem_latency, kind=kind, exposed_k=exposed_k, local_store_share=loc.store_share,
                      load_steps=u)
    smem_fed = None if fig.has_pipe_overlap else r.uses_smem > 0
    acc = r.bm * r.bn / r.threads  # outputs (accumulators) per thread

    def c_of(wps):
        return fig.ffma_issue_factor(wps, smem_fed=smem_fed, accumulators=acc)

    def ovl_of(wps):
        return fig.pipe_overlap(wps, accumulators=acc) * (r.uses_smem > 0) if fig.has_pipe_overlap else 0.0

    code_bytes = 16.0 * i.issue / np.maximum(warps, 1) * (r.uses_smem > 0)
    tail_b = np.maximum(w.tail, 1)
    sched_n = cmp_.warp_schedulers_per_sm
    lone_interval = fig.lone_fetch_interval(code_bytes)  # the fetch's limit on a lone warp (shown by predict)
    floor = fig.register_bank_floor  # (banks, issue cycles per FFMA) under a calibrated rate, or None
    floors = {}

    def replay(bb, global_latency=None):  # the binary's k-tile loop with bb resident blocks (model.schedule)
        sim = _simulated(i, bb, warps, c_of(bb * warps), configs, device, loc.latency, r.ldg_returns, fig.register_banks,
                         fetch_interval=fig.lone_fetch_interval, global_latency=global_latency)
        if floor is None:
            return sim
        # the register-file floor (Figures.register_bank_floor): the same loop with its bank reads at the chip's FFMA rate
        low = _simulated(i, bb, warps, floor[1], configs, device, loc.latency, r.ldg_returns, floor[0],
                         fetch_interval=fig.lone_fetch_interval, global_latency=global_latency)
        if global_latency is None and bb is safe_b:
            floors["full"] = low  # shown by predict (the full waves')
        return np.where(np.isfinite(low), np.fmax(sim, low), sim)

    sim_full = sim_tail = simlat_full = simlat_tail = None
    if i.has_program.any():
        memlat = np.broadcast_to(t.mem_latency, (n,))  # the latency term's floor: the same loop with its loads' latency
        sim_full, sim_tail = replay(safe_b), replay(tail_b)
        simlat_full, simlat_tail = replay(safe_b, memlat), replay(tail_b, memlat)
    # lone blocks per SM that started together: the unused bytes of the lines one block's tile touches,
    # times the share of the SMs that load at once (terms.lockstep_load_cycles); the tail's lone blocks
    # started together only where every wave is of lone blocks or the grid is one partial wave
    sms = device.compute.sm_count
    unused = (T.tile_line_bytes(r.bm, r.bn, r.bk) - ll.tile_bytes) * (r.uses_smem > 0)
    rem = t.blocks - w.full_waves * w.blocks_per_wave
    # a warp alone on its scheduler waits for the next tile's loads at the first instruction that reads them (the
    # shared stores), so only the FFMAs before it hide them (schedule.load_use_window); so do the warps of a block
    # alone on its SM in a grid of one partial wave (window_applies); otherwise the other blocks' warps issue
    # meanwhile and the prefetch share (to the barrier) stands
    win = np.array([np.nan if (u := load_use_window(bf.program)) is None else u for bf in builds])
    pf_lone = np.where(np.isfinite(win) & (pf > 0), np.fmin(pf, win), pf)

    def windowed(bb):
        return window_applies(bb, warps, sched_n, w.full_waves)

    lines_tile = np.array([float(sum(tile_load_lines(c))) for c in configs]) * (r.uses_smem > 0)

    def hide_of(bb):
        return T.prefetch_hide(np.where(windowed(bb), pf_lone, pf), r.buffers)

    # the SMs that run blocks: in a grid of one partial wave, whose blocks all start at once, one per block up to
    # all; otherwise all (a last partial wave after full ones overlaps their last blocks, which end at different
    # times: terms.waves' refill)
    busy = np.clip(np.where(w.full_waves > 0, sms, t.blocks), 1, sms)
    # a lone single-buffered block's scalar tile loads queue at the L1's rate for loads the L2 serves
    # (terms.load_queue_cycles); those of A's DRAM bytes that wait the loaded DRAM latency already count it
    queue = load_queue(device, configs, r, warps, ll.tile_bytes, fig.l2_port_bytes_per_clock, kind, t.dram_a_loaded)
    store_bpc = device.memory.store_bytes_per_clock_per_sm
    args_full = dict(b=safe_b, work=work, rates=rates, f=ll.fraction, c_ffma=c_of(safe_b * warps), hide=hide_of(safe_b),
                     sms_share=np.broadcast_to(sms / busy, (n,)), store_bpc=store_bpc,
                     fetch_rate=fig.fetch_rate(code_bytes, safe_b * warps), overlap=ovl_of(safe_b * warps),
                     tile_exposure=fig.tile_exposure, scheduled=sim_full, scheduled_latency=simlat_full,
                     lockstep_bytes=unused * np.minimum(t.blocks / sms, 1.0), queue_cycles=queue,
                     return_lines=lines_tile * windowed(safe_b), landing=landing_of(safe_b))
    args_tail = dict(args_full, b=tail_b, landing=landing_of(tail_b), c_ffma=c_of(tail_b * warps), fetch_rate=fig.fetch_rate(code_bytes, tail_b * warps), hide=hide_of(tail_b),
                     overlap=ovl_of(tail_b * warps), scheduled=sim_tail, scheduled_latency=simlat_tail,
                     lockstep_bytes=unused * np.minimum(rem / sms, 1.0) * ((safe_b == 1) | (w.full_waves == 0)),
                     return_lines=lines_tile * windowed(tail_b))
    cyc_full, exposed, share = T.tile_cycles(**args_full)
    cyc_tail, exposed_tail, _ = T.tile_cycles(**args_tail)
    # what the data stage's wait adds to the last wave's load phase of a prefetching block (terms.data_stage_wait, as
    # tile_cycles charges it: the compute phase is the latency term less what it exposes)
    last = w.tail > 0
    last_b = np.where(last, tail_b, safe_b)
    cyc_last, exp_last = np.where(last, cyc_tail, cyc_full), np.where(last, exposed_tail, exposed)
    lines_last = np.where(last, args_tail["return_lines"], args_full["return_lines"]) * (kind == 2)
    stage_wait = T.block_stage_wait(lines_last, cyc_last[2], last_b, cyc_last[6] - exp_last)
    n_edge = np.where(r.uses_smem > 0, edge, 0.0)
    extra_full, extra_last = (_edge_extra(builds, n_edge, bb, warps, c_of(bb * warps), configs, device, t.mem_latency, loc.latency,
                                          r.ldg_returns, fig.register_banks, fetch_interval=fig.lone_fetch_interval,
                                          fetch_rate=fig.fetch_rate if T.EDGE_FETCH else None)
                              for bb in (safe_b, last_b))
    return ComputeStage(cycles=cyc_full, cycles_tail=cyc_tail, exposed=exposed, exposed_tail=exposed_tail,
                        tile_args_full=args_full, tile_args_tail=args_tail, load_phase_share=np.broadcast_to(share, (n,)),
                        c_ffma=c_of(w.resident * warps), overlap=np.broadcast_to(ovl_of(safe_b * warps), (n,)),
                        code_bytes=code_bytes, scheduled=np.full(n, np.nan) if sim_full is None else sim_full,
                        bank_floor=floors.get("full", np.full(n, np.nan)),
                        scheduled_latency=np.full(n, np.nan) if simlat_full is None else simlat_full,
                        edge_blocks=np.broadcast_to(n_edge, (n,)), edge_extra_full=extra_full, edge_extra_last=extra_last,
                        lone_fetch_interval=np.broadcast_to(lone_interval * lone_warps(last_b, warps, sched_n), (n,)),
                        load_use_share=np.where((kind == 2) & windowed(last_b) & (pf_lone < pf), pf_lone, np.nan),
                        data_stage_wait=np.broadcast_to(stage_wait, (n,)),
                        lockstep=np.broadcast_to(np.where(  # the full waves', or the tail's where the grid is one partial wave
                            w.full_waves > 0, T.lockstep_load_cycles(safe_b, args_full["lockstep_bytes"], ll.l2_bytes_per_clock),
                            T.lockstep_load_cycles(tail_b, args_tail["lockstep_bytes"], ll.l2_bytes_per_clock)), (n,)),
                        load_queue=np.broadcast_to(queue * np.where(w.full_waves > 0, safe_b == 1, tail_b == 1), (n,)),
                        ring_landing=np.broadcast_to(np.where(w.full_waves > 0, args_full["landing"], args_tail["landing"]), (n,)))


@dataclass(frozen=True)
class PredictionBatch:
    """Arrays over configs: the result and every stage it came from."""

    figures: Figures
    dims: tuple  # (M, N, K) arrays
    clock_MHz: np.ndarray
    gflops: np.ndarray
    time_s: np.ndarray
    bound: np.ndarray  # index into BOUNDS
    resources: ResourceStage
    occupancy: OccupancyStage
    traffic: TrafficStage
    issue: IssueStage
    littles_law: LittlesLawStage
    local: LocalStage
    waves: WavesStage
    compute: ComputeStage
    store_cycles: np.ndarray  # the last wave's C stores after its last k-tile (last_wave_store_cycles)
    lone_store_cycles: np.ndarray  # the earlier waves' C stores that no other block hides (lone_block_store_cycles)
    prologue_cycles: np.ndarray  # each wave's first tile (nothing to overlap), all waves together
    edge_cycles: np.ndarray  # what the ragged edge's guarded body adds, all waves together
    reduce_s: np.ndarray  # split_k's second kernel, summing the partials (reduction_seconds; 0 for the others)
    launch_s: float  # the timed launch's fixed cost
    clock_given: bool  # the SM clock was given (measured), not the datasheet's boost clock
    configs: tuple = ()  # what was predicted (model.uncertainty re-predicts estimated registers)
    builds: tuple = ()

    @property
    def blocks_per_sm(self) -> np.ndarray:
        return self.occupancy.blocks_per_sm

    @cached_property
    def regime(self) -> np.ndarray:
        """Each config's occupancy regime (occupancy_regime): the key, beside its bound, of the model's
        recorded residual spread (model.uncertainty)."""
        return occupancy_regime(self.waves.resident * self.occupancy.warps_per_block,
                                self.figures.effective.compute.warp_schedulers_per_sm,
                                self.traffic.blocks / np.maximum(self.waves.blocks_per_wave, 1))

    def again(self, idx, builds) -> "PredictionBatch":
        """Configs idx predicted again with other build facts (same figures, problem and clock)."""
        M, N, K = (np.asarray(d)[idx] for d in self.dims)
        return predict_batch(self.figures, [self.configs[i] for i in idx], Problem(M, N, K), builds=builds,
                             clock_MHz=self.clock_MHz[idx] if self.clock_given else None)

    @property
    def cycles(self) -> np.ndarray:
        return self.compute.cycles


def occupancy_regime(busiest_warps, schedulers, waves) -> np.ndarray:
    """The regime a grid runs in, from what fills a warp's stalls: "lone" where the busiest SM holds at
    most one warp per scheduler (nothing issues while a warp waits: docs/model.md, "One block per SM"),
    else "subwave" for a grid of less than one wave (every block starts at once, no later wave overlaps
    its first tile), "few" for under four waves (the first wave's and the last wave's costs weigh), and
    "many" otherwise (the steady state every term describes)."""
    busiest_warps, waves = np.broadcast_arrays(np.asarray(busiest_warps, dtype=float), np.asarray(waves, dtype=float))
    return np.where(busiest_warps <= schedulers, "lone", np.where(waves < 1.0, "subwave", np.where(waves < 4.0, "few", "many")))


def edge_stage(configs: Sequence[KernelConfig], r: ResourceStage, M, N, K) -> tuple[np.ndarray, ResourceStage]:
    """The blocks that run the guarded edge body (catalogue.edge_blocks: the ragged choice decides which;
    kernels/outer_f4.cuh, INNER_BODY), and the resources with the C stores' sector ratio of all blocks: the
    edge body and the scalar inner body (ragged = inner: every block inside C) store C as scalars
    (kernels/tile_f4.cuh, store_c4), which moves more sectors than the interior's float4 stores
    (model.gstores, `scalar`); their share of the grid's blocks stores at that ratio, the rest at the
    interior's. Kernels that store scalars on every path keep their ratio."""
    edge = np.zeros(len(configs))
    scalar = np.zeros(len(configs))
    for rg in {cfg.ragged for cfg in configs}:
        on = np.array([cfg.ragged == rg for cfg in configs])
        blocks, e = edge_blocks(M, N, K, r.bm, r.bn, r.bk, rg)
        edge = np.where(on, e, edge)
        scalar = np.where(on, np.minimum((blocks if rg == "inner" else e) / np.maximum(blocks, 1.0), 1.0), scalar)
    if r.c_store_ratio_scalar is None:
        return edge, r
    share = np.where(r.uses_smem > 0, scalar, 0.0)
    return edge, replace(r, c_store_ratio=(1.0 - share) * r.c_store_ratio + share * r.c_store_ratio_scalar)


def predict_batch(figures: Figures | DeviceSpec, configs: Sequence[KernelConfig], problem: Problem,
                  builds: Optional[Sequence[BuildFacts]] = None, clock_MHz=None) -> PredictionBatch:
    """Vectorised prediction of configs on one device for one problem (or one per config).

    builds: per config, what is known of its binary (facts.BuildFacts; None: all estimated). With a
    loop program the compute phase is simulated (model.schedule) and the issue term counts the
    binary's instructions. clock_MHz: the SM clock (default the boost clock)."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a Problem(M, N, K), not {type(problem).__name__}")
    fig = Figures.of(figures)
    device = fig.effective
    n = len(configs)
    builds = [ESTIMATED] * n if builds is None else list(builds)
    if len(builds) != n:
        raise ValueError(f"{len(builds)} build facts for {n} configs")
    M, N, K = problem.arrays(n)
    clock = device.compute.sm_clock_boost_MHz if clock_MHz is None else clock_MHz
    hz = clock * 1e6
    r = l1_lines_stage(device, configs, resources(device, configs, builds), M, N, K)
    edge, r = edge_stage(configs, r, M, N, K)
    o = occupancy_stage(device, r)
    t = traffic(device, r, o, M, N, K)
    i = issue_stage(r, o, builds)
    ll = littles_law_stage(device, r, o, hz, steps=one_element_steps(fig, r, builds))
    loc = local_stage(device, r, o, builds, ll.tile_bytes, t.blocks)
    w = waves_stage(device, o, t)
    c = compute_stage(fig, r, o, t, i, ll, loc, w, builds, configs, hz, edge=edge * t.slices)
    prologue = w.n_waves * (t.mem_latency + 2 * device.latency.smem_latency_cycles)  # each wave's first tile has nothing to overlap
    # edge blocks (ragged shapes): their share of every full wave, and the whole last wave, whose
    # busiest SM holds the grid's last block, an edge block wherever there are any
    frac = c.edge_blocks / np.maximum(t.blocks, 1.0)
    earlier = np.where(w.tail > 0, w.full_waves, np.maximum(w.full_waves - 1, 0))
    edge_cycles = t.ktiles * (earlier * frac * c.edge_extra_full + (c.edge_blocks > 0) * c.edge_extra_last)
    # with T.STORED_ELEMENTS (on) both store phases move only the share of the tiles' sector bytes inside C
    filled = T.c_tile_filled(M, N, r.bm, r.bn) if T.STORED_ELEMENTS else 1.0
    store_cycles = last_wave_store_cycles(device, r, t, w, hz) * filled
    lone_store = lone_block_store_cycles(device, r, w) * filled
    launch_s = launch_overhead_s(device)
    total_cycles = T.tile_loop_cycles(t.ktiles, w, c.cycles, c.cycles_tail) + prologue + edge_cycles + store_cycles + lone_store
    reduce_s = reduction_seconds(device, M, N, t.slices, hz, programmatic_reduction(device, builds))
    fused = np.array([c.spec.reduction == "fused" for c in configs])
    if fused.any():  # step 13: no second kernel; the last wave's tiles' sums are what nothing hides
        port = fig.l2_port_bytes_per_clock or device.memory.smem_bandwidth_bytes_per_clock_per_sm
        reduce_s = np.where(fused, fused_reduction_seconds(device, r, M, N, t.slices, port, hz), reduce_s)
    time_s = total_cycles / hz + launch_s + reduce_s
    gflops = np.where(o.blocks_per_sm > 0, t.flops / time_s * 1e-9, 0.0)
    bound = c.cycles.argmax(axis=0)
    # 'latency' = issue work + exposed latency; name it only when the exposed part matters (>= 10 %)
    lat_i = T.TERMS.index("latency")
    minor = (bound == lat_i) & (c.exposed < 0.1 * c.cycles[lat_i])
    bound = np.where(minor, c.cycles[:lat_i].argmax(axis=0), bound)
    # a near-empty problem: the waves' first loads take most of the time, or most of the tile work
    # computed lies beyond the problem (padding of partial tiles): fixed costs, not a pipe, bound it
    useful = t.flops / np.maximum(2.0 * t.blocks * t.ktiles * r.bm * r.bn * r.bk, 1.0)
    fixed = (prologue + launch_s * hz >= 0.5 * (total_cycles + launch_s * hz)) | (useful < 0.5)
    bound = np.where(fixed, BOUNDS.index("fixed"), bound)
    return PredictionBatch(figures=fig, dims=(M, N, K), clock_MHz=np.broadcast_to(np.asarray(clock, dtype=float), (n,)), gflops=gflops,
                           time_s=time_s, bound=bound, resources=r, occupancy=o, traffic=t, issue=i, littles_law=ll,
                           local=loc, waves=w, compute=c, store_cycles=np.broadcast_to(store_cycles, (n,)),
                           lone_store_cycles=np.broadcast_to(lone_store, (n,)),
                           prologue_cycles=np.broadcast_to(prologue, (n,)), edge_cycles=np.broadcast_to(edge_cycles, (n,)),
                           reduce_s=np.broadcast_to(reduce_s, (n,)), launch_s=launch_s, clock_given=clock_MHz is not None, configs=tuple(configs), builds=tuple(builds))



def c_tile_sector_bytes(r: ResourceStage) -> np.ndarray:
    """The sector bytes one block's stores of its C tile move between the SM and L2 (model.gstores)."""
    return r.c_store_ratio * 4.0 * r.bm * r.bn


def last_wave_store_cycles(device: DeviceSpec, r: ResourceStage, t: TrafficStage, w: WavesStage, hz) -> np.ndarray:
    """The last wave's C tiles: its blocks store them after their last k-tile, and no later block is
    left to hide that phase. The busiest SM stores ceil(last wave's blocks / SMs) tiles of sector bytes
    (model.gstores; the edge and scalar inner bodies' scalar stores move more: edge_stage) at the lower
    of its own store rate (memory.store_bytes_per_clock_per_sm, measured for the generation; no limit
    where nobody measured it) and its share of the DRAM bandwidth among the SMs storing at once. On the
    H100, one block's 64 KiB tile took 1.15 us (28.8 B/clk) and 132 blocks' tiles 2.52 us (3.4 TB/s,
    about the DRAM bandwidth: results/archive/fixed-costs-20261123-h100-sxm.txt). The share binds sector
    bytes, not only C's: on the H200, with every SM storing one 64 KiB tile at once, whole sectors went at
    15.7 B/clk an SM and the scalar stores of the edge body (4 x the sectors) at 14.0 B/clk of sector bytes
    (results/archive/store-burst-waves2-20261129-h200.txt), about the share (18.4) where the SM's own rate
    would take half the time.
    Stores of earlier waves overlap the next blocks' work and are left to the L2 and DRAM terms."""
    sms = device.compute.sm_count
    last = np.where(w.tail > 0, t.blocks - w.full_waves * w.blocks_per_wave, np.minimum(t.blocks, w.blocks_per_wave))
    storing = np.clip(last, 1, sms)
    share = device.memory.dram_bandwidth_GBps * 1e9 / (storing * hz)
    own = device.memory.store_bytes_per_clock_per_sm
    rate = share if own is None else np.minimum(own, share)
    return np.ceil(last / sms) * c_tile_sector_bytes(r) / rate


SCATTERED_STORE_RATIO = 8.0  # sector bytes per byte of C where every lane of a warp's store writes its own sector
# sector bytes per byte of C from which a grid's stores count as sharing their sectors among lanes (2: two lanes
# a sector, 4: four): the midpoint between whole sectors (1) and the fewest lanes that share one (2)
SHARED_SECTOR_RATIO = 1.5


def lone_block_store_cycles(device: DeviceSpec, r: ResourceStage, w: WavesStage) -> np.ndarray:
    """The C stores of every wave but the last that no other block on the SM hides: each SM's lone
    block's; where every lane of a warp's store writes a sector of its own, every resident block's; where
    lanes share sectors, one block's (below).

    A warp leaves after its stores are accepted and done (Nsight Compute's `drain` stall, [ncu-guide]: a warp waits after
    EXIT for its memory instructions to complete before its resources are freed; `lg_throttle`: it waits to
    issue while the SM's queue of global memory instructions is full). With one block per SM nothing else
    runs while it stores, and the next block starts only when it has left: each wave adds the block's store
    burst on its SM, its C tile's sector bytes (model.gstores) at the SM's own store rate
    (memory.store_bytes_per_clock_per_sm, measured for the generation), the same burst that
    last_wave_store_cycles charges the last wave (which adds the DRAM share when every SM stores at once).
    With two or more resident blocks a second block's stores drain beside the first's where they fill
    sectors (whole, or two or four lanes a sector); whole sectors are then hidden (the others compute
    meanwhile and the L2 and DRAM terms carry the bytes), shared ones cost one block's burst (below). Where every lane writes its own sector (SCATTERED_STORE_RATIO: a warp's scalar store
    touches 32 sectors; tiled_2d with tn >= 8, naive) they do not: the SM's store path takes the blocks'
    bursts one after the other, and each wave adds every resident block's. Without a measured store rate
    (other generations, datasheet figures) nothing is added, as there.

    Measured on the H100 (docs/model.md, "C stores: sectors, and the last wave's store phase"): tiled_2d's default (one block of
    8 warps per SM; 8 sectors per 4 bytes of C) at 8192 x 8192 x 64 / 128 and 4096 x 8192 x 256 stalls
    its warps 18-23 k cycles per block on lg_throttle and drain under ncu, where this burst is 18.2 k. A
    kernel that only waits and then stores a 64 KiB tile (benchmarks/store_burst.py, 16 waves) exposes per
    wave, with one block per SM and with two: whole sectors 2.5 k and 2.8 k, two lanes a sector 6.9-7.0 k and
    7.3-11.2 k, a sector a lane 30.5-38.2 k and 53.0-81.7 k (results/archive/store-burst-20261126-h100-sxm.json);
    on the H200 whole sectors 2.4 k / 2.9 k, four lanes a sector 12.0 k / 13.5 k, a sector a lane 29.8 k /
    63.2 k (results/archive/store-burst-20261129-h200.txt): only a lane's own sectors add a second block's
    burst. Charging one block's burst with two or more blocks per SM whatever the stores was tried: the
    small-K shape class went from +4.3 to -12.1 % bias.

    Where lanes share the sectors they store (SHARED_SECTOR_RATIO up to SCATTERED_STORE_RATIO sector bytes per
    byte of C: float4 stores 32 B apart, scalar stores two or four lanes a sector), every wave but the last adds
    one block's burst whatever the resident blocks: such a burst takes the SM's store path two to four times as
    long per byte of C as whole sectors, and a second block's stores drain beside the first's. The
    wait-and-store kernel exposes about one block's burst a wave with two blocks (H200: two sector bytes per
    byte 6,795 against 6,427 cycles with one, four 13,504 against 11,987); tiled_2d_float4's default (two sector
    bytes per byte, two blocks an SM) pays 2.3 us a round of blocks beyond the model without it, fitted at one, four
    and sixteen rounds (results/20261202-071156-h200-ktile-rounds), one block's burst at the generation's rate, and
    its warps stall on lg_throttle and drain 1.36 cycles an instruction at K = 64 against 0.16 at K = 512 (ncu,
    results/archive/ncu-rounds-k64-20261202-h200.txt); over the small-K points of the two H100 shapes-all runs such
    grids pay a median 0.15 of every resident block's burst, the two-block tiled_2d_float4 points at K = 64
    0.51-0.54, one block's of two (benchmarks/store_share.py). Whole sectors add nothing: their median share there
    is -0.01 over 30 points, and double_buffer's rounds stall 0.10 cycles an instruction on those two reasons."""
    own = device.memory.store_bytes_per_clock_per_sm
    if own is None:
        return np.zeros(len(r.bm))
    exposed = np.where(w.resident == 1, 1.0, np.where(r.c_store_ratio >= SCATTERED_STORE_RATIO, w.resident,
                                                      np.where(r.c_store_ratio >= SHARED_SECTOR_RATIO, 1.0, 0.0)))
    return np.maximum(w.n_waves - 1, 0) * exposed * c_tile_sector_bytes(r) / own


def programmatic_reduction(device: DeviceSpec, builds: Sequence[BuildFacts]) -> np.ndarray:
    """Per config, whether split_k's second kernel is launched with programmatic stream serialization: as the
    run that measured it recorded (BuildFacts.reduction_launch), else as the catalogue's launcher does today
    (measure.gpu: from sm_90), counted only where the device's generation measured what it saves
    (latency.programmatic_launch_saving_us)."""
    known = device.latency.programmatic_launch_saving_us is not None
    return np.array([known and b.reduction_launch != "stream" for b in builds], dtype=bool)


def reduction_seconds(device: DeviceSpec, M, N, slices, hz, programmatic=False) -> np.ndarray:
    """split_k's second kernel (reduce_splits, kernels/reduce_splits.cuh): it reads the s partials of C
    (s x M x N floats) and writes C once, four floats per thread, in a grid far larger than the load
    latency needs (every SM's threads keep megabytes in flight). The partials were written just before:
    the L2 still holds the first `memory.l2_written_resident_bytes` of them (measured: about half the L2
    on Hopper, where the rest has gone to DRAM; the whole L2 where nobody measured it), read at the L2
    bandwidth with their share of C, the rest at DRAM's; partials larger than the L2 all come from DRAM.
    C's stores drain at the DRAM rate at least (the H100's last-wave stores of 132 tiles ran at 3.4 TB/s,
    about its DRAM bandwidth: last_wave_store_cycles). Fixed part: the kernel's measured time at no bytes
    behind the kernel before it, by slices (`latency.reduction_floor_us_by_slices`, linear in the slices
    between and beyond the measured counts: the launch and each thread's chain of one load a slice); where
    nobody measured it, the second launch's cost (second_launch_us: measured, else the published
    back-to-back launch time; 0 where neither) and one load latency, less what a programmatic launch saves
    where it is one (`programmatic`, per config: programmatic_reduction). 0 for one slice."""
    mem = device.memory
    s = np.asarray(slices, dtype=float)
    part = 4.0 * s * M * N
    out = 4.0 * M * N
    l2_bw, dram_bw = mem.l2_bandwidth_GBps * 1e9, mem.dram_bandwidth_GBps * 1e9
    fixed, resident, _ = reduction_parts(device, M, N, s, hz, programmatic)
    share = resident / np.maximum(part, 1.0)  # of the partials (and of C with them) served by the L2; 0 beyond it
    stream = np.maximum((part + out) * share / l2_bw, out * share / dram_bw) + (part + out) * (1.0 - share) / dram_bw
    return np.where(s > 1, fixed + stream, 0.0)


def fused_reduction_seconds(device: DeviceSpec, r: ResourceStage, M, N, slices, port_bpc, hz) -> np.ndarray:
    """split_k_fused's sums (kernels/reduce_splits.cuh, sum_tile_if_last): no second launch. Every block stores
    its partial tile, fences, and counts itself in its tile's counter; the last of the tile's slices reads the
    tile's s partials back from the L2 and writes C. The grid's slice index is its slowest dimension, so the
    last slices run in the last wave(s). The busiest SM sums ceil(tiles / SMs) tiles (those that finish earlier
    take its port while its other blocks compute: counted whole, an upper bound), each after three L2 round
    trips in a chain (the fence, the counter's atomic, the first partials' loads) and each the longer of:
    - its bytes through the SM's L2->SM port (port_bpc a clock): s partials of the tile's elements inside C
      read, and C written once;
    - the chain of one thread's loads: the block's threads take the tile's elements in turn (four floats at a
      time where N is a multiple of 4), and for each element its s partials in passes of four loads (the
      source's `#pragma unroll 4`), one L2 latency a pass (measured on the H200: the pointer chase alone put
      the picks 10-190 % fast, docs/kernels.md, step 13).
    0 for one slice."""
    s = np.asarray(slices, dtype=float)
    M, N = np.asarray(M, float), np.asarray(N, float)
    tiles = np.ceil(M / r.bm) * np.ceil(N / r.bn)
    sms = device.compute.sm_count
    filled = T.c_tile_filled(M, N, r.bm, r.bn)
    tile_bytes = 4.0 * r.bm * r.bn * filled
    lat = device.latency.l2_latency_cycles
    width = np.where(N % 4 == 0, 4.0, 1.0)
    per_thread = np.ceil(r.bm * r.bn * filled / width / np.maximum(r.threads, 1))
    chain = per_thread * np.ceil(s / 4.0) * lat
    cycles = np.ceil(tiles / sms) * (np.maximum((s + 1.0) * tile_bytes / port_bpc, chain) + 3.0 * lat)
    return np.where(s > 1, cycles / hz, 0.0)


def reduction_parts(device: DeviceSpec, M, N, slices, hz, programmatic=False) -> tuple[np.ndarray, np.ndarray, bool]:
    """reduction_seconds' fixed part (s), the bytes of the partials it reads from the L2, and whether the
    fixed part is the generation's measured floor (latency.reduction_floor_us_by_slices, linear in the
    slices between and beyond the measured counts) rather than the second launch and one load latency.
    Where the second kernel is launched programmatically (`programmatic`), the fixed part is less the
    generation's measured saving (latency.programmatic_launch_saving_us), never below nothing."""
    mem, lat = device.memory, device.latency
    s = np.asarray(slices, dtype=float)
    part = 4.0 * s * M * N
    resident = np.where(part <= mem.l2_bytes, np.minimum(part, mem.l2_written_resident_bytes or mem.l2_bytes), 0.0)
    saved = np.where(programmatic, (lat.programmatic_launch_saving_us or 0.0) * 1e-6, 0.0)
    table = lat.reduction_floor_us_by_slices
    if not table:
        latency = np.where(part <= mem.l2_bytes, lat.l2_latency_cycles, lat.dram_latency_cycles) / hz
        return np.maximum(second_launch_us(device) * 1e-6 + latency - saved, 0.0), resident, False
    ks = sorted(int(k) for k in table)
    xs, ys = np.asarray(ks, dtype=float), np.asarray([table[str(k)] for k in ks], dtype=float)
    fixed_us = np.interp(s, xs, ys)
    if len(ks) > 1:  # beyond the measured counts: the line through the two nearest
        lo = ys[0] + (s - xs[0]) * (ys[1] - ys[0]) / (xs[1] - xs[0])
        hi = ys[-1] + (s - xs[-1]) * (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        fixed_us = np.where(s < xs[0], np.maximum(lo, 0.0), np.where(s > xs[-1], hi, fixed_us))
    return np.maximum(fixed_us * 1e-6 - saved, 0.0), resident, True


def _reduction_fields(device: DeviceSpec, M: int, N: int, slices: int, hz: float, programmatic: bool) -> dict:
    """Prediction's account of split_k's reduction (none for one slice)."""
    if slices <= 1:
        return {}
    fixed, resident, measured = reduction_parts(device, M, N, slices, hz, programmatic)
    return dict(reduction_fixed_us=float(fixed) * 1e6, reduction_fixed_measured=measured,
                reduction_programmatic_saving_us=(device.latency.programmatic_launch_saving_us or 0.0) if programmatic else 0.0,
                reduction_partials_MB=4.0 * slices * M * N / 1e6, reduction_l2_MB=float(resident) / 1e6)


def _rows_banks_lines(rows: int, K: int) -> tuple[int, int]:
    """A warp's load of one word from each of `rows` rows K floats apart (word r*K): the most words in
    one of the 32 four-byte banks (the L1 data wavefronts it needs when the lines are in L1) and the
    distinct 128-byte lines it touches."""
    words = [r * int(K) for r in range(rows)]
    banks = np.bincount([w % 32 for w in words], minlength=32)
    return int(banks.max()), len({w // 32 for w in words})


def l1_line_rate_and_source(device: DeviceSpec) -> tuple[float, str]:
    """Distinct 128-byte lines one SM's L1 looks up per clock for a warp's global load, and whence: the
    generation's measured rate, else the tag stage's published lookups per clock, else one."""
    m = device.memory
    if m.l1_lines_per_clock_per_sm:
        return m.l1_lines_per_clock_per_sm, "measured on this SM generation"
    if m.l1_tag_lookups_per_clock:
        return m.l1_tag_lookups_per_clock, "the L1 tag stage's published lookups per clock"
    return 1.0, "one line per clock: no rate measured or published for this generation"


def l1_line_rate(device: DeviceSpec) -> float:
    """l1_line_rate_and_source's rate."""
    return l1_line_rate_and_source(device)[0]


def warp_load_rows(c: KernelConfig, M: int, N: int) -> tuple[int, float]:
    """The smem-less kernels' warp loads inside an M x N problem: the rows of A one warp's load reads (a
    naive_rows warp: up to 32 consecutive rows of one column; coalesced: ceil(32 / bn) rows of bn columns)
    and the share of a block's warps that load (lanes and warps outside the problem skip the loop)."""
    m_in, n_in = min(c.bm, int(M)), min(c.bn, int(N))
    if c.spec.mapping == "naive_rows":  # a warp: 32 consecutive rows of one column
        return min(32, m_in), float(np.ceil(m_in / 32) / np.ceil(c.bm / 32) * n_in / c.bn)
    # a warp: 32 consecutive columns of one row, or 32 / bn rows of bn columns
    rows = min(int(np.ceil(32 / c.bn)), m_in)
    active = (m_in / c.bm * np.ceil(n_in / 32) / (c.bn / 32) if c.bn >= 32
              else np.ceil(m_in * c.bn / 32) / (c.bm * c.bn / 32))
    return rows, float(active)


def one_element_pipe_clocks(a_wavefronts: float, lsu: float) -> float:
    """Clocks of the L1TEX pipe a one-element kernel's warp takes a k step for its two loads: A's (its banks'
    wavefronts) and B's line (one), each at least `lsu` clocks (schedule.lsu_pipe_clocks)."""
    return max(a_wavefronts, lsu) + max(1.0, lsu)


def l1_lines_stage(device: DeviceSpec, configs: Sequence[KernelConfig], r: ResourceStage, M, N, K) -> ResourceStage:
    """The L1 cost of the smem-less kernels' global loads for this problem. A warp's load that hits in L1
    takes as many data wavefronts as the most words it reads from one bank, and the L1 looks up
    `memory.l1_lines_per_clock_per_sm` distinct lines per clock (measured per generation; where it was
    not, the tag stage's published `memory.l1_tag_lookups_per_clock`; where neither, one line per clock:
    a wavefront per line); its cost is the larger. naive_rows reads A down the warp's rows (K floats apart: gcd(K, 32) of 32 share a bank) and
    one B line; coalesced reads A from ceil(32 / bn) rows and one B line. Only rows and warps inside the
    problem count: a problem narrower than a block (M < bm or N < bn) leaves lanes and whole warps idle,
    and the idle ones skip the loop."""
    rate = l1_line_rate(device)
    lsu = lsu_pipe_clocks(device.compute.ldst_units_per_sm)
    n = len(configs)
    Ms, Ns, Ks = (np.broadcast_to(np.asarray(x), (n,)) for x in (M, N, K))
    w = np.array(r.smem_wavefronts_block, dtype=float, copy=True)  # the smem-less kernels' are 0 (_structure)
    all_lines, all_banks = np.full(n, np.nan), np.full(n, np.nan)
    for j, c in enumerate(configs):
        if c.spec.uses_smem:
            continue
        rows, active = warp_load_rows(c, int(Ms[j]), int(Ns[j]))
        banks, lines = _rows_banks_lines(rows, int(Ks[j]))
        all_lines[j], all_banks[j] = lines + 1.0, banks + 1.0  # + the B line: one wavefront
        w[j] = (c.threads / 32) * active * max(one_element_pipe_clocks(banks, lsu), all_lines[j] / rate)
    return replace(r, smem_wavefronts_block=w, l1_lines=all_lines, l1_bank_wavefronts=all_banks)


def launch_overhead_s(device: DeviceSpec) -> float:
    """What a timed launch costs besides its blocks' work: from the start event to the end event of a
    kernel that does nothing (the GPU front end takes the launch, dispatches the grid, and the end
    event waits for the grid to retire), measured as validate times a kernel. A constant of the GPU
    and its timing method, not of the kernel: it bounds small problems (3.71 us on the H100 is the
    whole time of a 128^3 SGEMM at 1.1 TFLOPS). Dispatching blocks adds about 0.6 ns per block on the
    H100 (3.71 us at 1 block, 8.80 us at 8,448: results/archive/fixed-costs-20261123-h100-sxm.txt);
    that overlaps the blocks' work and is not counted.

    Where nobody measured it for the device's generation (or with datasheet figures), the generation's
    published back-to-back launch time stands for it (latency.back_to_back_launch_us): the least a
    launch costs, what a kernel queued behind another adds. validate's launch, alone between two events,
    costs more: on Hopper 3.71 us measured against 2.43 us published (and 2.30 us measured for a second
    launch behind the first, the published figure's own situation). 0 where neither is known."""
    return launch_overhead_us(device) * 1e-6


def _measured_else_published(device: DeviceSpec, measured: Optional[float]) -> float:
    """A launch figure in microseconds: the generation's measured one, else its published back-to-back
    launch time (latency.back_to_back_launch_us), else 0."""
    us = measured if measured is not None else device.latency.back_to_back_launch_us
    return us or 0.0


def launch_overhead_us(device: DeviceSpec) -> float:
    """launch_overhead_s in microseconds, as the figure is given."""
    return _measured_else_published(device, device.latency.launch_overhead_us)


def second_launch_us(device: DeviceSpec) -> float:
    """What split_k's second kernel adds to the timed window for its launch: latency.second_launch_us where
    measured, else the generation's published back-to-back launch time, the same situation (a kernel
    queued behind another: on Hopper 2.30 us measured, 2.43 us published); 0 where neither is known."""
    return _measured_else_published(device, device.latency.second_launch_us)


def _stages_tile_f4(cfg: KernelConfig) -> bool:
    """Whether the kernel stages its tiles through kernels/tile_f4.cuh's load_tile (as smem_banks tells them)."""
    s = cfg.spec
    return s.staging == "registers" and s.smem_read_vector == 4


def ldg_wavefronts(cfg: KernelConfig) -> float:
    """What the replay charges each global load of a k-tile's staging on the L1TEX pipe as it issues
    (model.schedule), for the kernels that stage through kernels/tile_f4.cuh's load_tile: the layout's
    width, the wavefronts of one of its loads, whatever the binary's load width. The edge body, and the
    inner body of ragged = inner, load the float4 layout four scalars at a time, and each scalar load
    touches the lines and sectors its float4 load would (ncu on the H100,
    results/archive/ncu-scalar-loads-20261125-h100-sxm.csv: 4x the requests and 4x the sectors of the
    float4 loads, 25-50 % more LSU wavefronts, short-scoreboard stalls behind the shared loads), so it
    occupies the pipe as long; counting each at its own width (1) charged the scalar bodies a quarter of
    that. What a load's lines take beyond its width is ldg_returns. 0 (the binary's width) for the other
    kernels."""
    return float(cfg.gmem_vector) if _stages_tile_f4(cfg) else 0.0


def ldg_returns(cfg: KernelConfig) -> float:
    """Data-stage wavefronts a warp's global loads of one k-tile take beyond their width (ldg_wavefronts),
    for the kernels that stage through kernels/tile_f4.cuh: the L1TEX data stage serves a global load one
    wavefront per distinct 128-byte line a warp's load touches (tile_load_lines), so A's float4 loads at
    bk = 4, 32 rows of 16 bytes, take 32 wavefronts where their width says 4. ncu on the H100 counts
    1.01-1.13 x these lines per global load instruction for fourteen configurations
    (results/archive/ncu-global-loads-20261126-h100-sxm.json, benchmarks/ldg_wavefronts.py); the data stage
    was 80-92 % busy in the four of them the model had 19-30 % fast. When the lines take the stage is not
    known (the data come back from L1 or the L2 after the load issued), so the replay adds them to the
    pipe's work in a pass, which bounds the pass (model.schedule), and not to the queue in front of the
    shared loads issued after it: charging every line at issue was tried and made the accuracy set 6.4 ->
    7.9 % (docs/model.md, "Global loads on the L1TEX pipe"). 0 for the other kernels and for coalesced
    loads (a float4 load of 512 contiguous bytes is its 4 lines)."""
    if not _stages_tile_f4(cfg):
        return 0.0
    w = int(cfg.gmem_vector)
    return sum(n - w for n in tile_load_lines(cfg)) / (cfg.threads / 32)  # a load never touches fewer lines than its width


def warp_load_lines(cols: int, width: int) -> int:
    """Distinct 128-byte lines one warp's load touches in kernels/tile_f4.cuh's map (element e = tid + r x
    threads of a tile `cols` floats wide, `width` floats an element, row-major; rows in lines of their own:
    K and N multiples of 32 floats): 32 consecutive elements lie in one row where a row holds 32 or more
    of them (its `width` lines, the whole 512 or 128 bytes), else across 32 / (cols / width) rows of
    ceil(cols / 32) lines each. double_buffer 128 x 128 x 8: A's float4 loads 16 rows of 32 bytes (16
    lines), B's 512 contiguous bytes (4); at bk = 4, 32 rows of 16 bytes (32)."""
    per_row = max(cols // width, 1)
    return width if per_row >= 32 else (32 // per_row) * -(-cols // 32)


def tile_load_lines(cfg: KernelConfig) -> tuple[int, ...]:
    """The lines of every warp's load in one k-tile's staging (warp_load_lines), A's loads then B's: the
    catalogue's whole-loads rule makes every load of a tile a full warp's, so A's all touch as many lines,
    and B's."""
    w = int(cfg.gmem_vector)
    n_a, n_b = cfg.bm * cfg.bk // (32 * w), cfg.bk * cfg.bn // (32 * w)
    return (warp_load_lines(cfg.bk, w),) * n_a + (warp_load_lines(cfg.bn, w),) * n_b


def lds_wavefronts(cfg: KernelConfig, program: dict, tiles_per_pass: float):
    """What the replay charges each shared load of `program`: its own wavefronts where the bank simulation's
    groups tell the loads apart (schedule.lds_split over smem_banks.read_groups), else the mean of the k-tile's
    (smem_counts)."""
    li, lw, _, _ = smem_counts(cfg)
    return lds_split(program, read_groups(cfg), lw / li if li else 1.0, tiles_per_pass)


def async_copy_clocks(device: DeviceSpec, cfg: KernelConfig) -> tuple:
    """What the replay charges the cp.async copies of a kernel whose global loads are cp.async (async_pipeline):
    (words a lane, clocks a copy holds the SM's pipe) from memory.async_copy_clocks_by_bytes (benchmarks/ldgsts_rate.py:
    copies a clock a SM with many in flight, from L1- and L2-resident data); () for other kernels and where nobody
    measured it (each copy its width in wavefronts, as a global load). The interior body copies 16 bytes a lane, the
    edge body 4 (kernels/11_async_pipeline.cu): the binary's own copies say which (their width in the loop program)."""
    table = device.memory.async_copy_clocks_by_bytes
    if not table or cfg.spec.staging != "async":
        return ()
    return tuple(sorted((int(k) // 4, float(v)) for k, v in table.items()))


def _simulated(i: IssueStage, b, warps, c_ffma, configs, device, local_latency, returns, banks=0,
               fetch_interval=None, global_latency=None) -> np.ndarray:
    """Simulated compute phase per k-tile (model.schedule) for the configs with a usable loop program;
    local_latency: per config, what a local load waits (LocalStage.latency: L1's, or L2's and DRAM's
    where the frames do not fit in L1); returns: per config, ldg_returns (ResourceStage.ldg_returns); banks:
    the register-bank term's banks (0: none, Figures.register_banks); fetch_interval: loop code bytes -> the
    fewest clocks between a lone warp's instructions (Figures.lone_fetch_interval; None: no limit), taken at
    the size of the loop replayed (16 B per instruction of the program: one pass, which may hold several k-tiles);
    global_latency: per config, the latency term's replay (its global loads' latency; None: the compute phase's)."""
    lat = device.latency
    sched = int(device.compute.warp_schedulers_per_sm)
    pipe = fp32_pipe_clocks(device.compute.fp32_lanes_per_sm, sched)
    lsu = lsu_pipe_clocks(device.compute.ldst_units_per_sm)
    out = np.full(len(configs), np.nan)
    for k in np.flatnonzero(i.has_program):
        _, _, si, sw = smem_counts(configs[k])
        out[k] = compute_cycles_per_tile(i.programs[k], float(i.tiles_per_pass[k]), float(b[k] * warps[k]), float(warps[k]),
                                         sched, float(np.asarray(c_ffma).ravel()[k] if np.ndim(c_ffma) else c_ffma),
                                         lat.smem_latency_cycles, float(local_latency[k]), lat.fma_latency_cycles,
                                         lds_wavefronts(configs[k], i.programs[k], float(i.tiles_per_pass[k])),
                                         sw / si if si else 1.0, banks=banks,
                                         ldg_wavefronts=ldg_wavefronts(configs[k]), ffma_pipe=pipe, ldg_returns=float(returns[k]),
                                         lsu_pipe=lsu, fetch_interval=_loop_fetch_interval(fetch_interval, i.programs[k]),
                                         global_latency=0.0 if global_latency is None else float(np.ravel(global_latency)[k]),
                                         copy_clocks=async_copy_clocks(device, configs[k]), latency_term=global_latency is not None)
    return out


def _loop_fetch_interval(fetch_interval, program: dict) -> float:
    """fetch_interval (Figures.lone_fetch_interval) at the code size of a replayed loop: 16 B per instruction."""
    return 0.0 if fetch_interval is None else float(fetch_interval(16.0 * len(program["cls"])))


def load_queue(device, configs, r, warps, tile_bytes, port_bpc, kind, a_loaded) -> np.ndarray:
    """Cycles a lone block's k-tile load phase waits beyond latency + burst because its scalar loads queue
    (terms.load_queue_cycles; tile_cycles adds them where one block runs per SM): single-buffered tiled kernels
    (kind 1) whose tile loads are 4-byte (`gmem_vector` 1: tiled_1d, tiled_2d, smem_tiled, `load_width = 1`),
    (bm + bn) bk / threads loads a thread, less the share of A's DRAM bytes that waits the loaded DRAM latency
    (measured with the same loads in flight: terms.loaded_dram_latency). 0 without the device's table or a
    measured L2->SM port (datasheet figures)."""
    table = device.memory.l2_load_pass_cycles_by_warps_by_loads
    n = len(configs)
    if not table or port_bpc is None:
        return np.zeros(n)
    scalar = np.array([c.gmem_vector == 1 for c in configs]) & (np.broadcast_to(kind, (n,)) == 1)
    loads = (r.bm + r.bn) * r.bk / np.maximum(r.threads, 1) * (1.0 - np.broadcast_to(a_loaded, (n,)))
    return T.load_queue_cycles(np.broadcast_to(warps, (n,)), np.where(scalar, loads, 0.0), table,
                               np.broadcast_to(tile_bytes, (n,)) / port_bpc)


def _edge_extra(builds: Sequence[BuildFacts], n_edge, b, warps, c_ffma, configs, device, mem_latency, local_latency,
                returns, banks=0, fetch_interval=None, fetch_rate=None) -> np.ndarray:
    """Cycles per k-tile the guarded edge body adds to an SM running b such blocks: the binary's edge
    loop and its k-tile loop, each replayed (model.schedule) with its global loads' latency in the
    order the binary issues them, and the difference kept. The interior loop issues a tile's loads
    together and waits once; the edge body computes a 64-bit guarded address per element and nvcc
    interleaves the loads with the stores into shared memory, so a store waits for a load issued just
    before it and the loads behind that store wait too: two or more load latencies per tile where
    the interior pays one, plus the address arithmetic. Both replays use the same latency (the
    average global-load latency, terms.mem_latency), warps and FFMA rate, so nothing but the binary's
    order of instructions differs; 0 without both programs (no SASS), where no block is on an edge,
    or where the edge loop is not slower. fetch_interval: as _simulated's, each loop at its own size.
    fetch_rate (Figures.fetch_rate; None: no limit): neither loop is faster than the SM fetches it, its b
    blocks' warp instructions a k-tile at the rate of a loop of its size (16 B an instruction) with b x
    warps an SM. The k-tile loop's warps in step, as tile_cycles charges it; the edge loop's b blocks
    apart, each block's warps in step (Figures.fetch_rate's apart = b). The edge body's loads wait one by
    one behind its shared stores, and nothing keeps two blocks together through it (docs/model.md, "The
    fetch of blocks apart")."""
    lat = device.latency
    sched = int(device.compute.warp_schedulers_per_sm)
    pipe = fp32_pipe_clocks(device.compute.fp32_lanes_per_sm, sched)
    lsu = lsu_pipe_clocks(device.compute.ldst_units_per_sm)
    out = np.zeros(len(configs))
    for k in np.flatnonzero(np.asarray(n_edge) > 0):
        edge, inner = builds[k].edge_program, builds[k].program
        if not edge or not inner:
            continue
        cfg = configs[k]
        _, _, si, sw = smem_counts(cfg)
        per_tile = cfg.bm * cfg.bn * cfg.bk / cfg.threads
        wk, bk_, ck = float(np.ravel(warps)[k] if np.ndim(warps) else warps), float(np.ravel(b)[k]), float(np.ravel(c_ffma)[k] if np.ndim(c_ffma) else c_ffma)
        args = (bk_ * wk, wk, sched, ck, lat.smem_latency_cycles, float(local_latency[k]), lat.fma_latency_cycles)
        cyc = [compute_cycles_per_tile(p, p["cls"].count("F") / per_tile, *args,
                                       lds_wavefronts(cfg, p, p["cls"].count("F") / per_tile), sw / si if si else 1.0,
                                       float(np.ravel(mem_latency)[k]), banks=banks,
                                       ldg_wavefronts=ldg_wavefronts(cfg), ffma_pipe=pipe, ldg_returns=float(returns[k]),
                                       lsu_pipe=lsu, fetch_interval=_loop_fetch_interval(fetch_interval, p),
                                       copy_clocks=async_copy_clocks(device, cfg)) for p in (edge, inner)]
        if fetch_rate is not None:  # each loop's fetch: its warp instructions a k-tile on the SM at the loop's rate
            fetched = [bk_ * wk * len(p["cls"]) * per_tile / max(p["cls"].count("F"), 1)
                       / float(fetch_rate(16.0 * len(p["cls"]), bk_ * wk, apart)) for p, apart in ((edge, bk_), (inner, None))]
            cyc = [max(c, f) for c, f in zip(cyc, fetched)]
        out[k] = max(0.0, cyc[0] - cyc[1])
    return out


def _local_text(bt: PredictionBatch, k: int, from_sass) -> Optional[str]:
    if not bt.resources.local_bytes[k]:
        return None
    per_thread = float(bt.local.bytes_tile[k]) / max(float(bt.resources.threads[k]), 1.0)
    lvl = float(bt.local.level[k])
    where = "in L1" if lvl > 0 else f"{1 + lvl:.0%} in L2, the rest in DRAM" if lvl < 0 else "in L2"
    src = "the binary's main loop (SASS)" if from_sass is not None else "estimated from the frame size"
    if per_thread == 0:  # a frame the k-tile loop never touches (the out-of-line edge call's)
        return "none in the k-tile loop"
    stores = f" ({float(bt.local.store_share[k]):.0%} stores)" if lvl <= 0 else ""
    return f"{per_thread:,.0f} B per thread per k-tile{stores}, {where} [{src}]"


# ---- the typed single prediction ---------------------------------------------------------
class _M(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Resources(_M):
    threads_per_block: int
    warps_per_block: int
    registers_per_thread: int
    registers_source: str
    smem_per_block_bytes: int
    local_frame_bytes: int = 0  # per thread (compiler's spill / local frame)
    local_traffic: Optional[str] = None  # bytes per thread per k-tile, where they live, and where the figure comes from


class Occupancy(_M):
    blocks_per_sm: int
    warps_per_sm: int
    occupancy_pct: float
    limiter: str


class Level(_M):
    level: str
    bytes: float
    intensity_flop_per_byte: float
    bandwidth_GBps: float
    ceiling_GFLOPS: float


class LittleRow(_M):
    level: str
    latency_cycles: float
    needed_in_flight: float
    available_in_flight: float
    unit: str
    achievable_fraction: float


class Issue(_M):
    per_block_per_tile: dict[str, float]
    ffma_share: float
    issue_ceiling_GFLOPS: float
    loop_code_bytes: float = 0.0  # the unrolled k-tile loop: one warp's instructions per tile x 16 B
    fetch_rate_per_sm: Optional[float] = None  # calibrated warp instr/clk an SM can fetch for that loop (None: no limit known)


class Waves(_M):
    blocks: int
    blocks_per_wave: int
    full_waves: int
    tail_blocks_per_sm: int
    waves: float
    tail_refilled: bool = False  # the tail took the slots a full wave freed, several to an SM (terms.waves' refill)


class Interval(_M):
    """Where the measurement should fall (model.uncertainty): GFLOPS at 5, 25, 75 and 95 %, the
    provenance of each input, and (when asked) each input's share of the 90 % interval alone."""

    q05_GFLOPS: float
    q25_GFLOPS: float
    q75_GFLOPS: float
    q95_GFLOPS: float
    inputs: dict[str, str]  # input -> provenance (given, calibration, generation, microbenchmark, proxy, datasheet)
    parts: Optional[dict[str, tuple[float, float]]] = None  # input (or 'model') -> 90 % ends alone, as shares of gflops


class Prediction(_M):
    device: str
    kernel: str
    config: dict[str, int | str]
    M: int
    N: int
    K: int
    sm_clock_MHz: float
    figures: str
    ffma_issue_cycles: float
    register_banks: int = 0  # the register banks the simulated compute phase charged reads to (0: none)
    ffma_pipe_clocks: float = 1.0  # clocks a warp FFMA holds its scheduler's FP32 pipe (2 on Volta, Turing, GA100)
    lsu_pipe_clocks: float = 1.0  # the fewest clocks a warp's memory instruction holds the L1TEX pipe (2 on Turing: schedule.lsu_pipe_clocks)
    prefetch: str
    peak_GFLOPS: float
    resources: Resources
    occupancy: Occupancy
    traffic: list[Level]
    littles_law: list[LittleRow]
    issue: Issue
    waves: Waves
    cycles_per_tile: dict[str, float]
    exposed_latency_cycles: float
    # one-element kernels (naive, coalesced): the k steps of loads a warp issues for each wait (one_element_steps),
    # and whether that count is the binary's loop's (else the lower bound ONE_ELEMENT_UNROLL)
    load_steps: Optional[float] = None
    load_steps_from_binary: bool = False
    l2_port_bytes_per_clock: Optional[float] = None  # measured L2->SM port the tile burst arrives through
    pipe_overlap: float = 0.0  # share of min(issue, smem) the compute phase adds to max(issue, smem) (calibrated)
    load_phase_share: Optional[float] = None  # single-buffered, calibrated: share of one block's load phase b blocks expose
    scheduled_compute_cycles: Optional[float] = None  # compute phase per k-tile simulated from the binary's loop (model.schedule)
    # the register-file floor under a calibrated FFMA rate (Figures.register_bank_floor): the same loop replayed with its
    # register-bank reads at the chip's FFMA rate (issue cycles per FFMA); the compute phase is never shorter
    register_bank_floor_cycles: Optional[float] = None
    register_bank_floor_ffma_cycles: Optional[float] = None
    # the same loop replayed with its global loads' latency in the binary's issue order (a floor of the latency term)
    replayed_latency_cycles: Optional[float] = None
    launch_overhead_us: float = 0.0  # the timed launch's fixed cost included in time_s (0: neither measured nor published for this generation)
    launch_source: str = ""  # "measured" (this generation, as validate times), "published" (back to back) or ""
    edge_blocks: int = 0  # blocks that run the guarded edge body (ragged shapes; catalogue.edge_blocks)
    last_wave_store_us: float = 0.0  # the last wave's C stores after its last k-tile (last_wave_store_cycles)
    lone_block_store_us: float = 0.0  # the earlier waves' C stores that no other block hides (lone_block_store_cycles)
    c_store_ratio: float = 1.0  # sector bytes the C stores move per byte of C, all blocks' (model.gstores, edge bodies included)
    k_slices: int = 1  # split_k: the grid's slices of K (catalogue.split_slices)
    dram_rate: float = 1.0  # the share of the DRAM stream rate its DRAM reads get (TrafficStage.dram_rate)
    dram_segment_bytes: float = 0.0  # the bytes of each A row one k-tile reads (bk x 4, at least a sector): that share's key
    # DRAM time the write-back of the timing's flush's dirty lines adds to its traffic, charged in the dram term
    # (terms.flush_writeback_us; 0 where nobody measured it, and while terms.FLUSH_WRITEBACK is off)
    flush_writeback_us: float = 0.0
    dram_latency_cycles: float = 0.0  # the DRAM latency its loads' mix takes: the pointer chase, loaded for A's share (TrafficStage.dram_latency)
    dram_lines_in_flight: float = 0.0  # the resident blocks' DRAM lines of one k-tile per SM (the loading's key)
    # the L2 hits' latency the tile loads take: first reads, and second reads of lines an earlier wave read
    # (terms.tile_l2_latency; 0: not computed), and the share of the tile bytes counted as second reads (0 while
    # terms.SECOND_READS is off)
    l2_tile_latency_cycles: float = 0.0
    l2_second_read_share: float = 0.0
    reduction_us: float = 0.0  # split_k: the second kernel summing the slices' partials (reduction_seconds)
    reduction_fused: bool = False  # the last slice of each tile sums it in the main kernel (split_k_fused), no second kernel
    reduction_fixed_us: float = 0.0  # of which its fixed part (reduction_parts)
    reduction_fixed_measured: bool = False  # that part is the generation's measured floor (else the second launch and a latency)
    reduction_programmatic_saving_us: float = 0.0  # taken off that part: the second kernel launched programmatically (measured saving)
    reduction_partials_MB: float = 0.0  # the partials it reads (4 x slices x M x N bytes)
    reduction_l2_MB: float = 0.0  # of them, what it reads from the L2 (the rest from DRAM)
    edge_extra_cycles_per_tile: Optional[float] = None  # what that body adds per k-tile in the last wave (None: no edge loop known)
    edge_extra_cycles_per_tile_full: Optional[float] = None  # the same for an SM of a full wave whose blocks all run it
    edge_cycles: float = 0.0  # what the edge body adds to the whole run, every wave (cycles)
    lockstep_extra_cycles: float = 0.0  # what the unused sectors of a lone block's lines add to its load phase (terms.lockstep_load_cycles)
    load_queue_cycles: float = 0.0  # what a lone block's scalar tile loads wait in the L1's queue for L2 lines (terms.load_queue_cycles)
    ring_landing_cycles: float = 0.0  # what a cp.async ring's tile waits beyond its load phase to land from DRAM (terms.ring_landing_extra)
    # the last wave's blocks, where the load-use window applies: cycles their prefetched tile's lines wait behind their own
    # shared loads in the L1 data stage (terms.data_stage_wait)
    data_stage_wait_cycles: float = 0.0
    lone_fetch_interval_cycles: float = 0.0  # the fewest clocks between a lone warp's instructions the loop's fetch allows (0: none)
    exposed_latency_cycles_tail: float = 0.0  # the same for the last partial wave's blocks (what a grid of one partial wave runs)
    load_use_share: Optional[float] = None  # the last wave's blocks: the FFMAs' share before the next tile's first consumer, where it replaces the prefetch share (window_applies)
    # the smem-less kernels' L1 cost per warp and k step (l1_lines_stage): distinct 128-byte lines (A's rows and
    # the B line), the most words of A in one bank (+1 for B), the lines the L1 looks up per clock and whence
    l1_lines_per_warp_step: Optional[float] = None
    l1_bank_wavefronts_per_warp_step: Optional[float] = None
    # the tile_f4.cuh kernels' global loads on the L1TEX data stage: the lines a warp's load touches (mean over
    # a k-tile's loads: tile_load_lines) and the wavefronts a warp's loads of one k-tile take beyond their width
    ldg_lines_per_load: Optional[float] = None
    ldg_returns_per_warp_tile: Optional[float] = None
    l1_line_rate: Optional[float] = None
    l1_line_rate_source: Optional[str] = None
    time_s: float
    gflops: float
    pct_of_peak: float
    bound: str
    reason: str
    regime: str = ""  # occupancy_regime: lone, subwave, few or many (the model spread's key beside the bound)
    interval: Optional[Interval] = None


def predict(figures: Figures | DeviceSpec, config: KernelConfig, M: int = 4096, N: Optional[int] = None,
            K: Optional[int] = None, build: Optional[BuildFacts] = None, clock_MHz: Optional[float] = None,
            registers: Optional[int] = None, width_parts: bool = False) -> Prediction:
    """Predict one configuration. N and K default to M (square). build: what is known of its binary
    (facts.BuildFacts; default the estimate); registers: shorthand for a build with that register
    count (the compiler's, or one you know). Its interval always comes with it; width_parts: also
    each input's part of the interval's width (model.uncertainty.width_parts)."""
    fig = Figures.of(figures)
    N = M if N is None else N
    K = M if K is None else K
    problem = Problem(M, N, K)
    if build is None:
        build = given(registers)
    elif registers is not None:
        raise ValueError("give registers or build, not both")
    device = fig.device
    if build.registers is None:
        config.check_device(device)
    elif build.registers > device.limits.max_registers_per_thread:
        raise UserError(f"registers={build.registers} exceeds {device.name}'s {device.limits.max_registers_per_thread} per thread")
    bt = predict_batch(fig, [config], problem, builds=[build], clock_MHz=clock_MHz)
    return prediction_row(bt, 0, config, build, width_parts=width_parts)


def interval_row(bt: PredictionBatch, k: int, width_parts: bool = False) -> Interval:
    """Config k's interval (model.uncertainty)."""
    q = U.intervals(bt, [k])
    return Interval(**{f"{name}_GFLOPS": float(v[0]) for name, v in q.items()},
                    inputs={**U.provenance(bt.figures, bt.clock_given), "registers": U.registers_provenance(bt, [k])},
                    parts=U.width_parts(bt, k) if width_parts else None)


def prediction_row(bt: PredictionBatch, k: int, config: KernelConfig, build: BuildFacts,
                   width_parts: bool = False) -> Prediction:
    """Row k of a batch as a typed `Prediction` (every intermediate number with its name)."""
    fig = bt.figures
    device = fig.effective
    r, o, t, i, ll, w, c = bt.resources, bt.occupancy, bt.traffic, bt.issue, bt.littles_law, bt.waves, bt.compute
    clock = float(bt.clock_MHz[k])
    peak = device.peak_fp32_GFLOPS(clock)
    flops = float(t.flops[k])
    hz = clock * 1e6
    mem = device.memory
    smem_GBps = mem.smem_bandwidth_bytes_per_clock_per_sm * device.compute.sm_count * hz * 1e-9
    levels = []
    for name, byts, bw in (("dram", t.dram_bytes[k], mem.dram_bandwidth_GBps * float(t.dram_rate[k])), ("l2", t.l2_bytes[k], mem.l2_bandwidth_GBps),
                           ("smem", t.smem_bytes[k], smem_GBps)):
        ai = flops / byts if byts > 0 else float("inf")
        levels.append(Level(level=name, bytes=float(byts), intensity_flop_per_byte=float(ai), bandwidth_GBps=float(bw),
                            ceiling_GFLOPS=float(min(ai * bw, 1e12))))
    lat = device.latency
    lrows = []
    for name, latency, unit in (("fma", lat.fma_latency_cycles, "warp FFMA"), ("smem", lat.smem_latency_cycles, "wavefronts"),
                                ("l2", lat.l2_latency_cycles, "bytes"), ("dram", lat.dram_latency_cycles, "bytes")):
        lrows.append(LittleRow(level=name, latency_cycles=float(latency), needed_in_flight=_at(getattr(ll.needed, name), k),
                               available_in_flight=_at(getattr(ll.available, name), k), unit=unit,
                               achievable_fraction=_at(getattr(ll.fraction, name), k)))
    counts = {nm: float(getattr(i, nm)[k]) for nm in ("ffma", "lds", "sts", "ldg", "bar", "other")}
    share = counts["ffma"] / float(i.issue[k])
    # issue ceiling: every issue slot that carries an FFMA does 32 lanes x 2 flop
    cm = device.compute
    issue_ceiling = cm.sm_count * cm.warp_schedulers_per_sm * cm.issue_per_scheduler_per_clock * share * 64 * clock * 1e-3
    b = int(o.blocks_per_sm[k])
    bound = BOUNDS[int(bt.bound[k])] if b > 0 else "occupancy"
    warps = float(o.warps_per_block[k])
    fetch = float(fig.fetch_rate(float(c.code_bytes[k]), max(b, 1) * warps))
    fetch = fetch if np.isfinite(fetch) else None
    per_wave = int(w.blocks_per_wave[k])
    reason = REASONS.get(bound, "no block fits on an SM")
    if bound == "issue" and fetch and b * float(i.issue[k]) / fetch >= 0.999 * float(c.cycles[T.TERMS.index("issue"), k]):
        reason = (f"instruction fetch: the unrolled k-tile loop (~{c.code_bytes[k] / 1024:.0f} KB) outgrows the instruction "
                  f"caches; the SM fetches {fetch:.2f} warp instructions per clock for it")
    prefetch = build.prefetch
    lps, sch, schl = float(c.load_phase_share[k]), float(c.scheduled[k]), float(c.scheduled_latency[k])
    bfl = float(np.ravel(c.bank_floor)[k])
    return Prediction(
        device=device.name, kernel=config.kernel, config=config.params(), M=_dim(bt, k, 0), N=_dim(bt, k, 1),
        K=_dim(bt, k, 2), sm_clock_MHz=clock, peak_GFLOPS=peak, figures=fig.label, register_banks=fig.register_banks,
        ffma_pipe_clocks=fp32_pipe_clocks(fig.effective.compute.fp32_lanes_per_sm, fig.effective.compute.warp_schedulers_per_sm),
        lsu_pipe_clocks=lsu_pipe_clocks(fig.effective.compute.ldst_units_per_sm),
        ffma_issue_cycles=float(c.c_ffma[k]),
        prefetch=("none (single buffer)" if config.buffers == 1 else
                  ("yes" if prefetch is None or prefetch >= 1 else
                   f"partly: {prefetch:.0%} of the FFMAs follow the next tile's loads" if prefetch > 0 else
                   "no: the compiler sank the next tile's loads below the FFMAs") + f" [{build.prefetch_source}]"),
        resources=Resources(threads_per_block=config.threads, warps_per_block=int(warps),
                            registers_per_thread=int(r.registers[k]), registers_source=build.registers_source,
                            smem_per_block_bytes=config.smem_bytes, local_frame_bytes=int(r.local_bytes[k]),
                            local_traffic=_local_text(bt, k, build.local_tile_bytes)),
        occupancy=Occupancy(blocks_per_sm=b, warps_per_sm=int(b * warps), occupancy_pct=float(o.occupancy[k] * 100),
                            limiter=LIMITERS[int(o.limiter[k])]),
        traffic=levels, littles_law=lrows,
        issue=Issue(per_block_per_tile=counts, ffma_share=share, issue_ceiling_GFLOPS=issue_ceiling,
                    loop_code_bytes=float(c.code_bytes[k]), fetch_rate_per_sm=fetch),
        waves=Waves(blocks=int(t.blocks[k]), blocks_per_wave=per_wave, full_waves=int(w.full_waves[k]),
                    tail_blocks_per_sm=int(w.tail[k]), waves=float(t.blocks[k] / max(per_wave, 1)),
                    tail_refilled=bool(w.tail_refilled[k])),
        cycles_per_tile={nm: float(c.cycles[j, k]) for j, nm in enumerate(T.TERMS)},
        exposed_latency_cycles=float(c.exposed[k]),
        exposed_latency_cycles_tail=float(c.exposed_tail[k]),
        load_steps=None if r.uses_smem[k] > 0 else float(ll.load_steps[k]),
        load_steps_from_binary=bool(r.uses_smem[k] == 0 and ll.load_steps_binary[k]),
        l2_port_bytes_per_clock=fig.l2_port_bytes_per_clock,
        pipe_overlap=float(c.overlap[k]),
        load_phase_share=None if np.isnan(lps) else lps,
        scheduled_compute_cycles=None if np.isnan(sch) else sch,
        register_bank_floor_cycles=None if np.isnan(bfl) else bfl,
        register_bank_floor_ffma_cycles=None if fig.register_bank_floor is None else fig.register_bank_floor[1],
        replayed_latency_cycles=None if np.isnan(schl) else schl,
        launch_overhead_us=launch_overhead_us(device), launch_source=U.launch_source(device),
        edge_blocks=int(c.edge_blocks[k]),
        last_wave_store_us=float(bt.store_cycles[k]) / hz * 1e6,
        lone_block_store_us=float(bt.lone_store_cycles[k]) / hz * 1e6, c_store_ratio=float(bt.resources.c_store_ratio[k]),
        k_slices=int(t.slices[k]), reduction_us=float(bt.reduce_s[k]) * 1e6, dram_rate=float(t.dram_rate[k]),
        **({"reduction_fused": True} if config.spec.reduction == "fused" and t.slices[k] > 1 else
           _reduction_fields(device, _dim(bt, k, 0), _dim(bt, k, 1), int(t.slices[k]), hz,
                             bool(programmatic_reduction(device, [build])[0]))),
        dram_segment_bytes=float(t.dram_segment_bytes[k]),
        flush_writeback_us=float(t.writeback_us[k]),
        dram_latency_cycles=float(t.dram_latency[k]), dram_lines_in_flight=float(t.dram_lines_in_flight[k]),
        l2_tile_latency_cycles=float(t.l2_latency[k]), l2_second_read_share=float(t.second_share[k]),
        edge_extra_cycles_per_tile=(float(c.edge_extra_last[k]) if c.edge_blocks[k] > 0 and build.edge_program and build.program
                                    else None),
        edge_extra_cycles_per_tile_full=(float(c.edge_extra_full[k]) if c.edge_blocks[k] > 0 and build.edge_program and build.program
                                         else None),
        edge_cycles=float(bt.edge_cycles[k]),
        lockstep_extra_cycles=float(c.lockstep[k]),
        load_queue_cycles=float(c.load_queue[k]),
        ring_landing_cycles=float(c.ring_landing[k]),
        data_stage_wait_cycles=float(c.data_stage_wait[k]),
        lone_fetch_interval_cycles=float(c.lone_fetch_interval[k]),
        load_use_share=None if not np.isfinite(c.load_use_share[k]) else float(c.load_use_share[k]),
        **_l1_fields(device, r, k),
        **({} if not _stages_tile_f4(config) else
           dict(ldg_lines_per_load=float(np.mean(tile_load_lines(config))), ldg_returns_per_warp_tile=float(r.ldg_returns[k]))),
        time_s=float(bt.time_s[k]), gflops=float(bt.gflops[k]), pct_of_peak=float(bt.gflops[k] / peak * 100),
        bound=bound, reason=reason, regime=str(bt.regime[k]), interval=interval_row(bt, k, width_parts) if b > 0 else None)


def _l1_fields(device: DeviceSpec, r: ResourceStage, k: int) -> dict:
    """Prediction's l1_* fields for a smem-less kernel, from l1_lines_stage (empty for the others)."""
    if r.l1_lines is None or np.isnan(r.l1_lines[k]):
        return {}
    rate, source = l1_line_rate_and_source(device)
    return dict(l1_lines_per_warp_step=float(r.l1_lines[k]), l1_bank_wavefronts_per_warp_step=float(r.l1_bank_wavefronts[k]),
                l1_line_rate=rate, l1_line_rate_source=source)


def _dim(bt: PredictionBatch, k: int, axis: int) -> int:
    return int(bt.dims[axis][k])


def _at(x, k: int) -> float:
    """Entry k of a per-config array, or the scalar every config shares."""
    return float(np.asarray(x).ravel()[k] if np.ndim(x) else x)
