"""Device files (devices/*.toml) -> a validated, frozen `DeviceSpec`."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError, model_validator

from .errors import UserError
from .paths import data_dir

SCHEMA_VERSION = 1
PEAK_TOLERANCE = 0.02  # DESIGN.md: computed peak within 2 % of a datasheet peak


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Compute(_Strict):
    sm_count: PositiveInt
    fp32_lanes_per_sm: PositiveInt
    sm_clock_base_MHz: PositiveFloat
    sm_clock_boost_MHz: PositiveFloat
    warp_schedulers_per_sm: PositiveInt
    issue_per_scheduler_per_clock: PositiveFloat


class Memory(_Strict):
    dram_bandwidth_GBps: PositiveFloat
    l2_bytes: PositiveInt
    l2_bandwidth_GBps: PositiveFloat
    smem_banks: PositiveInt
    smem_bandwidth_bytes_per_clock_per_sm: PositiveFloat
    l1_bytes_per_sm: PositiveInt


class Latency(_Strict):
    dram_latency_cycles: PositiveFloat
    l2_latency_cycles: PositiveFloat
    l1_latency_cycles: PositiveFloat
    smem_latency_cycles: PositiveFloat
    fma_latency_cycles: PositiveFloat


class Limits(_Strict):
    """Compute-capability limits: CUDA Programming Guide table + cuda_occupancy.h rules."""

    max_threads_per_block: PositiveInt
    max_threads_per_sm: PositiveInt
    max_warps_per_sm: PositiveInt
    max_blocks_per_sm: PositiveInt
    registers_per_sm: PositiveInt
    registers_per_block: PositiveInt
    max_registers_per_thread: PositiveInt
    register_alloc_unit: PositiveInt
    register_sub_partitions: PositiveInt
    smem_per_sm_bytes: PositiveInt
    smem_per_block_static_bytes: PositiveInt
    smem_per_block_optin_bytes: PositiveInt
    smem_alloc_unit_bytes: PositiveInt
    smem_reserved_per_block_bytes: int = Field(ge=0)
    smem_carveout_KB: list[int] = Field(min_length=1)


# the calibrate microbenchmark behind smem_outer_GFLOPS_by_spread, per warp per k step: 64 FFMAs fed
# by 4 LDS.128 (two A reads shared by lane pairs: 2 wavefronts each; two B reads of 16 lanes x 16 B
# spread 1 / 2 / 4 x 16 B apart: 4 / 8 / 16 wavefronts each, per the quarter-warp rule)
SPREAD_WAVEFRONTS = {"1": 12.0, "2": 20.0, "4": 36.0}
SPREAD_FFMA, SPREAD_LDS = 64.0, 4.0


class Measured(_Strict):
    """Figures written by `perfmodel calibrate`; any subset, each overriding its datasheet twin."""

    gpu: str
    date: str
    sm_clock_MHz: Optional[PositiveFloat] = None
    dram_bandwidth_GBps: Optional[PositiveFloat] = None
    l2_bandwidth_GBps: Optional[PositiveFloat] = None
    dram_latency_cycles: Optional[PositiveFloat] = None
    l2_latency_cycles: Optional[PositiveFloat] = None
    smem_latency_cycles: Optional[PositiveFloat] = None
    fma_latency_cycles: Optional[PositiveFloat] = None
    fp32_GFLOPS: Optional[PositiveFloat] = None
    ffma_outer_GFLOPS: Optional[PositiveFloat] = None
    ffma_outer_GFLOPS_by_warps_per_sm: Optional[dict[str, PositiveFloat]] = None
    smem_outer_GFLOPS_by_warps_per_sm: Optional[dict[str, PositiveFloat]] = None
    ffma_outer_16x8_GFLOPS_by_warps_per_sm: Optional[dict[str, PositiveFloat]] = None
    smem_outer_16x8_GFLOPS_by_warps_per_sm: Optional[dict[str, PositiveFloat]] = None
    tile_loop_cycles_by_ksteps_by_blocks: Optional[dict[str, dict[str, PositiveFloat]]] = None
    tile_loop_no_load_cycles_by_ksteps_by_blocks: Optional[dict[str, dict[str, PositiveFloat]]] = None
    tile_loop_dram_cycles_8_ksteps_1_block: Optional[PositiveFloat] = None  # recorded by 133616/133623 only; not used
    smem_outer_GFLOPS_by_spread: Optional[dict[str, dict[str, PositiveFloat]]] = None
    tile_load_cycles_by_bytes: Optional[dict[str, PositiveFloat]] = None
    l2_sm_port_bytes_per_clock: Optional[PositiveFloat] = None
    issue_rate_by_loop_bytes: Optional[dict[str, PositiveFloat]] = None
    issue_rate_by_loop_bytes_4_warps: Optional[dict[str, PositiveFloat]] = None
    issue_rate_by_loop_bytes_by_warps: Optional[dict[str, dict[str, PositiveFloat]]] = None
    smem_bandwidth_bytes_per_clock_per_sm: Optional[PositiveFloat] = None


class DeviceSpec(_Strict):
    schema_version: Literal[1]
    name: str = Field(min_length=1)
    marketing_name: str
    compute_capability: str = Field(pattern=r"^\d+\.\d+$")
    datasheet_peak_fp32_GFLOPS: Optional[PositiveFloat] = None
    compute: Compute
    memory: Memory
    latency: Latency
    limits: Limits
    sources: dict[str, str]
    measured: Optional[Measured] = None
    proxy_fields: list[str] = Field(default_factory=list)

    @property
    def cc_major(self) -> int:
        return int(self.compute_capability.split(".")[0])

    def peak_fp32_GFLOPS(self, clock_MHz: float | None = None) -> float:
        """SMs x FP32 lanes x 2 flop per FMA x clock (boost unless given)."""
        clk = self.compute.sm_clock_boost_MHz if clock_MHz is None else clock_MHz
        return self.compute.sm_count * self.compute.fp32_lanes_per_sm * 2 * clk * 1e-3

    def ffma_issue_factor(self, warps_per_sm=None, smem_fed=None, accumulators=None):
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
        import numpy as np

        m = self.measured
        if m is None or m.ffma_outer_GFLOPS is None:
            return 1.0 if warps_per_sm is None else np.ones_like(np.asarray(warps_per_sm, dtype=float))
        peak = self.peak_fp32_GFLOPS(m.sm_clock_MHz)
        if warps_per_sm is None or not m.ffma_outer_GFLOPS_by_warps_per_sm:
            c = max(1.0, peak / m.ffma_outer_GFLOPS)
            return c if warps_per_sm is None else np.full_like(np.asarray(warps_per_sm, dtype=float), c)
        w = np.log2(np.maximum(np.asarray(warps_per_sm, dtype=float), 1.0))

        def factor(table, minus=0.0, at=None):
            pts = sorted((float(k), v) for k, v in table.items())
            return np.interp(w if at is None else at, np.log2([x for x, _ in pts]), [peak / v - minus for _, v in pts])

        c = factor(m.ffma_outer_GFLOPS_by_warps_per_sm)
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

    def pipe_overlap(self, warps_per_sm, accumulators=None):
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
        import numpy as np

        m = self.measured
        if m is None or not m.smem_outer_GFLOPS_by_spread or not m.ffma_outer_GFLOPS_by_warps_per_sm:
            return None
        clock = m.sm_clock_MHz or self.compute.sm_clock_boost_MHz
        per_clk = self.compute.sm_count * clock * 1e-3  # GFLOPS -> flop per clock per SM
        smem_bpc = m.smem_bandwidth_bytes_per_clock_per_sm or self.memory.smem_bandwidth_bytes_per_clock_per_sm
        sched = self.compute.warp_schedulers_per_sm * self.compute.issue_per_scheduler_per_clock

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
            c = float(self.ffma_issue_factor(np.array([w]))[0])
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
            c16 = float(self.ffma_issue_factor(np.array([w]), accumulators=np.array([128.0]))[0])
            e16 = max(0.0, exposed(t16[str(int(w))], w, 128.0, 6.0, 16.0, c16))
            ratio.append(e16 / max(float(np.interp(np.log2(w), np.log2(ws), e)), 1e-9))
        x16 = np.clip(np.log2(np.maximum(np.asarray(warps_per_sm, dtype=float), 1.0)), np.log2(w16[0]), np.log2(w16[-1]))
        r = np.interp(x16, np.log2(w16), ratio)
        f = np.clip(np.log2(np.maximum(np.asarray(accumulators, dtype=float), 1.0)) - 6.0, 0.0, 1.0)
        return np.clip(out * (1.0 + f * (r - 1.0)), 0.0, 1.0)

    def tile_exposure(self, blocks, compute_over_phase):
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
        import numpy as np

        m = self.measured
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

    def with_measured(self) -> "DeviceSpec":
        """A copy whose figures are replaced by the [measured] ones where calibration has them."""
        m = self.measured
        if m is None:
            raise UserError(f"device {self.name} has no [measured] section; run perfmodel calibrate")
        mem = {k: getattr(m, k) for k in ("dram_bandwidth_GBps", "l2_bandwidth_GBps", "smem_bandwidth_bytes_per_clock_per_sm")
               if getattr(m, k) is not None}
        lat = {k: getattr(m, k) for k in ("dram_latency_cycles", "l2_latency_cycles", "smem_latency_cycles", "fma_latency_cycles")
               if getattr(m, k) is not None}
        return self.model_copy(update=dict(memory=self.memory.model_copy(update=mem),
                                           latency=self.latency.model_copy(update=lat)))

    def fetch_rate(self, loop_code_bytes, warps_per_sm):
        """Warp instructions per clock one SM can fetch and issue from a loop of this code size with
        this many resident warps (inf without a calibration: datasheets do not give the instruction
        caches). From `perfmodel calibrate`'s instruction-fetch microbenchmark (1-32 warps per SM;
        files from before it measured 4 and 16 only): linear in code size (held beyond the measured
        range), then linear in log2(warps) between the measured warp counts (clamped)."""
        import numpy as np

        code = np.asarray(loop_code_bytes, dtype=float)
        w = np.asarray(warps_per_sm, dtype=float)
        m = self.measured
        tables = None
        if m is not None and m.issue_rate_by_loop_bytes_by_warps:
            tables = {float(k): t for k, t in m.issue_rate_by_loop_bytes_by_warps.items()}
        elif m is not None and m.issue_rate_by_loop_bytes:
            tables = {16.0: m.issue_rate_by_loop_bytes}
            if m.issue_rate_by_loop_bytes_4_warps:
                tables[4.0] = m.issue_rate_by_loop_bytes_4_warps
        if not tables:
            return np.full(np.broadcast(code, w).shape, np.inf)

        def curve(table):
            pts = sorted((float(k), v) for k, v in table.items())
            return np.interp(code, [b for b, _ in pts], [v for _, v in pts])

        shape = np.broadcast(code, w).shape
        ws = sorted(tables)
        xs = np.log2(ws)
        curves = [np.broadcast_to(curve(tables[k]), shape) for k in ws]
        x = np.broadcast_to(np.clip(np.log2(np.maximum(w, 1.0)), xs[0], xs[-1]), shape)
        out = curves[0]
        for k in range(len(ws) - 1):  # the segment of measured warp counts that holds x
            f = (x - xs[k]) / (xs[k + 1] - xs[k])
            out = np.where(x >= xs[k], curves[k] + f * (curves[k + 1] - curves[k]), out)
        return out

    def figure_names(self) -> list[str]:
        """Dotted names of every figure in the file (what `sources` must cover)."""
        names = ["datasheet_peak_fp32_GFLOPS"] if self.datasheet_peak_fp32_GFLOPS else []
        for section in ("compute", "memory", "latency", "limits"):
            names += [f"{section}.{f}" for f in type(getattr(self, section)).model_fields]
        return names

    def source_of(self, figure: str) -> str | None:
        """The source of a dotted figure name: its own entry, else its section's entry."""
        return self.sources.get(figure) or self.sources.get(figure.split(".")[0])

    @model_validator(mode="after")
    def _consistent(self) -> "DeviceSpec":
        c, lim = self.compute, self.limits
        if c.sm_clock_base_MHz > c.sm_clock_boost_MHz:
            raise ValueError("compute.sm_clock_base_MHz must not exceed compute.sm_clock_boost_MHz")
        if lim.max_warps_per_sm * 32 != lim.max_threads_per_sm:
            raise ValueError("limits.max_warps_per_sm x 32 must equal limits.max_threads_per_sm")
        if lim.smem_per_block_optin_bytes > lim.smem_per_sm_bytes:
            raise ValueError("limits.smem_per_block_optin_bytes exceeds limits.smem_per_sm_bytes")
        if max(lim.smem_carveout_KB) * 1024 != lim.smem_per_sm_bytes:
            raise ValueError("the largest limits.smem_carveout_KB step must equal limits.smem_per_sm_bytes")
        if self.datasheet_peak_fp32_GFLOPS:
            peak = self.peak_fp32_GFLOPS()
            rel = abs(peak - self.datasheet_peak_fp32_GFLOPS) / self.datasheet_peak_fp32_GFLOPS
            if rel > PEAK_TOLERANCE:
                raise ValueError(
                    f"peak FP32 = SMs x lanes x 2 x boost = {peak:.0f} GFLOPS differs from "
                    f"datasheet_peak_fp32_GFLOPS={self.datasheet_peak_fp32_GFLOPS:.0f} by {rel:.1%} (allowed 2 %)")
        missing = [f for f in self.figure_names() if not self.source_of(f)]
        if missing:
            raise ValueError(f"figures without a source in [sources]: {', '.join(missing)}")
        return self


