"""Published SGEMM measurements of GPUs nobody measured here (published/sgemm.toml) and the model's
accuracy on them. Each point is predicted from its device file (datasheet figures, or the SM
generation's measured ones where a GPU of that generation was calibrated) and the compiler's facts of
the kernel's binary for the GPU's architecture (facts.for_config: the local nvcc, else NVIDIA's
compiler wheels; no GPU). No GPU needed."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError, model_validator

from . import facts
from .catalogue import KernelConfig
from .devices import shipped_devices
from .errors import UserError, read_toml, validation_message
from .model.figures import Figures
from .model import uncertainty as U
from .model.uncertainty import coverage
from .model.predict import ffma_per_thread_per_tile, predict
from .paths import data_dir


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Source(_Strict):
    id: str = Field(min_length=1)
    repository: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    date: str
    file: str
    gpu: str
    device: str
    timing: str
    parameters: str


class SourceBinary(_Strict):
    """What the source's own kernel compiles to: `file` at the source's commit (only `lines`, where the file
    also holds host code), with the template `instance` the source launches where the kernel is a template, built for
    `arch` (the GPU's sm_XX, from the PTX of `ptx` where the source's build ships PTX that the driver
    compiles), and the registers and spill-store bytes the compiler reports for the entry `entry` (its
    demangled name), with the FFMAs of its k-tile loop in the SASS (`loop_ffma`: the loop whose backward
    branch holds the most, as the catalogue's are read). `benchmarks/published_binaries.py` compiles every
    one and compares; the compiler is named in `Published.binaries_compiled_with`. The catalogue's kernel
    of the same tiling can take more registers, and a register count decides how many blocks an SM holds."""

    file: str = Field(min_length=1)
    entry: str = Field(min_length=1)
    instance: Optional[str] = None
    lines: Optional[tuple[PositiveInt, PositiveInt]] = None
    includes: list[str] = []
    arch: str = Field(pattern=r"^sm_[0-9]{2,3}$")
    ptx: Optional[str] = Field(default=None, pattern=r"^compute_[0-9]{2,3}$")
    registers: PositiveInt = Field(le=255)
    spill_bytes: int = Field(ge=0)
    loop_ffma: int = Field(ge=0)


class Point(_Strict):
    source: str
    row: str
    kernel: str
    config: dict[str, int | str]
    M: PositiveInt
    N: PositiveInt
    K: PositiveInt
    gflops: Optional[PositiveFloat] = None
    time_ms: Optional[PositiveFloat] = None
    binary: Optional[SourceBinary] = None

    @model_validator(mode="after")
    def _one_figure(self):
        if (self.gflops is None) == (self.time_ms is None):
            raise ValueError(f"point '{self.row}' gives {'both' if self.gflops else 'neither of'} gflops and time_ms (exactly one)")
        return self

    @property
    def measured_gflops(self) -> float:
        return self.gflops if self.gflops is not None else 2.0 * self.M * self.N * self.K / (self.time_ms * 1e-3) / 1e9


class Published(_Strict):
    schema_version: int = Field(ge=1, le=1)
    binaries_compiled_with: Optional[str] = None
    source: list[Source] = Field(min_length=1)
    point: list[Point] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self):
        ids = [s.id for s in self.source]
        if len(set(ids)) != len(ids):
            raise ValueError("source ids repeat")
        devices = shipped_devices()
        for s in self.source:
            if s.device not in devices:
                raise ValueError(f"source {s.id}: device '{s.device}' is not a shipped device ({', '.join(devices)})")
        for p in self.point:
            if p.source not in ids:
                raise ValueError(f"point '{p.row}' names source '{p.source}', which the file does not list")
        return self


def default_path() -> Path:
    return data_dir("published") / "sgemm.toml"


def load(path: Path | str | None = None) -> Published:
    """The published measurements, validated (one-line UserError naming the file and what is wrong)."""
    p = Path(path) if path is not None else default_path()
    try:
        data = Published.model_validate(read_toml(p, "published measurements file"))
    except ValidationError as exc:
        raise UserError(f"{p}: {validation_message(exc)}") from None
    for pt in data.point:  # the catalogue's own rules, with its one-line message
        try:
            KernelConfig.make(pt.kernel, **pt.config)
        except UserError as exc:
            raise UserError(f"{p}: point '{pt.row}': {exc}") from None
    return data


@dataclass
class Scored:
    source: str
    device: str
    generation: str
    row: str
    kernel: str
    config: str
    M: int
    N: int
    K: int
    measured_gflops: float
    predicted_gflops: float
    error_pct: float  # > 0: the model is optimistic
    bound: str
    figures: str
    registers_source: str
    registers: int = 0  # of the binary the point is predicted with (Point.binary where recorded)
    blocks_per_sm: int = 0  # the occupancy those registers give
    q05_gflops: float = 0.0  # the prediction's 90 % and 50 % intervals (model.uncertainty)
    q25_gflops: float = 0.0
    q75_gflops: float = 0.0
    q95_gflops: float = 0.0


# `perfmodel accuracy --published --points FILE` writes these fields of every scored point; `--by` groups by
# these keys (registers in the bands of accuracy.REGISTER_BANDS)
POINT_FIELDS = tuple(f.name for f in fields(Scored))
GROUP_KEYS = ("source", "device", "generation", "kernel", "bound", "registers")


def score(path: Path | str | None = None, figures: str = "auto", progress=None,
          loops: Optional[dict] = None) -> tuple[list[Scored], dict]:
    """Predict every point (figures: 'auto' = the SM generation's measured figures where there are, else
    the datasheet; 'datasheet'); returns the rows and the pooled summary (overall, by source, by
    generation, by kernel). `loops`: {(source id, entry): k-tile loop program} to replay in place of the
    catalogue kernel's (benchmarks/published_binaries.py --source-loops: the sources' own loops)."""
    data = load(path)
    src = {s.id: s for s in data.source}
    figs: dict[str, Figures] = {}
    rows: list[Scored] = []
    preds = []
    for j, pt in enumerate(data.point, 1):
        dev_name = src[pt.source].device
        if dev_name not in figs:
            figs[dev_name] = Figures.load(dev_name, figures=figures)
        fig = figs[dev_name]
        cfg = KernelConfig.make(pt.kernel, **pt.config)
        build = source_build(facts.for_config(cfg, fig.device.compute_capability), pt, cfg)
        if loops and pt.binary is not None and (pt.source, pt.binary.entry) in loops:
            build = replace(build, program=loops[(pt.source, pt.binary.entry)])
        preds.append((pt, dev_name, fig, cfg, build, predict(fig, cfg, pt.M, pt.N, pt.K, build=build)))
        if progress:
            progress(j, len(data.point))
    # a point's interval on a generation nobody calibrated takes the model's residual from the published
    # points of the other sources only (model.uncertainty.transfer_override): scored on points it did not see
    ratios = [(pt.source, pr.gflops / pt.measured_gflops) for pt, _, _, _, _, pr in preds]
    for pt, dev_name, fig, cfg, build, pr in preds:
        if U.uses_transfer(fig):
            others = [x for s, x in ratios if s != pt.source]
            with U.transfer_override(U.transfer_table(others, f"published points of sources other than {pt.source}")):
                pr = predict(fig, cfg, pt.M, pt.N, pt.K, build=build)
        meas = pt.measured_gflops
        rows.append(Scored(source=pt.source, device=dev_name, generation=fig.device.generation or "",
                           row=pt.row, kernel=pt.kernel, config=cfg.label(), M=pt.M, N=pt.N, K=pt.K,
                           measured_gflops=meas, predicted_gflops=pr.gflops, error_pct=100.0 * (pr.gflops / meas - 1.0),
                           bound=pr.bound, figures=fig.kind, registers_source=build.registers_source,
                           registers=pr.resources.registers_per_thread, blocks_per_sm=pr.occupancy.blocks_per_sm,
                           **({} if pr.interval is None else dict(
                               q05_gflops=pr.interval.q05_GFLOPS, q25_gflops=pr.interval.q25_GFLOPS,
                               q75_gflops=pr.interval.q75_GFLOPS, q95_gflops=pr.interval.q95_GFLOPS))))
    return rows, summary(rows)


def source_build(build: facts.BuildFacts, pt: Point, cfg: Optional[KernelConfig] = None) -> facts.BuildFacts:
    """The build facts a point is predicted with: the catalogue kernel's (its loop program, prefetch and
    edge path), with the registers and local frame of the source's own binary where the file records them
    (`Point.binary`) and that binary unrolls its k-tile loop as the catalogue's kernels do (its loop holds a
    k-tile's FFMAs or more): the occupancy is then the binary's that ran, the loop the catalogue's of the
    same tiling. A source loop that steps k one at a time is another loop (its registers come with its
    rolled steps), and the point keeps the catalogue kernel's facts. `cfg`: the point's configuration where
    the caller has made it."""
    b = pt.binary
    if b is None:
        return build
    per_tile = round(ffma_per_thread_per_tile(cfg or KernelConfig.make(pt.kernel, **pt.config)))
    if b.loop_ffma < per_tile:
        return replace(build, registers_source=f"{build.registers_source}; the catalogue kernel's: the source's kernel "
                                               f"{b.entry} ({b.arch}) rolls its k-tile loop ({b.loop_ffma} FFMAs a pass, {per_tile} a k-tile)")
    return replace(build, registers=b.registers, local_bytes=b.spill_bytes, local_tile_bytes=None,
                   registers_source=f"the source's kernel {b.entry} ({b.file}), {b.arch} (spills {b.spill_bytes} B)",
                   origin="source binary")


def _stats(errs) -> dict:
    e = np.asarray(errs, dtype=float)
    return dict(points=int(len(e)), mape_pct=float(np.abs(e).mean()), median_ape_pct=float(np.median(np.abs(e))),
                bias_pct=float(e.mean()))


def summary(rows: list[Scored]) -> dict:
    out = dict(overall=_stats([r.error_pct for r in rows]),
               intervals=coverage(*zip(*[(r.measured_gflops, r.predicted_gflops, r.q05_gflops, r.q25_gflops, r.q75_gflops,
                                           r.q95_gflops) for r in rows])) if rows else dict(points=0))
    for key in ("source", "generation", "kernel"):
        groups: dict[str, list] = {}
        for r in rows:
            groups.setdefault(getattr(r, key), []).append(r.error_pct)
        out[f"by_{key}"] = {k: _stats(v) for k, v in groups.items()}
    return out


def as_json(rows: list[Scored], summ: dict) -> dict:
    return dict(points=[asdict(r) for r in rows], summary=summ)
