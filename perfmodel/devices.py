"""Device files (devices/*.toml) -> a validated, frozen `DeviceSpec`."""
from __future__ import annotations

from pathlib import Path
from typing import Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError, model_validator

from .errors import UserError, read_toml, validation_message
from .paths import data_dir

SCHEMA_VERSION = 1
PEAK_TOLERANCE = 0.02  # computed peak within 2 % of a datasheet peak (docs/model.md)


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


def _nested_keys(table: dict):
    """Every key of a table of tables, each level's before the tables under it."""
    for k, v in table.items():
        yield k
        if isinstance(v, dict):
            yield from _nested_keys(v)


class Compute(_Strict):
    sm_count: PositiveInt
    fp32_lanes_per_sm: PositiveInt
    sm_clock_base_MHz: PositiveFloat
    sm_clock_boost_MHz: PositiveFloat
    warp_schedulers_per_sm: PositiveInt
    issue_per_scheduler_per_clock: PositiveFloat
    # banks of a scheduler's register file, each supplying one warp-wide 32-bit operand per clock
    # (model.schedule's register-bank term); None where the generation's banks are not modelled
    register_banks: Optional[PositiveInt] = None
    # load/store units of the SM (all its partitions): a warp's memory instruction (LDS, STS, LDG, LDL, STL)
    # holds the L1TEX pipe at least 32 / these clocks, whatever its wavefronts (model.schedule.lsu_pipe_clocks).
    # None where the generation's count is not given: one clock, as a wavefront
    ldst_units_per_sm: Optional[PositiveInt] = None
    # warp instructions one SM issues a clock from a straight-line FFMA loop of this many code bytes, by
    # warps per SM (calibrate's issue_rate_by_loop_bytes_by_warps units), at the loop sizes between
    # calibrate's points where the instruction caches stop holding the loop (benchmarks/lone_fetch.py):
    # the fetch table takes them where calibrate measured nothing (Figures). None where nobody measured it
    fetch_rate_by_loop_bytes_by_warps: Optional[dict[str, dict[str, PositiveFloat]]] = None
    # the same loop with the SM's warps in groups apart (benchmarks/lone_fetch.py --spread --groups: each group in
    # step at a barrier every iteration, the groups spread evenly over the loop), as the blocks of a k-tile loop
    # that share an SM: its rate over the in-step rate of the same run, by warps per SM, then groups, then loop
    # code bytes (Figures.fetch_rate's apart). None where nobody measured it (every loop's warps in step)
    fetch_apart_ratio_by_loop_bytes_by_groups_by_warps: Optional[dict[str, dict[str, dict[str, PositiveFloat]]]] = None
    # the most warps of new blocks one SM takes at once when the blocks of a full wave finish together and
    # free their slots (benchmarks/block_dispatch.py): a grid's last partial wave goes to the slots that free
    # first, as many blocks to an SM as fit in these warps (at least one), not one block to every SM.
    # None where nobody measured it (the partial wave spread over the SMs, ceil(rest / SMs) to the busiest)
    refill_warps_per_sm: Optional[PositiveInt] = None

    @model_validator(mode="after")
    def _fetch_points(self) -> "Compute":
        for name, keys in (("fetch_rate_by_loop_bytes_by_warps", "warps per SM, then loop code bytes"),
                           ("fetch_apart_ratio_by_loop_bytes_by_groups_by_warps", "warps per SM, then groups, then loop code bytes")):
            bad = [k for k in _nested_keys(getattr(self, name) or {}) if not k.isdigit() or int(k) <= 0]
            if bad:
                raise ValueError(f"compute.{name}: key {bad[0]!r} is not a positive integer ({keys})")
        return self


