"""Device files (devices/*.toml) -> a validated, frozen `DeviceSpec`."""
from __future__ import annotations

from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError, model_validator

from .errors import UserError, read_toml, validation_message
from .paths import data_dir

SCHEMA_VERSION = 1
PEAK_TOLERANCE = 0.02  # computed peak within 2 % of a datasheet peak (docs/model.md)


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


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

    def peak_fp32_GFLOPS(self, clock_MHz: float | None = None) -> float:
        """SMs x FP32 lanes x 2 flop per FMA x clock (boost unless given)."""
        clk = self.compute.sm_clock_boost_MHz if clock_MHz is None else clock_MHz
        return self.compute.sm_count * self.compute.fp32_lanes_per_sm * 2 * clk * 1e-3

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


def load_device(name_or_path: str | Path) -> DeviceSpec:
    """Load a shipped device by name (`rtx2070s`) or a user's TOML file by path."""
    text = str(name_or_path)
    shipped = shipped_devices()
    if text in shipped:
        path = shipped[text]
    elif text.endswith(".toml") or Path(text).exists():
        path = Path(text)
    else:
        raise UserError(f"unknown device '{text}'; shipped devices: {', '.join(shipped)} (or a path to a .toml file)")
    data = read_toml(path, "device file")
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