def shipped_devices() -> dict[str, Path]:
    """Shipped device names (file stems) -> their files."""
    return {p.stem: p for p in sorted(data_dir("devices").glob("*.toml"))}


def _format_validation(err: ValidationError) -> str:
    e = err.errors()[0]
    loc = ".".join(str(x) for x in e["loc"]) or "(file)"
    more = f" (and {len(err.errors()) - 1} more)" if len(err.errors()) > 1 else ""
    return f"{loc}: {e['msg']}{more}"


def load_device(name_or_path: str | Path) -> DeviceSpec:
    """Load a shipped device by name (`rtx2070s`) or a user's TOML file by path."""
    text = str(name_or_path)
    shipped = shipped_devices()
    if text in shipped:
        path = shipped[text]
    elif text.endswith(".toml") or Path(text).is_file():
        path = Path(text)
        if not path.is_file():
            raise UserError(f"device file {text} does not exist")
    else:
        raise UserError(f"unknown device '{text}'; shipped devices: {', '.join(shipped)} (or a path to a .toml file)")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"device file {path} is not valid TOML: {exc}") from None
    try:
        return DeviceSpec.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"device file {path}: {_format_validation(exc)}") from None


def attach_calibration(device: DeviceSpec, calibration: str | Path) -> DeviceSpec:
    """The device with the [measured] section of a `perfmodel calibrate` file (the file's other
    tables are ignored, so a calibration stays usable when the device schema grows)."""
    path = Path(calibration)
    if not path.is_file():
        raise UserError(f"calibration file {path} does not exist")
    try:
        table = tomllib.loads(path.read_text()).get("measured")
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"calibration file {path} is not valid TOML: {exc}") from None
    if not table:
        raise UserError(f"calibration file {path} has no [measured] section")
    try:
        return device.model_copy(update={"measured": Measured.model_validate(table)})
    except ValidationError as exc:
        raise UserError(f"calibration file {path}: measured.{_format_validation(exc)}") from None