class Memory(_Strict):
    dram_bandwidth_GBps: PositiveFloat
    l2_bytes: PositiveInt
    l2_bandwidth_GBps: PositiveFloat
    smem_banks: PositiveInt
    smem_bandwidth_bytes_per_clock_per_sm: PositiveFloat
    l1_bytes_per_sm: PositiveInt
    # what one SM's coalesced global stores reach on their own (a block storing its C tile, timed as
    # validate times a kernel); None where nobody measured it for this generation (no per-SM limit)
    store_bytes_per_clock_per_sm: Optional[PositiveFloat] = None
    # distinct 128-byte lines one SM's L1 looks up per clock for global loads that hit in it (a warp's
    # load of 32 rows, one word each); None where nobody measured it for this generation: one line per
    # clock, i.e. one L1 wavefront per line, whatever the banks
    l1_lines_per_clock_per_sm: Optional[PositiveFloat] = None
    # the L1 tag stage's lookups per clock as its designer describes it (up to four distinct 128-byte lines a
    # clock for a warp's global load): the published ceiling that l1_lines_per_clock_per_sm measures the
    # sustained share of. Used where no rate was measured (and by datasheet figures); None where nobody
    # published it for this generation
    l1_tag_lookups_per_clock: Optional[PositiveFloat] = None
    # the share of the contiguous-stream DRAM rate that the k-tile walk of a row-major A reaches from DRAM,
    # by the bytes one step reads of each row (bk x 4: every step a short segment of rows far apart),
    # measured by benchmarks/dram_walk.py; None where nobody measured it (every read at the stream rate)
    dram_row_segment_efficiency: Optional[dict[str, PositiveFloat]] = None
    # of data every SM has just written (split_k's partials), the bytes a kernel behind it still reads from
    # the L2: the largest size at which split_k's reduction stays within 10 % of its small-size line
    # (benchmarks/reduce_after_write.py); None where nobody measured it (the whole L2)
    l2_written_resident_bytes: Optional[PositiveFloat] = None
    # microseconds a DRAM read of S MiB takes beyond the same read from a clean L2 when it starts behind the
    # timing's flush (a write of twice the L2: every line dirty, written back as the read evicts it), by S
    # (benchmarks/dram_stream.py --flush dirty and --flush clean); None where nobody measured it (nothing added)
    flush_writeback_us_by_MiB: Optional[dict[str, PositiveFloat]] = None
    # cycles a pass of warp-wide 4-byte loads served by the L2 takes with one block of w warps on every SM, each
    # warp n loads in flight (one 128-byte line each), by w then n (benchmarks/load_inflight.py); None where
    # nobody measured it (a tile's loads arrive at the L2->SM port's rate)
    l2_load_pass_cycles_by_warps_by_loads: Optional[dict[str, dict[str, PositiveFloat]]] = None
    # clocks of the SM's load/store pipe one warp-wide cp.async copy (LDGSTS) holds it, by the bytes a lane copies
    # ("4", "8", "16"): its copies a clock a SM from L1- and L2-resident data with enough in flight
    # (benchmarks/ldgsts_rate.py); None where nobody measured it (a copy holds it its width in words, as a load)
    async_copy_clocks_by_bytes: Optional[dict[str, PositiveFloat]] = None
    # clocks for the cp.async copies of X KB an SM (its blocks' bytes together) to land from DRAM with every SM
    # copying, by X (benchmarks/copy_landing.py, copies alone, one round after the other); None where nobody
    # measured it (a ring's tile waits the pointer chase: terms.ring_landing_extra adds nothing)
    dram_copy_landing_cycles_by_KB: Optional[dict[str, PositiveFloat]] = None

    @model_validator(mode="after")
    def _segments(self) -> "Memory":
        for k in self.async_copy_clocks_by_bytes or {}:
            if k not in ("4", "8", "16"):
                raise ValueError(f"memory.async_copy_clocks_by_bytes: key {k!r} is not a copy's bytes a lane (4, 8 or 16)")
        table = self.l2_load_pass_cycles_by_warps_by_loads or {}
        for w, row in table.items():
            bad = [k for k in [w, *row] if not k.isdigit() or int(k) <= 0]
            if bad:
                raise ValueError(f"memory.l2_load_pass_cycles_by_warps_by_loads: key {bad[0]!r} is not a positive integer "
                                 f"(warps per SM, then loads in flight a warp)")
            if "1" not in row or set(row) != set(next(iter(table.values()))):
                raise ValueError("memory.l2_load_pass_cycles_by_warps_by_loads: every count of warps needs the same counts "
                                 "of loads, 1 among them")
        for k in self.dram_copy_landing_cycles_by_KB or {}:
            try:
                ok = float(k) > 0
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(f"memory.dram_copy_landing_cycles_by_KB: key {k!r} is not a positive number of KB")
        for k in self.flush_writeback_us_by_MiB or {}:
            if not k.isdigit() or int(k) <= 0:
                raise ValueError(f"memory.flush_writeback_us_by_MiB: key {k!r} is not a positive number of MiB")
        for k, v in (self.dram_row_segment_efficiency or {}).items():
            if not k.isdigit() or int(k) <= 0:
                raise ValueError(f"memory.dram_row_segment_efficiency: key {k!r} is not a positive number of bytes")
            if v > 1.1:
                raise ValueError(f"memory.dram_row_segment_efficiency: {v} at {k} B is a share of the stream rate "
                                 f"(at most 1.1 allowed)")
        return self


