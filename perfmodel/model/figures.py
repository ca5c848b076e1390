"""Device figures as the model uses them: a device file plus, where given, its calibration.

`Figures` is resolved once per device and passed to the model; it answers every question whose
answer depends on where a figure came from (datasheet or `perfmodel calibrate`), so no other module
tests for a calibration. The calibrated curves below (FFMA rate, pipe overlap, tile-loop exposure,
instruction fetch) are interpolations of calibrate's microbenchmark tables; without a calibration
each returns the datasheet's answer (rate factor 1, no overlap term, no fetch limit)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Optional

import numpy as np

from ..devices import DeviceSpec, attach_calibration, datasheet_only, generation_measured, load_device
from ..errors import UserError, read_toml


@dataclass(frozen=True)
class Figures:
    """A device's figures: `device` as loaded (with its [measured] section when `calibrated`)."""

    device: DeviceSpec
    calibrated: bool = False
    note: str = ""  # said with the label (a calibration used on another compute capability)
    generation: str = ""  # the measured figures are the SM generation's (devices.generation_measured)

    def __post_init__(self):
        if self.calibrated and self.device.measured is None:
            raise UserError(f"device {self.device.name} has no [measured] section; run perfmodel calibrate")

    def __getstate__(self):
        """Pickled without what its cached properties hold (a lambda among them): a planning process gets
        the figures and derives the rest again."""
        lazy = {k for k, v in vars(type(self)).items() if isinstance(v, cached_property)}
        return {k: v for k, v in self.__dict__.items() if k not in lazy}

    def __setstate__(self, state):
        self.__dict__.update(state)

    @classmethod
    def of(cls, device: DeviceSpec | "Figures") -> "Figures":
        """Datasheet figures of a device (a Figures is returned as it is)."""
        return device if isinstance(device, Figures) else cls(device)

    @classmethod
    def load(cls, device: str | Path, calibration: str | Path | None = None, force: bool = False,
             figures: str = "auto") -> "Figures":
        """A shipped device by name or a device file by path, with a calibration file's figures if given
        (one of another compute capability only with `force`, and the label then says so); without one,
        the SM figures calibrate measured on a GPU of its generation where there are (`figures="auto"`;
        the memory system stays the device file's), else, or with `figures="datasheet"`, the datasheet."""
        dev = load_device(device)
        if figures == "datasheet":
            if calibration is not None:
                raise UserError("datasheet figures and a calibration exclude each other")
            return cls(datasheet_only(dev))
        if calibration is None:
            return cls.of_generation(dev)
        calibrated = attach_calibration(dev, calibration, force=force)
        cc = read_toml(calibration, "calibration file").get("compute_capability")
        note = f"; calibration of compute capability {cc} used for {dev.compute_capability} (forced)" \
            if cc and cc != dev.compute_capability else ""
        return cls(calibrated, calibrated=True, note=note)

    @classmethod
    def of_generation(cls, dev: DeviceSpec) -> "Figures":
        """The device with its SM generation's measured figures where the generation has them, else its
        datasheet figures."""
        got = generation_measured(dev)
        if got is None:
            return cls(dev)
        measured, gen = got
        return cls(dev.model_copy(update={"measured": measured}), calibrated=True, generation=gen.generation)

    @cached_property
    def effective(self) -> DeviceSpec:
        """The device whose memory and latency figures are the measured ones where calibrated."""
        return with_measured(self.device) if self.calibrated else self.device

    @property
    def kind(self) -> str:
        return "generation" if self.generation else "measured" if self.calibrated else "datasheet"

    @property
    def label(self) -> str:
        m = self.device.measured
        if self.generation:
            return (f"generation {self.generation}: SM figures measured on {m.gpu} ({m.date}), "
                    f"memory system from the datasheet")
        return f"measured ({m.gpu}, {m.date}{self.note})" if self.calibrated else "datasheet"

    # ---- what a calibration adds (datasheet answers otherwise) --------------------------------
    def ffma_issue_factor(self, warps_per_sm, smem_fed=None, accumulators=None):
        """Issue cycles per FFMA (>= 1; ones without a calibration): see `_ffma_issue_factor`."""
        if not self.calibrated:
            return np.ones_like(np.asarray(warps_per_sm, dtype=float))
        return _ffma_issue_factor(self.device, warps_per_sm, smem_fed=smem_fed, accumulators=accumulators)

    @property
    def register_banks(self) -> int:
        """Register banks for model.schedule's register-bank term where the FFMA rate comes from the
        datasheet (one issue clock per FFMA): then the binary's register reads say what of peak its loop
        sustains. 0 with a calibrated FFMA rate: calibrate's outer product was measured with its own
        register reads, and the model charges that rate per FFMA (docs/model.md)."""
        return 0 if self.calibrated else int(self.device.compute.register_banks or 0)

    @cached_property
    def register_bank_floor(self) -> Optional[tuple[int, float]]:
        """(banks, issue cycles per FFMA) of the register-file floor under a calibrated FFMA rate, or None.

        Calibrate's outer-product rate holds its own loop's register reads; a loop whose operands pile
        into one bank more than that loop's cannot run faster than its reads allow. So with a calibrated
        (or generation) rate the compute phase is also never shorter than the binary's loop replayed with
        the register-bank term at the chip's own FFMA rate: peak / calibrate's independent FFMA chains
        (`measured.fp32_GFLOPS`, 96.7 % of peak on the H100), the rate a loop reaches when nothing but
        issue holds it. None without a calibration (the datasheet replay charges the banks at one clock
        per FFMA itself), where the generation has no `register_banks`, or without that measurement."""
        m = self.device.measured
        banks = int(self.device.compute.register_banks or 0)
        if not self.calibrated or not banks or m is None or not m.fp32_GFLOPS or not m.sm_clock_MHz:
            return None
        return banks, max(1.0, self.device.peak_fp32_GFLOPS(m.sm_clock_MHz) / m.fp32_GFLOPS)

    @cached_property
    def has_pipe_overlap(self) -> bool:
        return self.calibrated and _pipe_overlap(self.device, 1.0) is not None

    def pipe_overlap(self, warps_per_sm, accumulators=None):
        """Unoverlapped share of min(issue, smem) (None without the measurement): `_pipe_overlap`."""
        return _pipe_overlap(self.device, warps_per_sm, accumulators=accumulators) if self.calibrated else None

    @cached_property
    def tile_exposure(self):
        """X(b, compute / phase) of a single-buffered load phase, or None (`_tile_exposure`)."""
        if not self.calibrated or _tile_exposure(self.device, 1, 1.0) is None:
            return None
        return lambda b, r: _tile_exposure(self.device, b, r)

    def fetch_rate(self, loop_code_bytes, warps_per_sm, apart=None):
        """Warp instructions per clock an SM fetches for the loop (inf without a calibration); `apart` (per
        config, None: all in step): the groups of the SM's warps that run apart (`_fetch_rate`)."""
        if not self.calibrated:
            return np.inf
        return _fetch_rate(self.device, loop_code_bytes, warps_per_sm, apart=apart)

    def lone_fetch_interval(self, loop_code_bytes):
        """Clocks between two instructions a warp alone on its scheduler can fetch from a loop of this code
        size, where the loop outgrows the instruction caches: 1 / r(code), r = calibrate's fetch rate with
        one warp per scheduler (warp instructions per clock per scheduler; `_fetch_rate` at as many warps
        per SM as schedulers); 0 (no limit) where r is not below its value at the smallest size measured.
        That loop issues independent FFMAs at 0.94-0.98 a clock up to 16 KB and 0.85 / 0.41 / 0.17 at
        32 / 64 / 160 KB on the H100. The interval overlaps the warp's own waits: with its FFMAs in 2 or 3
        dependent chains (2.0 and 1.35 clocks an instruction in cache) the loop takes 2.42-2.45 clocks an
        instruction from 40 to 96 KB, as the 8-chain loop does, not the sum (benchmarks/lone_fetch.py,
        results/archive/lone-fetch-loops-20261127-h100-sxm.json). With two or more warps per scheduler the
        table only caps the SM's issue rate (`fetch_rate`). 0 without a calibration (the datasheet gives
        no caches)."""
        code = np.asarray(loop_code_bytes, dtype=float)
        if not self.calibrated:
            return np.zeros_like(code)
        sched = float(self.device.compute.warp_schedulers_per_sm)
        ref = _fetch_table_min_bytes(self.device)
        rate = _fetch_rate(self.device, code, sched) / sched
        if ref is None or not np.all(np.isfinite(rate)):
            return np.zeros_like(code)
        rate0 = float(_fetch_rate(self.device, ref, sched)) / sched
        return np.where(rate < rate0, 1.0 / np.maximum(rate, 1e-9), 0.0)

    @property
    def l2_port_bytes_per_clock(self) -> Optional[float]:
        """The L2->SM port one SM's tile burst arrives through: calibrate's measurement (None for a
        calibration that did not measure it: the burst then queues at the SM's share of the L2 bandwidth);
        without a calibration, the most an SM's L1 takes in, its data path of one 128-byte line per clock
        (memory.smem_bandwidth_bytes_per_clock_per_sm, the unified L1/shared-memory array's rate). Nothing
        couples the SMs' bursts, so one SM's burst is not held to its 1/SMs share of the L2 bandwidth
        (the l2 term bounds the average): docs/model.md "The datasheet mode's load phase"."""
        if self.calibrated:
            return self.device.measured.l2_sm_port_bytes_per_clock
        return float(self.device.memory.smem_bandwidth_bytes_per_clock_per_sm)


