"""Typed, immutable measurement records (raw.json of a results folder). No GPU needed."""
from __future__ import annotations

import lzma
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict


class _M(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Environment(_M):
    gpu_name: str
    compute_capability: str
    sm_count: int
    l2_bytes: int
    driver_version: str
    cuda_driver_api: str
    nvcc_version: str
    pycuda_version: str
    nvcc_flags: list[str]
    device_file: str  # name of the shipped/generated device file used
    hostname: str
    started_utc: str
    kernel_sources_sha256: Optional[str] = None  # of kernels/*.cu* as run (absent in early runs)
    # how split_k's second kernel (reduce_splits) was launched: "programmatic" (programmatic dependent launch,
    # sm_90 and newer: measure.launch) or "stream" (behind the main kernel, the usual way); absent in runs made
    # before it was recorded, which all launched it the usual way
    reduction_launch: Optional[Literal["programmatic", "stream"]] = None


class Timing(_M):
    times_ms: list[float]
    median_ms: float
    q10_ms: float
    q90_ms: float
    min_ms: float
    warmup_runs: int
    sm_clock_MHz_median: Optional[float] = None
    sm_clock_MHz_min: Optional[float] = None
    power_W_median: Optional[float] = None


class GpuIdentity(_M):
    """Which GPU measured a point (parallel runs: one worker per GPU, perhaps on several hosts)."""

    index: int  # the worker's GPU on its host (CUDA ordinal as the driver numbers them there)
    name: str
    uuid: str  # NVML's GPU-... identifier
    host: str
    sm_clock_max_MHz: Optional[float] = None  # NVML's maximum SM clock
    sm_clock_app_MHz: Optional[float] = None  # NVML's application SM clock (what the GPU runs at under load)


class Measurement(_M):
    """One (kernel or cuBLAS, config, size) point. kernel='cublas' for the baseline."""

    kernel: str
    config: dict[str, int | str]
    group: str  # 'ladder' | 'sweep' | 'baseline' | 'edge' | 'top' | 'random' (shape runs)
    shape: Optional[str] = None  # the corpus shape (shapes/corpus.toml) a shape run measured it for
    M: int
    N: int
    K: int
    verified: bool
    rel_frobenius_error: Optional[float] = None
    verification: str  # 'full' | 'sampled rows/cols' ; or the failure reason
    registers: Optional[int] = None
    spill_bytes: Optional[int] = None
    smem_bytes: Optional[int] = None
    driver_blocks_per_sm: Optional[int] = None
    prefetch_fraction: Optional[float] = None  # from the SASS of the binary that ran (absent in early runs)
    local_tile_bytes: Optional[float] = None  # local loads + stores per thread per k-tile in that SASS (absent in early runs)
    timing: Optional[Timing] = None
    gflops_median: Optional[float] = None
    error: Optional[str] = None
    peer_config: Optional[dict[str, int | str]] = None  # a peer's own pick (the Triton autotuner's tile configuration)
    gpu: Optional[GpuIdentity] = None  # the GPU that measured it (runs measured by parallel workers)


class Run(_M):
    schema_version: int = 1
    environment: Environment
    device_toml: str  # the device figures used: the device file (with its generation's figures merged in, since they were split)
    measurements: list[Measurement]


# measurements of implementations outside the catalogue: the baselines bench compares the model's pick with
PEERS = ("cublas", "triton")


class PlannedPoint(_M):
    """One point of a shape run's plan (what to measure; the record is a Measurement)."""

    group: str
    kernel: str  # a PEERS name for the baselines
    config: dict[str, int | str]
    shape: str
    M: int
    N: int
    K: int

    def key(self) -> tuple:
        return (self.shape, self.group, self.kernel, tuple(sorted(self.config.items())))


class Plan(_M):
    """A shape run's plan.json: written once when the run starts, so that `--resume` measures exactly
    the points not yet recorded in points.jsonl (the plan depends on the model that ranked it)."""

    schema_version: int = 1
    shapes: str  # the class measured, or 'all'
    seed: int
    tune_top: Optional[int] = None  # a `sweep --measure K --shapes` run: per shape the model's top K (no ladder)
    bench: bool = False  # a `perfmodel bench` run: per shape the model's top 1 beside the peers
    environment: Environment
    device_toml: str
    points: list[PlannedPoint]


class PlanDraft(Plan):
    """plan.partial.json: a shape run's plan while it is being made, the shapes planned so far and what the
    rest needs, written before the first shape and after each (replaced, never appended to), so that a run stopped while it ranks
    the corpus goes on from the next shape with `--resume`; removed once plan.json is written."""

    holdout: bool = False  # a bench run that takes the hold-out shapes too
    sample: int  # random configurations per shape
    planned: list[str]  # the shapes whose points are in `points`, in corpus order


def run_record(run_dir: Path) -> Optional[Path]:
    """A results folder's run record: raw.json, or raw.json.xz (the same bytes packed: pack_record), or None."""
    for name in ("raw.json", "raw.json.xz"):
        if (Path(run_dir) / name).is_file():
            return Path(run_dir) / name
    return None


def pack_record(run_dir: Path) -> bool:
    """raw.json kept as raw.json.xz (a tenth of its size): written, read back and compared byte for byte,
    and only then is the plain file removed. False (nothing changed) where there is no raw.json or a
    raw.json.xz exists."""
    raw = Path(run_dir) / "raw.json"
    if not raw.is_file() or raw.with_name("raw.json.xz").exists():
        return False
    pack_file(raw)
    return True


def open_log(path: Path):
    """A points log opened for appending: where a killed run left its last line cut short (no newline at
    the end), a newline is written first, so that the cut line stays one unreadable line (dropped when the
    log is read) and the next point starts a line of its own."""
    path = Path(path)
    if path.exists() and path.stat().st_size:
        with path.open("rb") as f:
            f.seek(-1, 2)
            cut = f.read(1) != b"\n"
        if cut:
            with path.open("a") as f:
                f.write("\n")
    return path.open("a")


def pack_file(path: Path) -> Path:
    """path kept as path.xz: written, read back and compared byte for byte, and only then is path removed
    (RuntimeError, path kept, where it does not read back)."""
    packed = path.with_name(path.name + ".xz")
    data = path.read_bytes()
    packed.write_bytes(lzma.compress(data, preset=9))
    if lzma.decompress(packed.read_bytes()) != data:
        packed.unlink()
        raise RuntimeError(f"{packed} did not read back as {path}; {path.name} is kept")
    path.unlink()
    return packed


def unpack_file(packed: Path) -> Path:
    """packed (NAME.xz) kept as NAME again: written, read back and compared byte for byte with what packed
    holds, and only then is packed removed (RuntimeError, packed kept, where it does not read back)."""
    path = packed.with_name(packed.name[: -len(".xz")])
    data = lzma.decompress(packed.read_bytes())
    path.write_bytes(data)
    if path.read_bytes() != data:
        path.unlink()
        raise RuntimeError(f"{path} did not read back as {packed}; {packed.name} is kept")
    packed.unlink()
    return path


def measurement_key(m: Measurement) -> tuple:
    return (m.shape, m.group, m.kernel, tuple(sorted(m.config.items())))