class Latency(_Strict):
    dram_latency_cycles: PositiveFloat
    l2_latency_cycles: PositiveFloat
    # an L2 hit on a line the L2 has served before (a pointer chase's ring walked a second time): what a GEMM's
    # later waves wait for the lines of A and B an earlier wave read (model.terms.second_read_share);
    # l2_latency_cycles is a line's first read (the walk calibrate times). None where nobody measured it
    # (l2_latency_cycles stands for both).
    l2_reread_latency_cycles: Optional[PositiveFloat] = None
    l1_latency_cycles: PositiveFloat
    smem_latency_cycles: PositiveFloat
    fma_latency_cycles: PositiveFloat
    # from the start event to the end event of a launch that does no work, timed as validate times a
    # kernel (L2 flushed before, one event pair around the launch): what every timed kernel pays
    # besides its blocks' work. None where nobody measured it for this generation (counted as 0).
    launch_overhead_us: Optional[PositiveFloat] = None
    # what a second kernel launched right behind the first adds to the timed window (an empty kernel
    # behind an empty kernel, timed the same way): split_k's reduction pays it. None: not measured (0).
    second_launch_us: Optional[PositiveFloat] = None
    # a published figure: the time per launch of a tiny kernel launched thousands of times back to back
    # (no event pair around each). Where nobody measured the two above for a generation it stands for both
    # (model.predict.launch_overhead_s): a launch behind another is the same thing, and validate's isolated
    # launch costs more (on Hopper 2.30 and 3.71 us measured against 2.43 published). None: not published.
    back_to_back_launch_us: Optional[PositiveFloat] = None
    # split_k's reduction (reduce_splits, kernels/reduce_splits.cuh) right behind the kernel that wrote its
    # partials, timed the same way, by slices: the time at no bytes (each slice count's line through its
    # times at 1-20 MB of partials, benchmarks/reduce_after_write.py): its launch behind another and each
    # thread's chain of one load a slice. None where nobody measured it (the second launch and one load
    # latency stand for it)
    reduction_floor_us_by_slices: Optional[dict[str, PositiveFloat]] = None
    # what launching that reduction with programmatic stream serialization (programmatic dependent launch:
    # set up while the kernel before it runs, waiting for it in its own first instruction) takes off its
    # time behind that kernel, against the usual launch (both timed as validate times a run: one event pair
    # around the two kernels). None where nobody measured it (no saving counted)
    programmatic_launch_saving_us: Optional[PositiveFloat] = None
    # how long a line that streams from DRAM takes against the lines each SM has in flight, as a multiple
    # of dram_latency_cycles (a pointer chase: one line in flight in the whole GPU), by DRAM lines in flight
    # per SM (model.terms.loaded_dram_latency). None where nobody measured it (the pointer chase stands).
    dram_latency_ratio_by_lines_in_flight: Optional[dict[str, PositiveFloat]] = None

    @model_validator(mode="after")
    def _slices(self) -> "Latency":
        for k in self.reduction_floor_us_by_slices or {}:
            if not k.isdigit() or int(k) < 2:
                raise ValueError(f"latency.reduction_floor_us_by_slices: key {k!r} is not a slice count of 2 or more")
        table = self.dram_latency_ratio_by_lines_in_flight or {}
        for k in table:
            if not k.isdigit() or int(k) < 1:
                raise ValueError(f"latency.dram_latency_ratio_by_lines_in_flight: key {k!r} is not a count of lines of 1 or more")
        if table and "1" not in table:
            raise ValueError("latency.dram_latency_ratio_by_lines_in_flight: needs the key \"1\" (one line in flight)")
        return self


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