# the calibrate microbenchmark behind smem_outer_GFLOPS_by_spread, per warp per k step: 64 FFMAs fed
# by 4 LDS.128 (two A reads shared by lane pairs: 2 wavefronts each; two B reads of 16 lanes x 16 B
# spread 1 / 2 / 4 x 16 B apart: 4 / 8 / 16 wavefronts each, per the quarter-warp rule)
SPREAD_WAVEFRONTS = {"1": 12.0, "2": 20.0, "4": 36.0}
SPREAD_FFMA, SPREAD_LDS = 64.0, 4.0

# calibrate's `ffma_outer` (and `ffma_outer_16x8`) count 64 (128) product FFMAs an iteration, but the loop also
# issues its 8 (16) x updates as FFMAs: 72 (144) FFMAs for 64 (128) counted, so peak / its rate charges each
# SGEMM FFMA the x updates too. FFMA_NET_OF_X_UPDATE (off: evaluated 2026-12-08, not adopted, docs/model.md
# "What calibrate's outer-product rate counts") takes the factor per FFMA the loop issued instead.
FFMA_NET_OF_X_UPDATE = False
OUTER_COUNTED_PER_ISSUED = 64.0 / 72.0


def _ffma_issue_factor(dev, warps_per_sm=None, smem_fed=None, accumulators=None):
    """Issue cycles per FFMA in a GEMM inner loop relative to the datasheet (>= 1).

    1.0 from the datasheet; from a calibration, peak / measured 8x8 outer-product FFMA rate
    (register-bank and operand-collector limits the datasheet does not state). When the
    calibration measured that rate at several resident-warp counts, it is interpolated in
    log2(warps per SM) and clamped to the measured range (vectorised over warps_per_sm).
    smem_fed (per config, optional): for kernels whose fragments come from shared memory, the
    rate of the same outer product fed by four LDS.128 per k step is used instead, less the
    issue slots of those four loads (the issue term counts LDS itself): with few warps the
    loads' latency shows, which the FFMA-only loop cannot.
    accumulators (per config, optional: outputs per thread): where calibrate also measured the
    16x8 outer product (128 accumulators; at the 4-8 warps its registers allow), the factor is
    scaled by its measured ratio to the 8x8 one at the same warps (warps clamped to its range),
    interpolated in log2(accumulators) between 64 (ratio 1) and 128 (clamped at both ends)."""
    m = dev.measured
    if m is None or m.ffma_outer_GFLOPS is None:
        return 1.0 if warps_per_sm is None else np.ones_like(np.asarray(warps_per_sm, dtype=float))
    peak = dev.peak_fp32_GFLOPS(m.sm_clock_MHz)
    net = OUTER_COUNTED_PER_ISSUED if FFMA_NET_OF_X_UPDATE else 1.0
    if warps_per_sm is None or not m.ffma_outer_GFLOPS_by_warps_per_sm:
        c = max(1.0, peak / m.ffma_outer_GFLOPS * net)
        return c if warps_per_sm is None else np.full_like(np.asarray(warps_per_sm, dtype=float), c)
    w = np.log2(np.maximum(np.asarray(warps_per_sm, dtype=float), 1.0))

    def factor(table, minus=0.0, at=None):
        pts = sorted((float(k), v) for k, v in table.items())
        return np.interp(w if at is None else at, np.log2([x for x, _ in pts]), [peak / v - minus for _, v in pts])

    c = factor(m.ffma_outer_GFLOPS_by_warps_per_sm) * net
    if smem_fed is not None and m.smem_outer_GFLOPS_by_warps_per_sm:
        lds_per_ffma = 4.0 / 64.0  # the microbenchmark's four LDS.128 per 64 FFMAs of a k step
        c = np.where(np.asarray(smem_fed, dtype=bool), factor(m.smem_outer_GFLOPS_by_warps_per_sm, lds_per_ffma), c)
    t16 = m.ffma_outer_16x8_GFLOPS_by_warps_per_sm
    if accumulators is not None and t16:
        ws = sorted(float(k) for k in t16)
        w_in = np.clip(w, np.log2(ws[0]), np.log2(ws[-1]))  # the 16x8 loop's measured warp range
        c8, c16 = factor(m.ffma_outer_GFLOPS_by_warps_per_sm, at=w_in), factor(t16, at=w_in)
        f = np.clip(np.log2(np.maximum(np.asarray(accumulators, dtype=float), 1.0)) - 6.0, 0.0, 1.0)
        c = c * (c16 / c8) ** f
    return np.maximum(1.0, c)

