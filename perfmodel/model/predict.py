"""From (DeviceSpec, KernelConfig, M, N, K) to a typed `Prediction`; `predict_batch` for sweeps."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..catalogue import KernelConfig
from ..errors import UserError
from . import terms as T
from .occupancy import LIMITERS, occupancy
from .smem_banks import smem_counts, smem_counts_many

REASONS = {
    "fma": "the FP32 FMA pipe is saturated: tiles, occupancy and issue all keep up",
    "issue": "warp schedulers are full: non-FFMA instructions (loads, address math, barriers) take issue slots from FFMA",
    "smem": "shared-memory/L1 wavefronts (bank conflicts, uncoalesced lines) are the busiest pipe",
    "l2": "L2->SM bandwidth: the block tile is too small to reuse data enough",
    "dram": "DRAM bandwidth: arithmetic intensity against DRAM is below the ridge point",
    "local": "local memory: spilled registers or arrays the compiler put in local memory dominate the traffic",
    "latency": "latency is exposed: too few resident blocks or no prefetch to hide global-load latency",
}


def _structure(cfg: KernelConfig) -> tuple:
    """Per-config counts the terms need (the only per-config Python work; cached)."""
    s = cfg.spec
    thr = cfg.threads
    warps = thr / 32
    if s.uses_smem:
        lds_i, lds_w, sts_i, sts_w = smem_counts(cfg)
        ldg = (cfg.bm * cfg.bk + cfg.bk * cfg.bn) / (s.gmem_vector * thr)
        l1_w = 0.0
        bk = cfg.bk
    else:  # one k step per "tile"; loads go through L1: count its wavefronts (128 B lines)
        lds_i = lds_w = sts_i = sts_w = 0.0
        ldg = 2.0
        bk = 1
        if s.mapping == "naive_rows":  # lanes along m: one A line per row covered, B one line
            per_warp = min(32, cfg.bm) + 1
        else:  # lanes along n: B one line, A one word per row covered
            per_warp = 1 + int(np.ceil(32 / cfg.bn))
        l1_w = warps * per_warp
    ffma = cfg.bm * cfg.bn * bk / thr
    return (thr, cfg.bm, cfg.bn, bk, ffma, lds_i, lds_w + sts_w + l1_w, sts_i, ldg, s.barriers_per_tile,
            s.buffers, float(s.uses_smem), (lds_i / max(warps, 1)) / bk, lds_w / max(lds_i, 1e-9) if lds_i else 1.0)


@dataclass
class PredictionBatch:
    """Arrays over configs: every intermediate the single `Prediction` reports."""

    gflops: np.ndarray
    time_s: np.ndarray
    bound: np.ndarray  # index into terms.TERMS
    blocks_per_sm: np.ndarray
    limiter: np.ndarray  # index into LIMITERS
    occupancy: np.ndarray
    cycles: np.ndarray  # (6, n) per-tile cycles at full residency
    extra: dict


def predict_batch(device, configs: Sequence[KernelConfig], M, N, K, registers=None, clock_MHz=None, local_bytes=None,
                  figures: str = "datasheet", prefetch=None, local_tile_bytes=None, programs=None) -> PredictionBatch:
    """Vectorised prediction. registers / local_bytes: per-config counts from the compiler (None: the
    estimate, no local memory); clock: MHz; figures: 'datasheet' or 'measured' (perfmodel calibrate);
    prefetch: per config, the share of a double-buffered binary's compute phase issued after the next
    tile's loads (measure.sass: 1 = loads first, 0 = sunk below the FFMAs; None: 1, as the source intends);
    local_tile_bytes: per config, local loads + stores per thread per k-tile read off the binary's main
    loop (measure.sass; NaN or None: estimated from the frame size); programs: per config, the binary's
    k-tile loop as a dependency program (measure.sass.loop_program; None: the closed-form compute phase).
    With a program the compute phase is simulated (model.schedule) and the issue term counts the
    binary's instructions."""
    if figures not in ("datasheet", "measured"):
        raise UserError(f"figures must be 'datasheet' or 'measured', not {figures!r}")
    calibrated = device
    if figures == "measured":
        device = device.with_measured()
    n = len(configs)
    smem_counts_many(configs)  # one vectorised bank-conflict simulation for all new configs
    st = np.array([_structure(c) for c in configs], dtype=float).reshape(n, -1).T
    thr, bm, bn, bk, ffma_t, lds_i, smem_w, sts_i, ldg_t, bars, bufs, uses_smem, lds_per_step, wf_per_lds = st
    smem = np.array([c.smem_bytes for c in configs], dtype=float)
    local = np.zeros(n) if local_bytes is None else np.broadcast_to(np.asarray(local_bytes, dtype=float), (n,))
    if registers is None:
        # __launch_bounds__(threads) makes nvcc fit one block: registers are capped at what the
        # register file leaves per thread (8-register steps) and the excess spills (4 B each)
        est = np.array([c.estimated_registers() for c in configs], dtype=float)
        thr_ = np.array([c.threads for c in configs], dtype=float)
        lim_ = device.limits
        cap = np.minimum(lim_.max_registers_per_thread,
                         np.floor(lim_.registers_per_block / (np.ceil(thr_ / 32) * 32) / 8) * 8)
        regs = np.minimum(est, cap)
        local = np.maximum(local, 4.0 * (est - regs))
    else:
        regs = np.broadcast_to(np.asarray(registers, dtype=float), (n,))
    M, N, K = (np.broadcast_to(np.asarray(x, dtype=float), (n,)) for x in (M, N, K))
    cmp_, mem, lat, lim = device.compute, device.memory, device.latency, device.limits
    clock = cmp_.sm_clock_boost_MHz if clock_MHz is None else clock_MHz
    hz = clock * 1e6
    sms = cmp_.sm_count

    # occupancy
    b, limiter, warps = occupancy(lim, thr, regs, smem)
    occ = b * warps / lim.max_warps_per_sm

    # traffic
    gy, gx, blocks, ktiles = T.grid(M, N, K, bm, bn, bk)
    conc = np.minimum(blocks, b * sms)
    l2b = T.l2_to_sm_bytes(M, N, K, bm, bn)
    drb = T.dram_bytes(M, N, K, bm, bn, conc, mem.l2_bytes)
    flops = 2.0 * M * N * K
    tiles_total = np.maximum(blocks * ktiles, 1)
    l2_tile, dram_tile = l2b / tiles_total, drb / tiles_total
    smem_moved = smem_w * tiles_total * T.WAVEFRONT_BYTES
    L_mem, hit = T.mem_latency(drb, l2b, lat.l2_latency_cycles, lat.dram_latency_cycles)

    # issue
    ffma, lds, sts, ldg, bar, other = T.issue_counts(thr, ffma_t, lds_i, sts_i, ldg_t, bars, bufs, uses_smem)
    # the binary's k-tile loop, where known (a loop with less than a tile of FFMAs is an inner loop):
    # its non-FFMA instructions replace the estimated integer/branch work
    progs = [None] * n if programs is None else list(programs)
    tiles_pp = np.array([(p["cls"].count("F") / f) if p and uses and f > 0 else np.nan
                         for p, uses, f in zip(progs, uses_smem, ffma_t)])
    has_prog = np.isfinite(tiles_pp) & (tiles_pp >= 0.99)
    if has_prog.any():
        nonf = np.array([(len(p["cls"]) - p["cls"].count("F")) if o else 0.0 for p, o in zip(progs, has_prog)])
        other = np.where(has_prog, np.maximum(0.0, nonf / np.where(has_prog, tiles_pp, 1.0) * warps - (lds + sts + ldg + bar)),
                         other)
    non_ffma = lds + sts + ldg + bar + other
    issue = ffma + non_ffma

    # Little's law per level (per SM)
    l2_bpc = mem.l2_bandwidth_GBps * 1e9 / hz / sms
    dram_bpc = mem.dram_bandwidth_GBps * 1e9 / hz / sms
    tile_bytes = (bm + bn) * bk * T.FLOAT
    inflight_bytes = b * tile_bytes * np.where(uses_smem > 0, 1.0, warps * 4 / np.maximum(bm + bn, 1))
    need_l2 = l2_bpc * lat.l2_latency_cycles
    need_dram = dram_bpc * lat.dram_latency_cycles
    f_l2 = T.littles_law(need_l2, inflight_bytes)
    f_dram = T.littles_law(need_dram, inflight_bytes)
    fma_per_clk = cmp_.fp32_lanes_per_sm / 32.0
    need_fma = lat.fma_latency_cycles * fma_per_clk
    avail_fma = b * warps * np.minimum(bm * bn / thr, need_fma)  # independent accumulators per warp
    f_fma = T.littles_law(need_fma, avail_fma)
    smem_per_clk = mem.smem_bandwidth_bytes_per_clock_per_sm / T.WAVEFRONT_BYTES
    need_smem = lat.smem_latency_cycles * smem_per_clk
    # in flight: each warp's independent loads of a k step, each as many wavefronts as its bank conflicts make it
    avail_smem = np.where(uses_smem > 0, b * warps * np.maximum(lds_per_step, 1.0) * np.maximum(wf_per_lds, 1.0), need_smem)
    f_smem = T.littles_law(need_smem, avail_smem)

    # local memory (bytes per thread in the binary's local frame). Without registers for the
    # accumulators and their fragments the arrays live in local memory: every FFMA loads and stores its accumulator
    # (8 B) and, once the frame also holds the fragments, loads both operands (8 B more). Otherwise
    # the frame holds spilled registers, reloaded once per tile. L1 serves it while the resident
    # frames fit beside shared memory, else L2.
    acc_floats = bm * bn / thr
    frag_bytes = 4.0 * (bm / np.maximum(thr / np.maximum(bn, 1), 1) + bn)  # generous bound on fragments
    arrays = (local > 0) & (regs < acc_floats + 16)  # no room for accumulators plus fragments
    per_ffma = 8.0 + 8.0 * np.clip((local - 4 * acc_floats) / np.maximum(frag_bytes, 1), 0, 1)
    local_tile = np.where(arrays, per_ffma * ffma_t, local) * thr * (local > 0)
    if local_tile_bytes is not None:
        lt = np.broadcast_to(np.asarray(local_tile_bytes, dtype=float), (n,))
        local_tile = np.where(np.isfinite(lt) & (local > 0), lt * thr, local_tile)
    # where the frames live: L1 while the resident frames fit beside shared memory (level 1); else
    # the L2 holds the share L2 bytes / (every SM's frames) of them and DRAM the rest (level = that
    # L2 share: 0..1 exclusive of the L1 case, encoded as -(1 - share) .. 0 for the terms)
    frames = local * thr * np.maximum(b, 1)
    local_in_l1 = frames <= mem.l1_bytes_per_sm - smem * np.maximum(b, 1)
    l2_share = np.clip(mem.l2_bytes / np.maximum(frames * sms, 1.0), 0.0, 1.0)
    local_level = np.where(local_in_l1, 1.0, -(1.0 - l2_share))
    # one L1TEX data pipe (128 B/clk) serves shared, global and local accesses alike: the tile's
    # global loads (tile bytes / 128 B per block, coalesced) and local traffic that stays in L1 add
    # wavefronts to the shared-memory ones (for the one-element kernels l1_w already holds the loads)
    ldg_w = np.where(uses_smem > 0, tile_bytes / T.WAVEFRONT_BYTES, 0.0)
    l1tex_w = smem_w + ldg_w + np.where(local_in_l1, local_tile / T.WAVEFRONT_BYTES, 0.0)

    # latency exposed per k-tile: see terms.tile_cycles (lockstep blocks, burst transfer)
    sched = cmp_.warp_schedulers_per_sm * cmp_.issue_per_scheduler_per_clock
    pf = np.ones(n) if prefetch is None else np.broadcast_to(np.asarray(prefetch, dtype=float), (n,))
    kind = np.where(uses_smem > 0, np.where((bufs == 2) & (pf > 0), 2, 1), 0)
    exposed_k = (L_mem + 4 * lat.fma_latency_cycles) / 4.0  # one-element kernels: 4x-unrolled k loop waits for its loads

    rates = (sched, cmp_.fp32_lanes_per_sm, mem.smem_bandwidth_bytes_per_clock_per_sm, l2_bpc, dram_bpc)
    kw = dict(ffma_block=ffma, other_block=non_ffma, smem_wavefronts_block=l1tex_w, l2_bytes_tile=l2_tile,
              dram_bytes_tile=dram_tile, local_bytes_tile=local_tile, local_level=local_level, warps_block=warps,
              mem_latency=L_mem, smem_latency=lat.smem_latency_cycles, kind=kind, exposed_k=exposed_k, dev_rates=rates,
              f_fma=f_fma, f_smem=f_smem, f_l2=f_l2, f_dram=f_dram, hide=pf,
              port_bpc=(calibrated.measured.l2_sm_port_bytes_per_clock if figures == "measured" else None),
              tile_exposure=(calibrated.tile_exposure if figures == "measured" and calibrated.tile_exposure(1, 1.0) is not None
                             else None))
    safe_b = np.maximum(b, 1)
    per_wave, full, tail = T.waves(blocks, safe_b, sms)
    resident = np.minimum(safe_b, np.ceil(blocks / sms))  # blocks an SM really holds (small grids hold fewer)
    # with the calibrated pipe overlap the FFMA rate is the FFMA-only one (the overlap term charges the
    # shared loads); without it, the rate of the shared-memory-fed outer product (4 LDS.128 per k step)
    has_ovl = figures == "measured" and calibrated.pipe_overlap(1.0) is not None
    smem_fed = None if has_ovl else uses_smem > 0
    acc = bm * bn / thr  # outputs (accumulators) per thread
    c_of = (lambda w: calibrated.ffma_issue_factor(w, smem_fed=smem_fed, accumulators=acc)) if figures == "measured" else (lambda w: np.ones_like(w))
    ovl_of = (lambda w: calibrated.pipe_overlap(w, accumulators=acc) * (uses_smem > 0)) if has_ovl else (lambda w: 0.0)
    c_ffma = c_of(resident * warps)
    # the k-tile loop is unrolled: its code is one warp's instructions per tile x 16 B (checked against
    # the SASS of the recorded configs: median ratio 1.01); past the instruction cache issue slows
    code_bytes = 16.0 * issue / np.maximum(warps, 1) * (uses_smem > 0)
    fetch_of = (lambda bb: calibrated.fetch_rate(code_bytes, bb * warps)) if figures == "measured" else (lambda bb: np.inf)
    # the binary's k-tile loop, where known: its simulated compute phase (model.schedule)
    sim_full = sim_tail = None
    if has_prog.any():
        sim_full = _simulated(progs, has_prog, tiles_pp, safe_b, warps, c_of(safe_b * warps), configs, device)
        sim_tail = _simulated(progs, has_prog, tiles_pp, np.maximum(tail, 1), warps, c_of(np.maximum(tail, 1) * warps),
                              configs, device)
    cyc_full, exposed, share = T.tile_cycles(safe_b, **kw, c_ffma=c_of(safe_b * warps), fetch_rate=fetch_of(safe_b),
                                             overlap=ovl_of(safe_b * warps), scheduled=sim_full)
    cyc_tail, _, _ = T.tile_cycles(np.maximum(tail, 1), **kw, c_ffma=c_of(np.maximum(tail, 1) * warps),
                                   fetch_rate=fetch_of(np.maximum(tail, 1)), overlap=ovl_of(np.maximum(tail, 1) * warps),
                                   scheduled=sim_tail)
    t_full, t_tail = cyc_full.max(axis=0), cyc_tail.max(axis=0)
    prologue = L_mem + 2 * lat.smem_latency_cycles  # first tile of each wave has nothing to overlap
    n_waves = full + (tail > 0)
    total_cycles = ktiles * (full * t_full + (tail > 0) * t_tail) + n_waves * prologue
    time_s = total_cycles / hz
    gflops = np.where(b > 0, flops / time_s * 1e-9, 0.0)
    bound = cyc_full.argmax(axis=0)
    # 'latency' = issue work + exposed latency; name it only when the exposed part matters (>= 10 %)
    lat_i = T.TERMS.index("latency")
    minor = (bound == lat_i) & (exposed < 0.1 * cyc_full[lat_i])
    bound = np.where(minor, cyc_full[:lat_i].argmax(axis=0), bound)
    extra = dict(regs=regs, smem=smem, threads=thr, warps=warps, blocks=blocks, ktiles=ktiles, per_wave=per_wave,
                 full_waves=full, tail=tail, flops=flops, l2_bytes=l2b, dram_bytes=drb, smem_bytes=smem_moved,
                 l2_hit=hit, mem_latency=L_mem, ffma=ffma, lds=lds, sts=sts, ldg=ldg, bar=bar, other=other, issue=issue,
                 need=dict(fma=need_fma, smem=need_smem, l2=need_l2, dram=need_dram),
                 avail=dict(fma=avail_fma, smem=avail_smem, l2=inflight_bytes, dram=inflight_bytes),
                 frac=dict(fma=f_fma, smem=f_smem, l2=f_l2, dram=f_dram), exposed=exposed, clock=clock, figures=figures,
                 cycles_tail=cyc_tail, n_waves=n_waves, c_ffma=c_ffma, local=local, code_bytes=code_bytes,
                 local_tile=local_tile, local_level=local_level, overlap=np.broadcast_to(ovl_of(safe_b * warps), (n,)),
                 load_phase_share=np.broadcast_to(share, (n,)),
                 scheduled=np.full(n, np.nan) if sim_full is None else sim_full)
    return PredictionBatch(gflops=gflops, time_s=time_s, bound=bound, blocks_per_sm=b, limiter=limiter,
                           occupancy=occ, cycles=cyc_full, extra=extra)