class Measured(_Strict):
    """Figures written by `perfmodel calibrate`; any subset, each overriding its datasheet twin."""

    gpu: str
    date: str
    sm_clock_MHz: Optional[PositiveFloat] = None
    dram_bandwidth_GBps: Optional[PositiveFloat] = None
    l2_bandwidth_GBps: Optional[PositiveFloat] = None
    dram_latency_cycles: Optional[PositiveFloat] = None
    l2_latency_cycles: Optional[PositiveFloat] = None
    l2_reread_latency_cycles: Optional[PositiveFloat] = None
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
    generation: Optional[str] = None  # devices/generations/<generation>.toml supplied the SM-level figures
    datasheet_peak_fp32_GFLOPS: Optional[PositiveFloat] = None
    compute: Compute
    memory: Memory
    latency: Latency
    limits: Limits
    sources: dict[str, str]
    measured: Optional[Measured] = None
    proxy_fields: list[str] = Field(default_factory=list)

    def peak_fp32_GFLOPS(self, clock_MHz: float | None = None) -> float:
        """SMs x FP32 lanes x 2 flop per FMA x clock (boost unless given)."""
        clk = self.compute.sm_clock_boost_MHz if clock_MHz is None else clock_MHz
        return self.compute.sm_count * self.compute.fp32_lanes_per_sm * 2 * clk * 1e-3

    def figure_names(self) -> list[str]:
        """Dotted names of every figure in the file (what `sources` must cover)."""
        names = ["datasheet_peak_fp32_GFLOPS"] if self.datasheet_peak_fp32_GFLOPS else []
        for section in ("compute", "memory", "latency", "limits"):
            part = getattr(self, section)
            names += [f"{section}.{f}" for f in type(part).model_fields if getattr(part, f) is not None]
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


# ---- SM generations (devices/generations/*.toml) ----------------------------------------------
# What every GPU of one compute capability shares: the SM (lanes, schedulers, issue), its shared memory
# and L1, their latencies and the FFMA latency, and the compute-capability limits. A device file names
# its generation and gives the rest (SMs, clocks, DRAM, L2); its own values win where it repeats one.
GENERATION_KEYS = {"compute": ("fp32_lanes_per_sm", "warp_schedulers_per_sm", "issue_per_scheduler_per_clock", "register_banks",
                               "ldst_units_per_sm",
                               "fetch_rate_by_loop_bytes_by_warps", "fetch_apart_ratio_by_loop_bytes_by_groups_by_warps",
                               "refill_warps_per_sm"),
                   "memory": ("smem_banks", "smem_bandwidth_bytes_per_clock_per_sm", "l1_bytes_per_sm",
                              "store_bytes_per_clock_per_sm", "l1_lines_per_clock_per_sm", "l1_tag_lookups_per_clock",
                              "l2_written_resident_bytes", "l2_load_pass_cycles_by_warps_by_loads",
                              "async_copy_clocks_by_bytes", "dram_copy_landing_cycles_by_KB"),
                   "latency": ("l1_latency_cycles", "smem_latency_cycles", "fma_latency_cycles", "launch_overhead_us",
                               "second_launch_us", "back_to_back_launch_us", "reduction_floor_us_by_slices",
                               "programmatic_launch_saving_us")}
# the part of a `perfmodel calibrate` file that measures the SM rather than the memory system (DRAM and
# L2 bandwidths and latencies stay the device file's): what a generation's [measured] section holds
GENERATION_MEASURED = ("sm_clock_MHz", "fp32_GFLOPS", "ffma_outer_GFLOPS", "ffma_outer_GFLOPS_by_warps_per_sm",
                       "smem_outer_GFLOPS_by_warps_per_sm", "ffma_outer_16x8_GFLOPS_by_warps_per_sm",
                       "smem_outer_16x8_GFLOPS_by_warps_per_sm", "smem_outer_GFLOPS_by_spread",
                       "tile_loop_cycles_by_ksteps_by_blocks", "tile_loop_no_load_cycles_by_ksteps_by_blocks",
                       "l2_sm_port_bytes_per_clock", "issue_rate_by_loop_bytes", "issue_rate_by_loop_bytes_4_warps",
                       "issue_rate_by_loop_bytes_by_warps", "smem_bandwidth_bytes_per_clock_per_sm",
                       "smem_latency_cycles", "fma_latency_cycles")