def _pipe_overlap(dev, warps_per_sm, accumulators=None):
    """Share of the smaller of the issue and shared-memory (L1TEX) pipe times that a tiled GEMM's
    compute phase cannot overlap with the larger one: compute = max(I, S) + e * min(I, S).

    With few warps per scheduler a warp waits for its fragments' shared loads before its FFMAs
    and the pipes take turns; with many, one warp's loads run under another's FFMAs. From
    `perfmodel calibrate`'s shared-memory-fed outer product with its B reads spread 1 / 2 / 4 x
    16 B apart (the shared pipe from half busy to the bottleneck, same FFMA stream): at each
    measured warp count, e = (measured time - max(I, S)) / min(I, S), where I is the loop's issue
    time at the FFMA-only rate of that warp count and S its wavefronts at the measured shared
    bandwidth; the mean over the three spreads, interpolated in log2(warps), clamped to the measured
    range and to [0, 1]. None without that measurement (then the model keeps max(I, S) and the
    shared-memory-fed FFMA rate).
    accumulators (per config, optional: outputs per thread): where calibrate also fed the 16x8
    outer product from shared memory (128 FFMAs per 6 LDS.128, 16 wavefronts; 4 and 8 warps),
    e is scaled by that loop's e over the 8x8 one at the same warps (clamped to 4-8), in
    log2(accumulators) between 64 and 128, like the FFMA rate (ffma_issue_factor)."""
    m = dev.measured
    if m is None or not m.smem_outer_GFLOPS_by_spread or not m.ffma_outer_GFLOPS_by_warps_per_sm:
        return None
    clock = m.sm_clock_MHz or dev.compute.sm_clock_boost_MHz
    per_clk = dev.compute.sm_count * clock * 1e-3  # GFLOPS -> flop per clock per SM
    smem_bpc = m.smem_bandwidth_bytes_per_clock_per_sm or dev.memory.smem_bandwidth_bytes_per_clock_per_sm
    sched = dev.compute.warp_schedulers_per_sm * dev.compute.issue_per_scheduler_per_clock

    def exposed(gflops, w, ffma, lds, wavefronts, c):
        issue = (ffma * c + lds) * w / min(sched, w)  # as terms.tile_cycles counts issue
        t = ffma * w * 64.0 / (gflops / per_clk)  # cycles per k step per SM (32 lanes x 2 flop per FFMA)
        s = wavefronts * w / (smem_bpc / 128.0)
        return (t - max(issue, s)) / min(issue, s)

    def curve(ws, es):
        x = np.log2(np.maximum(np.asarray(warps_per_sm, dtype=float), 1.0))
        return np.interp(x, np.log2(ws), es)

    ws = sorted({float(w) for row in m.smem_outer_GFLOPS_by_spread.values() for w in row})
    e = []
    for w in ws:
        c = float(_ffma_issue_factor(dev, np.array([w]))[0])
        vals = [exposed(row[str(int(w))], w, SPREAD_FFMA, SPREAD_LDS, SPREAD_WAVEFRONTS[sb], c)
                for sb, row in m.smem_outer_GFLOPS_by_spread.items() if str(int(w)) in row and sb in SPREAD_WAVEFRONTS]
        e.append(float(np.clip(np.mean(vals), 0.0, 1.0)))
    out = curve(ws, e)
    t16 = m.smem_outer_16x8_GFLOPS_by_warps_per_sm
    if accumulators is None or not t16 or not m.ffma_outer_16x8_GFLOPS_by_warps_per_sm:
        return out
    w16 = sorted(float(k) for k in t16)
    ratio = []
    for w in w16:
        c16 = float(_ffma_issue_factor(dev, np.array([w]), accumulators=np.array([128.0]))[0])
        e16 = max(0.0, exposed(t16[str(int(w))], w, 128.0, 6.0, 16.0, c16))
        ratio.append(e16 / max(float(np.interp(np.log2(w), np.log2(ws), e)), 1e-9))
    x16 = np.clip(np.log2(np.maximum(np.asarray(warps_per_sm, dtype=float), 1.0)), np.log2(w16[0]), np.log2(w16[-1]))
    r = np.interp(x16, np.log2(w16), ratio)
    f = np.clip(np.log2(np.maximum(np.asarray(accumulators, dtype=float), 1.0)) - 6.0, 0.0, 1.0)
    return np.clip(out * (1.0 + f * (r - 1.0)), 0.0, 1.0)