def _simulated(programs, ok, tiles_pp, b, warps, c_ffma, configs, device) -> np.ndarray:
    """Simulated compute phase per k-tile (model.schedule) for the configs with a usable loop program."""
    from .schedule import compute_cycles_per_tile

    lat = device.latency
    sched = int(device.compute.warp_schedulers_per_sm)
    out = np.full(len(programs), np.nan)
    for i in np.flatnonzero(ok):
        li, lw, si, sw = smem_counts(configs[i])
        out[i] = compute_cycles_per_tile(programs[i], float(tiles_pp[i]), float(b[i] * warps[i]), float(warps[i]), sched,
                                         float(np.asarray(c_ffma).ravel()[i] if np.ndim(c_ffma) else c_ffma),
                                         lat.smem_latency_cycles, lat.l1_latency_cycles, lat.fma_latency_cycles,
                                         lw / li if li else 1.0, sw / si if si else 1.0)
    return out


def _local_text(x: dict, from_sass) -> Optional[str]:
    if not x["local"]:
        return None
    per_thread = float(x["local_tile"]) / max(float(x["threads"]), 1.0)
    lvl = float(x["local_level"])
    where = "in L1" if lvl > 0 else f"{1 + lvl:.0%} in L2, the rest in DRAM" if lvl < 0 else "in L2"
    src = "the binary's main loop (SASS)" if from_sass is not None else "estimated from the frame size"
    return f"{per_thread:,.0f} B per thread per k-tile, {where} [{src}]"


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