# the generation figures perfmodel's own benchmarks measured (a generation file names the GPU and the
# script): datasheet figures (`--figures datasheet`) leave them out, so that mode uses no figure
# measured by this project on any GPU, only datasheets and published microbenchmarks
MEASURED_HERE = ("compute.fetch_rate_by_loop_bytes_by_warps", "compute.fetch_apart_ratio_by_loop_bytes_by_groups_by_warps", "compute.refill_warps_per_sm", "memory.store_bytes_per_clock_per_sm", "memory.l1_lines_per_clock_per_sm", "latency.launch_overhead_us",
                 "latency.second_launch_us", "memory.dram_row_segment_efficiency", "memory.l2_written_resident_bytes",
                 "latency.reduction_floor_us_by_slices", "latency.programmatic_launch_saving_us", "latency.dram_latency_ratio_by_lines_in_flight",
                 "latency.l2_reread_latency_cycles", "memory.flush_writeback_us_by_MiB",
                 "memory.l2_load_pass_cycles_by_warps_by_loads", "memory.async_copy_clocks_by_bytes",
                 "memory.dram_copy_landing_cycles_by_KB")


def datasheet_only(dev: "DeviceSpec") -> "DeviceSpec":
    """The device without the MEASURED_HERE figures (each then counts as never measured)."""
    update = {}
    for dotted in MEASURED_HERE:
        section, name = dotted.split(".")
        if getattr(getattr(dev, section), name) is not None:
            update.setdefault(section, {})[name] = None
    if not update:
        return dev
    return dev.model_copy(update={sec: getattr(dev, sec).model_copy(update=vals) for sec, vals in update.items()})


class Generation(_Strict):
    """One SM generation (devices/generations/<generation>.toml)."""

    schema_version: Literal[1]
    generation: str = Field(pattern=r"^sm_\d+$")
    name: str
    compute_capability: str = Field(pattern=r"^\d+\.\d+$")
    compute: dict[str, Union[float, dict[str, dict[str, float]], dict[str, dict[str, dict[str, float]]]]]  # the fetch tables are tables of tables
    memory: dict[str, Union[float, dict[str, float], dict[str, dict[str, float]]]]  # tables by bytes; the L2 load-pass table of tables
    latency: dict[str, Union[float, dict[str, float]]]  # the reduction's floor is a table by slices
    limits: Limits
    sources: dict[str, str]
    measured: Optional[Measured] = None  # GENERATION_MEASURED of a calibration of one GPU of this generation
    measured_sm_count: Optional[PositiveInt] = None  # that GPU's SM count (its GFLOPS are whole-chip rates)
    measured_source: Optional[str] = None

    @model_validator(mode="after")
    def _only_sm_figures(self) -> "Generation":
        for section, keys in GENERATION_KEYS.items():
            extra = set(getattr(self, section)) - set(keys)
            if extra:
                raise ValueError(f"{section} holds {', '.join(sorted(extra))}: a generation gives only {', '.join(keys)}")
        if self.generation != "sm_" + self.compute_capability.replace(".", ""):
            raise ValueError(f"generation {self.generation} does not match compute capability {self.compute_capability}")
        if self.measured is not None:
            extra = {k for k, v in self.measured.model_dump(exclude={"gpu", "date"}).items() if v is not None} - set(GENERATION_MEASURED)
            if extra or not self.measured_sm_count or not self.measured_source:
                raise ValueError("measured holds only GENERATION_MEASURED figures, with measured_sm_count and measured_source")
        return self


def generations() -> dict[str, Path]:
    """Shipped generation names (sm_50, ...) -> their files."""
    return {p.stem: p for p in sorted((data_dir("devices") / "generations").glob("sm_*.toml"))}


def load_generation(name: str) -> Generation:
    path = generations().get(name)
    if path is None:
        raise UserError(f"unknown generation '{name}'; shipped generations: {', '.join(generations())}")
    try:
        return Generation.model_validate(read_toml(path, "generation file"))
    except ValidationError as exc:
        raise UserError(f"generation file {path}: {validation_message(exc)}") from None


def _with_generation(data: dict, path: Path) -> dict:
    """A device file's table with its generation's figures beneath its own (its own win)."""
    gen = load_generation(str(data["generation"]))
    if data.get("compute_capability") not in (None, gen.compute_capability):
        raise UserError(f"device file {path}: compute_capability {data['compute_capability']} is not that of "
                        f"generation {gen.generation} ({gen.compute_capability})")
    out = dict(data)
    out.setdefault("compute_capability", gen.compute_capability)
    for section in GENERATION_KEYS:
        out[section] = {**getattr(gen, section), **data.get(section, {})}
    out.setdefault("limits", gen.limits.model_dump())
    out["sources"] = {**gen.sources, **data.get("sources", {})}
    return out