def _tile_exposure(dev, blocks, compute_over_phase):
    """Share of one block's exposed load phase that b resident blocks of a single-buffered kernel
    still expose (None without the measurement). From `perfmodel calibrate`'s single-buffered tile
    loop (8 KB tile per 4-warp block, 8 or 32 k steps of the shared-memory-fed outer product, 1-4
    blocks per SM, with and without the global loads): X_b = (time - time without loads) at b
    blocks over the same at one block, placed at r_b = compute time without loads at b blocks /
    one block's exposed phase. On the H100 X stays ~1 at 1-2 blocks and with short compute phases
    (the blocks stay in step, and their tile bursts do not add up: the burst of one block is what
    shows), and falls to 0.8 / 0.7 at 3 / 4 blocks with long ones (they drift apart and one
    block's compute covers another's wait). Interpolated in log(r) for each measured block count
    (clamped to the measured r), blocks clamped to the measured range."""
    m = dev.measured
    if m is None or not m.tile_loop_cycles_by_ksteps_by_blocks or not m.tile_loop_no_load_cycles_by_ksteps_by_blocks:
        return None
    full, bare = m.tile_loop_cycles_by_ksteps_by_blocks, m.tile_loop_no_load_cycles_by_ksteps_by_blocks
    kss = sorted(full, key=int)
    bs = sorted({int(b) for ks in kss for b in full[ks]})
    r_in = np.log(np.maximum(np.asarray(compute_over_phase, dtype=float), 1e-9))
    b_in = np.clip(np.asarray(blocks, dtype=float), bs[0], bs[-1])
    out = np.ones(np.broadcast(r_in, b_in).shape)
    for b in bs:
        pts = []
        for ks in kss:
            lone = full[ks]["1"] - bare[ks]["1"]
            if str(b) in full[ks] and lone > 0:
                pts.append((np.log(bare[ks][str(b)] / lone), (full[ks][str(b)] - bare[ks][str(b)]) / lone))
        pts.sort()
        x = np.interp(r_in, [p[0] for p in pts], [p[1] for p in pts])
        out = np.where(np.round(b_in) == b, x, out)
    return np.clip(out, 0.0, 1.5)