class Prediction(_M):
    device: str
    kernel: str
    config: dict[str, int]
    M: int
    N: int
    K: int
    sm_clock_MHz: float
    figures: str
    ffma_issue_cycles: float
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
    l2_port_bytes_per_clock: Optional[float] = None  # measured L2->SM port the tile burst arrives through
    pipe_overlap: float = 0.0  # share of min(issue, smem) the compute phase adds to max(issue, smem) (calibrated)
    load_phase_share: Optional[float] = None  # single-buffered, calibrated: share of one block's load phase b blocks expose
    scheduled_compute_cycles: Optional[float] = None  # compute phase per k-tile simulated from the binary's loop (model.schedule)
    time_s: float
    gflops: float
    pct_of_peak: float
    bound: str
    reason: str


def predict(device, config: KernelConfig, M: int = 4096, N: Optional[int] = None, K: Optional[int] = None,
            registers: Optional[int] = None, registers_source: Optional[str] = None,
            clock_MHz: Optional[float] = None, local_bytes: int = 0, figures: str = "datasheet",
            prefetch: Optional[float] = None, prefetch_source: str = "source",
            local_tile_bytes: Optional[float] = None, program: Optional[dict] = None) -> Prediction:
    """Predict one configuration. N and K default to M (square). program: the binary's k-tile loop
    (measure.sass.loop_program) for the simulated compute phase (model.schedule)."""
    N = M if N is None else N
    K = M if K is None else K
    for nm, v in (("M", M), ("N", N), ("K", K)):
        if int(v) != v or v < 1:
            raise UserError(f"{nm}={v} must be a positive integer")
    config.check_device(device) if registers is None else None
    if registers is not None and registers > device.limits.max_registers_per_thread:
        raise UserError(f"registers={registers} exceeds {device.name}'s {device.limits.max_registers_per_thread} per thread")
    src = registers_source or ("compiler" if registers is not None else "estimate (seed 002 eq. 9 + staging)")
    bt = predict_batch(device, [config], M, N, K, registers=None if registers is None else [registers], clock_MHz=clock_MHz,
                       local_bytes=[local_bytes], figures=figures, prefetch=None if prefetch is None else [prefetch],
                       local_tile_bytes=None if local_tile_bytes is None else [local_tile_bytes],
                       programs=None if program is None else [program])
    if figures == "measured":
        device = device.with_measured()
    x = {k: (v[0] if isinstance(v, np.ndarray) and v.ndim else v) for k, v in bt.extra.items() if not isinstance(v, dict)}
    clock = float(bt.extra["clock"])
    peak = device.peak_fp32_GFLOPS(clock)
    flops = float(x["flops"])
    hz = clock * 1e6
    mem = device.memory
    smem_GBps = mem.smem_bandwidth_bytes_per_clock_per_sm * device.compute.sm_count * hz * 1e-9
    levels = []
    for name, byts, bw in (("dram", x["dram_bytes"], mem.dram_bandwidth_GBps), ("l2", x["l2_bytes"], mem.l2_bandwidth_GBps),
                           ("smem", x["smem_bytes"], smem_GBps)):
        ai = flops / byts if byts > 0 else float("inf")
        levels.append(Level(level=name, bytes=float(byts), intensity_flop_per_byte=float(ai), bandwidth_GBps=float(bw),
                            ceiling_GFLOPS=float(min(ai * bw, 1e12))))
    lat = device.latency
    lrows = []
    for name, latency, unit in (("fma", lat.fma_latency_cycles, "warp FFMA"), ("smem", lat.smem_latency_cycles, "wavefronts"),
                                ("l2", lat.l2_latency_cycles, "bytes"), ("dram", lat.dram_latency_cycles, "bytes")):
        lrows.append(LittleRow(level=name, latency_cycles=float(latency), needed_in_flight=float(bt.extra["need"][name]),
                               available_in_flight=float(np.asarray(bt.extra["avail"][name]).ravel()[0]), unit=unit,
                               achievable_fraction=float(np.asarray(bt.extra["frac"][name]).ravel()[0])))
    counts = {k: float(x[k]) for k in ("ffma", "lds", "sts", "ldg", "bar", "other")}
    share = counts["ffma"] / float(x["issue"])
    # issue ceiling: every issue slot that carries an FFMA does 32 lanes x 2 flop
    c = device.compute
    issue_ceiling = c.sm_count * c.warp_schedulers_per_sm * c.issue_per_scheduler_per_clock * share * 64 * clock * 1e-3
    b = int(bt.blocks_per_sm[0])
    bound = T.TERMS[int(bt.bound[0])] if b > 0 else "occupancy"
    fetch = float(device.fetch_rate(x["code_bytes"], max(b, 1) * x["warps"])) if figures == "measured" else float("inf")
    fetch = fetch if np.isfinite(fetch) else None
    port = device.measured.l2_sm_port_bytes_per_clock if figures == "measured" and device.measured else None
    per_wave = int(x["per_wave"])
    reason = REASONS.get(bound, "no block fits on an SM")
    if bound == "issue" and fetch and b * float(x["issue"]) / fetch >= 0.999 * float(bt.cycles[T.TERMS.index("issue"), 0]):
        reason = (f"instruction fetch: the unrolled k-tile loop (~{x['code_bytes'] / 1024:.0f} KB) outgrows the instruction "
                  f"caches; the SM fetches {fetch:.2f} warp instructions per clock for it")
    return Prediction(
        device=device.name, kernel=config.kernel, config=config.params(), M=int(M), N=int(N), K=int(K),
        sm_clock_MHz=clock, peak_GFLOPS=peak,
        figures="datasheet" if figures == "datasheet" else f"measured ({device.measured.gpu}, {device.measured.date})",
        ffma_issue_cycles=float(x["c_ffma"]),
        prefetch=("none (single buffer)" if config.spec.buffers == 1 else
                  ("yes" if prefetch is None or prefetch >= 1 else
                   f"partly: {prefetch:.0%} of the FFMAs follow the next tile's loads" if prefetch > 0 else
                   "no: the compiler sank the next tile's loads below the FFMAs") + f" [{prefetch_source}]"),
        resources=Resources(threads_per_block=config.threads, warps_per_block=int(x["warps"]),
                            registers_per_thread=int(x["regs"]), registers_source=src,
                            smem_per_block_bytes=config.smem_bytes, local_frame_bytes=int(x["local"]),
                            local_traffic=_local_text(x, local_tile_bytes)),
        occupancy=Occupancy(blocks_per_sm=b, warps_per_sm=int(b * x["warps"]), occupancy_pct=float(bt.occupancy[0] * 100),
                            limiter=LIMITERS[int(bt.limiter[0])]),
        traffic=levels, littles_law=lrows,
        issue=Issue(per_block_per_tile=counts, ffma_share=share, issue_ceiling_GFLOPS=issue_ceiling,
                    loop_code_bytes=float(x["code_bytes"]), fetch_rate_per_sm=fetch),
        waves=Waves(blocks=int(x["blocks"]), blocks_per_wave=per_wave, full_waves=int(x["full_waves"]),
                    tail_blocks_per_sm=int(x["tail"]), waves=float(x["blocks"] / max(per_wave, 1))),
        cycles_per_tile={t: float(bt.cycles[i, 0]) for i, t in enumerate(T.TERMS)},
        exposed_latency_cycles=float(x["exposed"]),
        l2_port_bytes_per_clock=port,
        pipe_overlap=float(x["overlap"]),
        load_phase_share=None if np.isnan(x["load_phase_share"]) else float(x["load_phase_share"]),
        scheduled_compute_cycles=None if np.isnan(x["scheduled"]) else float(x["scheduled"]),
        time_s=float(bt.time_s[0]), gflops=float(bt.gflops[0]), pct_of_peak=float(bt.gflops[0] / peak * 100),
        bound=bound, reason=reason)