def generation_section(calibration: str | Path) -> dict:
    """What a generation file's measured part holds for a `perfmodel calibrate` file: the
    GENERATION_MEASURED figures of its [measured] section and the SM count of the GPU it measured."""
    data = read_toml(calibration, "calibration file")
    m = data.get("measured") or {}
    return dict(measured={k: v for k, v in m.items() if k in ("gpu", "date") + GENERATION_MEASURED},
                measured_sm_count=data["compute"]["sm_count"])


def generation_measured(device: DeviceSpec) -> Optional[tuple[Measured, Generation]]:
    """The SM figures calibrate measured on a GPU of this device's generation, as this device would show
    them (whole-chip GFLOPS scaled by SM count; per-SM figures as they are), with the generation; None
    where the generation has none. Recorded devices without a `generation` use their compute capability's."""
    name = device.generation or "sm_" + device.compute_capability.replace(".", "")
    if name not in generations():
        return None
    gen = load_generation(name)
    if gen.measured is None:
        return None
    scale = device.compute.sm_count / gen.measured_sm_count
    m = gen.measured.model_dump()
    for k, v in m.items():
        if "GFLOPS" in k and v is not None:
            m[k] = {w: {x: y * scale for x, y in r.items()} if isinstance(r, dict) else r * scale for w, r in v.items()} \
                if isinstance(v, dict) else v * scale
    return Measured.model_validate(m), gen


def shipped_devices() -> dict[str, Path]:
    """Shipped device names (file stems) -> their files."""
    return {p.stem: p for p in sorted(data_dir("devices").glob("*.toml"))}


def device_table(path: str | Path) -> dict:
    """A device file's table with its generation's figures merged in: every figure, as DeviceSpec reads it."""
    data = read_toml(path, "device file")
    return _with_generation(data, Path(path)) if "generation" in data else data


def _near_names(text: str, names) -> list[str]:
    """Shipped names a mistyped one probably meant: those it begins or that begin with it (`h100` -> h100-sxm,
    `gtx1060` -> gtx1060m), the longest shared start first (`a100-sxm` -> a100, then a10), else the closest by
    spelling (difflib), at most three."""
    import difflib
    import os

    t = text.lower()
    near = sorted((n for n in names if len(t) >= 3 and (n.startswith(t) or t.startswith(n))),
                  key=lambda n: (-len(os.path.commonprefix([n, t])), n))
    return near[:3] or difflib.get_close_matches(t, list(names), n=3, cutoff=0.6)


def load_device(name_or_path: str | Path) -> DeviceSpec:
    """Load a shipped device by name (`rtx2070s`) or a user's TOML file by path."""
    text = str(name_or_path)
    shipped = shipped_devices()
    if text.lower() in shipped:  # names are lower case; `H100-SXM` means h100-sxm
        path = shipped[text.lower()]
    elif text.endswith(".toml") or Path(text).exists():
        path = Path(text)
    else:
        near = _near_names(text, shipped)
        hint = f" (did you mean {' or '.join(near)}?)" if near else ""
        raise UserError(f"unknown device '{text}'{hint}; shipped devices: {', '.join(shipped)} (or a path to a .toml file)")
    data = device_table(path)
    try:
        return DeviceSpec.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"device file {path}: {validation_message(exc)}") from None


def attach_calibration(device: DeviceSpec, calibration: str | Path, force: bool = False) -> DeviceSpec:
    """The device with the [measured] section of a `perfmodel calibrate` file (the file's other
    tables are ignored, so a calibration stays usable when the device schema grows). A calibration is
    the device file of the chip it measured plus that section: one of another compute capability is
    refused unless `force`; one of another chip of the same compute capability stands for this one."""
    path = Path(calibration)
    data = read_toml(path, "calibration file")
    table = data.get("measured")
    if not table:
        raise UserError(f"calibration file {path} has no [measured] section (expected a perfmodel calibrate file)")
    cc = data.get("compute_capability")
    if cc is not None and cc != device.compute_capability and not force:
        raise UserError(f"calibration file {path} was measured on compute capability {cc} "
                        f"({table.get('gpu', 'unknown GPU')}); {device.name} is {device.compute_capability} "
                        f"(--force-calibration uses it anyway)")
    try:
        return device.model_copy(update={"measured": Measured.model_validate(table)})
    except ValidationError as exc:
        raise UserError(f"calibration file {path}: measured.{validation_message(exc)}") from None