def with_measured(dev: DeviceSpec) -> DeviceSpec:
    """A copy whose figures are replaced by the [measured] ones where calibration has them."""
    m = dev.measured
    if m is None:
        raise UserError(f"device {dev.name} has no [measured] section; run perfmodel calibrate")
    mem = {k: getattr(m, k) for k in ("dram_bandwidth_GBps", "l2_bandwidth_GBps", "smem_bandwidth_bytes_per_clock_per_sm")
           if getattr(m, k) is not None}
    lat = {k: getattr(m, k) for k in ("dram_latency_cycles", "l2_latency_cycles", "l2_reread_latency_cycles", "smem_latency_cycles",
                                      "fma_latency_cycles")
           if getattr(m, k) is not None}
    return dev.model_copy(update=dict(memory=dev.memory.model_copy(update=mem),
                                       latency=dev.latency.model_copy(update=lat)))


def _fetch_tables(dev) -> Optional[dict]:
    """calibrate's instruction-fetch tables, {warps per SM: {loop code bytes: warp instr/clk/SM}} (None without
    them; files from before the table by warps measured 16 and 4 warps only), with the device's finer points
    (compute.fetch_rate_by_loop_bytes_by_warps, benchmarks/lone_fetch.py) at the sizes calibrate did not
    measure, for the warp counts both have: calibrate steps from 32 to 64 KB, and on the H100 a lone warp's
    loop goes from 1.02 to 2.44 clocks an instruction between 31 and 40 KB, where interpolating calibrate's
    two points gives 1.2-1.3 (results/archive/lone-fetch-fine-20261127-h100-sxm.json)."""
    m = dev.measured
    tables = None
    if m is not None and m.issue_rate_by_loop_bytes_by_warps:
        tables = {float(k): dict(t) for k, t in m.issue_rate_by_loop_bytes_by_warps.items()}
    elif m is not None and m.issue_rate_by_loop_bytes:
        tables = {16.0: dict(m.issue_rate_by_loop_bytes)}
        if m.issue_rate_by_loop_bytes_4_warps:
            tables[4.0] = dict(m.issue_rate_by_loop_bytes_4_warps)
    if tables is None:
        return None
    for w, fine in (dev.compute.fetch_rate_by_loop_bytes_by_warps or {}).items():
        table = tables.get(float(w))
        if table is not None:
            have = {float(b) for b in table}
            table.update({b: r for b, r in fine.items() if float(b) not in have})
    return tables


def _fetch_table_min_bytes(dev) -> Optional[float]:
    """The smallest loop code size of the fetch table (`_fetch_tables`: calibrate's, with the device's finer
    points; None without calibrate's table)."""
    tables = _fetch_tables(dev)
    sizes = [float(k) for t in (tables or {}).values() for k in t]
    return min(sizes) if sizes else None


def _fetch_rate(dev, loop_code_bytes, warps_per_sm, apart=None):
    """Warp instructions per clock one SM can fetch and issue from a loop of this code size with
    this many resident warps (inf without a calibration: datasheets do not give the instruction
    caches). From `perfmodel calibrate`'s instruction-fetch microbenchmark (1-32 warps per SM;
    files from before it measured 4 and 16 only): linear in code size (held beyond the measured
    range), then linear in log2(warps) between the measured warp counts (clamped).

    calibrate's loop keeps the warps in step: the first warp's miss brings a line every other warp then
    finds. `apart` (per config, broadcast; None or under 2: all in step): the warps run in that many
    groups, each in step within itself and anywhere in the loop relative to the others, as the blocks
    of a k-tile loop that share an SM; each group fetches its own lines. The in-step rate times the
    device's measured ratio (compute.fetch_apart_ratio_by_loop_bytes_by_groups_by_warps, benchmarks/
    lone_fetch.py --spread --groups: _apart_ratio), at most 1. On the H100, 8 warps an SM in 4 groups
    issue 1.97-1.98 warp instructions a clock at 56-80 KB against 3.55 in step (a ratio of 0.55), every
    warp apart 1.49 at 64 KB; 16 warps in 4 groups as in step. In step where the device has no table."""
    code = np.asarray(loop_code_bytes, dtype=float)
    w = np.asarray(warps_per_sm, dtype=float)
    tables = _fetch_tables(dev)
    if not tables:
        return np.full(np.broadcast(code, w).shape, np.inf)
    rate = _table_rate(tables, code, w)
    ratios = dev.compute.fetch_apart_ratio_by_loop_bytes_by_groups_by_warps
    if ratios and apart is not None and np.any(np.asarray(apart) >= 2):
        rate = rate * np.where(np.asarray(apart) >= 2, _apart_ratio(ratios, code, w, np.asarray(apart, dtype=float)), 1.0)
    return rate


def _apart_ratio(ratios, code, w, groups):
    """The apart loop's rate over the in-step one (`_fetch_rate`): at each measured warp count, linear in
    log2(groups) from 1 at one group (in step) through the measured group counts (held beyond the largest),
    each linear in code size and 1 below the smallest size measured (inside the caches the two agree: within
    4 % at 16-40 KB with four warps); then linear in log2(warps) between the measured warp counts (clamped);
    never above 1 (with 16 warps the grouped loops come out above the in-step one, up to 1.41 times at 40 KB,
    which the model does not take)."""
    shape = np.broadcast(code, w, groups).shape
    code, w, groups = (np.broadcast_to(x, shape) for x in (code, w, groups))
    g = np.log2(np.clip(groups, 1.0, None))

    def at(by_groups):  # one measured warp count: by log2(groups), from 1 at one group
        gs = sorted(float(k) for k in by_groups)
        curves = [np.ones(shape)] + [np.interp(code, *zip(*sorted((float(b), v) for b, v in by_groups[str(int(k))].items())),
                                               left=1.0) for k in gs]
        return _between([0.0] + [float(np.log2(k)) for k in gs], curves, g)

    ws = sorted(float(k) for k in ratios)
    out = _between(np.log2(ws), [at(ratios[str(int(k))]) for k in ws], np.log2(np.maximum(w, 1.0)))
    return np.minimum(out, 1.0)


def _table_rate(tables, code, w):
    """A fetch table {warps per SM: {loop code bytes: rate}} at these code sizes and warps (`_fetch_rate`)."""

    def curve(table):
        pts = sorted((float(k), v) for k, v in table.items())
        return np.interp(code, [b for b, _ in pts], [v for _, v in pts])

    shape = np.broadcast(code, w).shape
    ws = sorted(tables)
    return _between(np.log2(ws), [np.broadcast_to(curve(tables[k]), shape) for k in ws],
                    np.broadcast_to(np.log2(np.maximum(w, 1.0)), shape))


def _between(xs, curves, x):
    """Linear in x between curves[k] (arrays) at the ascending points xs[k], held beyond both ends: the
    measured warp or group counts of the fetch tables (`_table_rate`, `_apart_ratio`)."""
    x = np.clip(x, xs[0], xs[-1])
    out = curves[0]
    for k in range(len(xs) - 1):  # the segment that holds x
        f = (x - xs[k]) / (xs[k + 1] - xs[k])
        out = np.where(x >= xs[k], curves[k] + f * (curves[k + 1] - curves[k]), out)
    return out
