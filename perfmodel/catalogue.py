"""Kernel catalogue: kernels/manifest.toml -> `KernelSpec`; user parameters -> validated `KernelConfig`."""
from __future__ import annotations

import itertools
import tomllib
from collections import Counter
from functools import lru_cache
from typing import Literal, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from .errors import UserError
from .paths import data_dir

PARAM_NAMES = ("bm", "bn", "bk", "tm", "tn", "wm", "wn", "wn_iter", "splits", "stages")
# parameters set at launch, not compiled in (split_k's slices of K: the grid's z dimension)
LAUNCH_PARAMS = ("splits",)
SPLITS_MAX = 64
STAGES = (2, 4)  # async_pipeline's ring of shared-memory buffers: least and most
# design choices (kernels/manifest.toml `choices`): name -> legal values in any kernel; b_pad is padded's width
CHOICES = {"thread_tile": ("contiguous", "quadrants"), "double_buffer": ("off", "on"), "load_width": (1, 4),
           "a_transposed": ("yes", "no"), "frag_width": (1, 4), "b_layout": ("plain", "padded", "permuted"),
           "ragged": ("edge", "inner", "inner4")}
CHOICE_NAMES = tuple(CHOICES) + ("b_pad",)
B_PAD_DEFAULT = 4  # floats, where b_layout = padded is given without b_pad
B_PAD_MAX = 32
WARP = 32
FLOAT_BYTES = 4


class KernelSpec(BaseModel):
    """One ladder step as the manifest describes it (structural facts the model reads)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    step: int
    source: str
    title: str
    after: str  # the write-up it follows (docs/references.md)
    params: list[str]
    defaults: dict[str, int | str]  # tile parameters, then the design choices' defaults
    mapping: Literal["naive_rows", "coalesced", "tiled", "warp_tiled"]
    uses_smem: bool
    gmem_vector: Literal[1, 4]
    smem_read_vector: Literal[1, 4]
    a_transposed: bool
    quadrants: bool
    buffers: Literal[1, 2, 3, 4]  # 2: double buffering; 3, 4: a ring (async_pipeline: its default stages)
    barriers_per_tile: int
    choices: dict[str, list[int | str]] = {}
    same_code: Optional[str] = None
    staging: Literal["registers", "async"] = "registers"  # global -> shared through registers, or cp.async
    a_pad: int = 0  # floats that pad each row of an A tile stored [bm][bk] (async_pipeline: bk + 4)
    min_cc: Optional[str] = None  # the oldest compute capability the kernel runs on (cp.async: 8.0)
    sampled: bool = True  # in `validate --seed N`'s random sample (kernels added later are not: recorded plans stay)
    values: dict[str, list[int]] = {}  # a sweep's values of a parameter where the kernel's differ from VALUES
    ranked: bool = True  # in choose's and bench's ranking and validate's ladder (false: predict and sweep --kernel only)
    why_unranked: Optional[str] = None  # with ranked = false (and only then): why, as choose prints it
    # kernels with slices of K: a second launch sums the partials (reduce_splits), or the last slice of a tile does (step 13)
    reduction: Literal["second_kernel", "fused"] = "second_kernel"

    @model_validator(mode="after")
    def _unranked_says_why(self) -> "KernelSpec":
        if not self.ranked and not (self.why_unranked or "").strip():
            raise ValueError(f"kernel {self.id}: ranked = false needs why_unranked (the reason choose prints)")
        if self.ranked and self.why_unranked is not None:
            raise ValueError(f"kernel {self.id}: why_unranked is for ranked = false kernels only")
        return self


class Described(BaseModel):
    """A kernel of one of the write-ups the ladder follows, as parameters and design choices (manifest `described`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    post: str  # its tag in docs/references.md
    version: str
    kernel: str
    args: dict[str, int | str]

    def command(self, device: str = "DEVICE") -> str:
        """The `perfmodel predict` command line that describes it."""
        opts = "".join(f" --{k.replace('_', '-')} {v}" for k, v in self.args.items())
        return f"perfmodel predict --device {device} --kernel {self.kernel}{opts}"


@lru_cache(maxsize=None)
def _manifest() -> dict:
    return tomllib.loads((data_dir("kernels") / "manifest.toml").read_text())


@lru_cache(maxsize=None)
def kernel_specs() -> dict[str, KernelSpec]:
    """All kernel ids in ladder order."""
    specs = [KernelSpec(id=k, **v) for k, v in _manifest()["kernels"].items()]
    return {s.id: s for s in sorted(specs, key=lambda s: s.step)}


def described() -> list[Described]:
    """The write-ups' kernels as configurations (kernels/manifest.toml `described`)."""
    return [Described(**d) for d in _manifest().get("described", [])]


def ladder_help() -> str:
    """For `perfmodel predict --help`: each ladder step's kernel id and the command line of each
    write-up's kernel (the posts by their tags; titles and URLs in docs/references.md)."""
    L = ["the ladder (kernels/manifest.toml; --kernel ID with its defaults):"]
    L += [f"  step {s.step}: {s.id:19} {s.title}" for s in kernel_specs().values()]
    L += ["", "the write-ups' kernels (docs/references.md names each post; docs/kernels.md explains the options):"]
    for d in described():
        L += [f"  [{d.post}] {d.version}:", f"    {d.command()}"]
    return "\n".join(L)


def kernel_ids() -> list[str]:
    return list(kernel_specs())


def ranked_kernels() -> list[str]:
    """The kernels `choose` and `bench` rank and validate measures as its ladder: all but those the manifest
    marks `ranked = false`, each with its `why_unranked` (unranked_kernels)."""
    return [k for k, s in kernel_specs().items() if s.ranked]


def unranked_kernels() -> dict[str, str]:
    """The kernels left out of the ranking (manifest `ranked = false`), each with the manifest's reason."""
    return {k: s.why_unranked for k, s in kernel_specs().items() if not s.ranked}


def tiled_kernels() -> list[str]:
    """The kernels with tile parameters to sweep: those that stage tiles in shared memory (manifest order)."""
    return [k for k, s in kernel_specs().items() if s.uses_smem]


def swept_kernels() -> list[str]:
    """The kernels `sweep --kernel` takes: the tiled ones and those whose slices of K a sweep tries
    (coalesced_split_k: rows, columns and slices; naive and coalesced have only their block shape)."""
    return [k for k, s in kernel_specs().items() if s.uses_smem or "splits" in s.params]


def runs_on(spec: KernelSpec, compute_capability: str) -> bool:
    """Whether the kernel runs on GPUs of this compute capability (`min_cc`: cp.async needs 8.0)."""
    version = lambda cc: tuple(map(int, cc.split(".")))  # noqa: E731
    return spec.min_cc is None or version(compute_capability) >= version(spec.min_cc)


def ladder_on(compute_capability: str) -> list[str]:
    """The ranked kernel ids that run on GPUs of this compute capability, in ladder order (what validate measures)."""
    return [k for k, spec in kernel_specs().items() if spec.ranked and runs_on(spec, compute_capability)]


def not_applicable(spec: KernelSpec, device) -> Optional[str]:
    """Why the kernel cannot run on the device (a compute capability older than it needs), or None."""
    if not runs_on(spec, device.compute_capability):
        return (f"{spec.id} needs compute capability {spec.min_cc} or newer (cp.async); {device.name} has "
                f"{device.compute_capability}")
    return None


def get_kernel(kernel: str) -> KernelSpec:
    specs = kernel_specs()
    if kernel not in specs:
        raise UserError(f"unknown kernel '{kernel}'; kernel ids: {', '.join(specs)}")
    return specs[kernel]


class KernelConfig(BaseModel):
    """A kernel id with every tile parameter set. Build with `KernelConfig.make`."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kernel: str
    bm: int
    bn: int
    bk: int = 1
    tm: int = 1
    tn: int = 1
    wm: Optional[int] = None
    wn: Optional[int] = None
    wn_iter: Optional[int] = None
    splits: Optional[int] = None  # split_k: slices of K (split_slices)
    stages: Optional[int] = None  # async_pipeline: shared-memory buffers in its ring
    # design choices (None where the kernel has no such choice; see CHOICES)
    thread_tile: Optional[Literal["contiguous", "quadrants"]] = None
    double_buffer: Optional[Literal["off", "on"]] = None
    load_width: Optional[Literal[1, 4]] = None
    a_transposed: Optional[Literal["yes", "no"]] = None
    frag_width: Optional[Literal[1, 4]] = None
    b_layout: Optional[Literal["plain", "padded", "permuted"]] = None
    b_pad: Optional[int] = None
    ragged: Optional[Literal["edge", "inner", "inner4"]] = None

    # ---- construction -------------------------------------------------------------
    @classmethod
    def make(cls, kernel: str = "double_buffer", **params: Optional[int]) -> "KernelConfig":
        """Defaults from the manifest, then the given parameters; raises UserError if invalid."""
        cfg = cls.unchecked(kernel, **params)
        problems = cfg.violations()
        if problems:
            raise UserError(f"invalid {kernel} configuration: " + "; ".join(msg for _, msg in problems))
        return cfg

    @classmethod
    def unchecked(cls, kernel: str, _trusted: bool = False, **params: Optional[int]) -> "KernelConfig":
        """Defaults + parameters, not yet checked; `_trusted` skips pydantic parsing (ints from code)."""
        spec = get_kernel(kernel)
        given = {k: v for k, v in params.items() if v is not None}
        allowed = spec.params + list(spec.choices) + (["b_pad"] if "b_layout" in spec.choices else [])
        extra = [k for k in given if k not in allowed]
        if extra:
            raise UserError(f"kernel {kernel} takes no parameter {', '.join(extra)} (its parameters: {', '.join(allowed)})")
        for k, v in given.items():
            if k in spec.choices and v not in spec.choices[k]:
                raise UserError(f"{k}={v} is not one of {kernel}'s values: {' | '.join(str(x) for x in spec.choices[k])}")
        values = {**spec.defaults, **given}
        if spec.id == "smem_tiled":  # bm = bn = bk: one parameter in effect
            values.setdefault("bk", values["bm"])
        if values.get("b_layout") == "padded":
            values.setdefault("b_pad", B_PAD_DEFAULT)
        if _trusted:
            return cls.model_construct(kernel=kernel, **values)
        return cls(kernel=kernel, **values)

    @property
    def spec(self) -> KernelSpec:
        return get_kernel(self.kernel)

    # ---- the structure the choices give (the manifest's facts where the kernel has no such choice)
    @property
    def gmem_vector(self) -> int:
        return self.load_width if self.load_width is not None else self.spec.gmem_vector

    @property
    def smem_read_vector(self) -> int:
        return self.frag_width if self.frag_width is not None else self.spec.smem_read_vector

    @property
    def transposed_a(self) -> bool:
        return self.a_transposed == "yes" if self.a_transposed is not None else self.spec.a_transposed

    @property
    def quadrants(self) -> bool:
        return self.thread_tile == "quadrants" if self.thread_tile is not None else self.spec.quadrants

    @property
    def buffers(self) -> int:
        """Shared-memory buffers of the k-tile loop: 2 with double buffering, `stages` in a ring."""
        if self.stages is not None:
            return self.stages
        return (2 if self.double_buffer == "on" else 1) if self.double_buffer is not None else self.spec.buffers

    @property
    def barriers_per_tile(self) -> int:
        return (1 if self.double_buffer == "on" else 2) if self.double_buffer is not None else self.spec.barriers_per_tile

    @property
    def b_row(self) -> int:
        """Floats per row of the B tile in shared memory (bn, or bn + b_pad when padded)."""
        return self.bn + (self.b_pad or 0) if self.b_layout == "padded" else self.bn

    def choices(self) -> dict[str, int | str]:
        """Every design choice of the kernel with its value (b_pad where padded)."""
        out = {k: getattr(self, k) for k in self.spec.choices}
        if self.b_layout == "padded":
            out["b_pad"] = self.b_pad
        return out

    def changed_choices(self) -> dict[str, int | str]:
        """The choices that differ from the kernel's defaults (part of params() and the label)."""
        d = self.spec.defaults
        return {k: v for k, v in self.choices().items() if k == "b_pad" or v != d.get(k)}

    # ---- derived structure --------------------------------------------------------
    @property
    def wm_iter(self) -> int:
        """warp_tiled: wm_iter = wm*wn / (32*tm*tn*wn_iter)."""
        if self.spec.mapping != "warp_tiled":
            return 1
        return (self.wm * self.wn) // (WARP * self.tm * self.tn * self.wn_iter)

    @property
    def k_splits(self) -> int:
        """Slices of K the parameters ask for (1 but for split_k; the grid's may be fewer: split_slices)."""
        return self.splits or 1

    @property
    def threads(self) -> int:
        m = self.spec.mapping
        if m in ("naive_rows", "coalesced"):
            return self.bm * self.bn
        if m == "warp_tiled":
            return (self.bm // self.wm) * (self.bn // self.wn) * WARP
        return (self.bm * self.bn) // (self.tm * self.tn)

    @property
    def smem_bytes(self) -> int:
        """Static shared memory: buffers x (bm*bk + bk*bn) floats, and split_k_fused's one-byte flag of the tile's
        last slice (kernels/reduce_splits.cuh, sum_tile_if_last)."""
        if not self.spec.uses_smem:
            return 0
        flag = 1 if self.spec.reduction == "fused" else 0
        return self.buffers * (self.bm * (self.bk + self.spec.a_pad) + self.bk * self.b_row) * FLOAT_BYTES + flag

    def extra_params(self) -> dict[str, int]:
        """The parameters the sweep's table has no column for (async_pipeline's stages, split_k's splits)."""
        return {k: getattr(self, k) for k in ("stages", "splits") if k in self.spec.params}

    def params(self) -> dict[str, int | str]:
        """Tile parameters and the design choices that differ from the kernel's defaults (so a default
        configuration has the same parameters, label and records as before choices existed)."""
        return {**{k: getattr(self, k) for k in self.spec.params}, **self.changed_choices()}

    def label(self) -> str:
        return self.kernel + "(" + ",".join(f"{k}={v}" for k, v in self.params().items()) + ")"

    def estimated_registers(self) -> int:
        """[gemm-theory] eq. 9: tm*tn accumulators + (tm+tn) fragments + 32 for addresses/control,
        plus a second fragment set for register double buffering and the staging registers of
        kernels that pass global loads through registers (float4 kernels)."""
        s = self.spec
        frags = (self.tm + self.tn) * (2 if self.buffers == 2 else 1)
        if s.mapping == "warp_tiled":
            # A stored [bm][bk] (async_pipeline) is read 4 k steps at a time (LDS.128 along k): 4 x its fragments
            frags = self.wm_iter * self.tm * (4 if s.staging == "async" else 1) + self.wn_iter * self.tn
            acc = self.wm_iter * self.wn_iter * self.tm * self.tn
        else:
            acc = self.tm * self.tn
        staging = 0
        if (s.gmem_vector == 4 or self.gmem_vector == 4) and self.threads and s.staging == "registers":
            staging = (self.bm * self.bk + self.bk * self.bn) // self.threads
        return acc + frags + staging + 32

    # ---- validation ---------------------------------------------------------------
    def violations(self) -> list[tuple[str, str]]:
        """Every violated constraint as (constraint name, message). Device-free checks only."""
        out: list[tuple[str, str]] = []
        s = self.spec
        p = {k: getattr(self, k) for k in PARAM_NAMES}
        for k in s.params:
            if p[k] is None or p[k] < 1:
                out.append(("positive", f"{k}={p[k]} must be a positive integer"))
        if out:
            return out

        def need(cond: bool, name: str, msg: str) -> None:
            if not cond:
                out.append((name, msg))

        if "splits" in s.params:
            need(2 <= self.splits <= SPLITS_MAX, "splits", f"splits={self.splits} must be 2 to {SPLITS_MAX} "
                 f"(1 slice is {'coalesced' if s.mapping == 'coalesced' else 'double_buffer'} itself)")
        if "stages" in s.params:
            need(STAGES[0] <= self.stages <= STAGES[1], "stages", f"stages={self.stages} must be {STAGES[0]} to {STAGES[1]}")
        if s.mapping == "warp_tiled":
            need(self.bm % self.wm == 0, "divisibility", f"bm={self.bm} is not a multiple of wm={self.wm}")
            need(self.bn % self.wn == 0, "divisibility", f"bn={self.bn} is not a multiple of wn={self.wn}")
            per_warp = WARP * self.tm * self.tn * self.wn_iter
            need((self.wm * self.wn) % per_warp == 0 and self.wm * self.wn >= per_warp, "warp_tile",
                 f"wm*wn={self.wm * self.wn} is not a positive multiple of 32*tm*tn*wn_iter={per_warp}")
            if not out:
                wi = self.wm_iter
                need(self.wm % (wi * self.tm) == 0, "warp_tile", f"wm={self.wm} is not a multiple of wm_iter*tm={wi * self.tm}")
                need(self.wn % (self.wn_iter * self.tn) == 0, "warp_tile",
                     f"wn={self.wn} is not a multiple of wn_iter*tn={self.wn_iter * self.tn}")
        elif s.mapping == "tiled":
            if self.kernel == "smem_tiled":
                need(self.bm == self.bn == self.bk, "smem_tiled_square", f"smem_tiled needs bm = bn = bk (got {self.bm}, {self.bn}, {self.bk})")
            need(self.bm % self.tm == 0, "divisibility", f"bm={self.bm} is not a multiple of tm={self.tm}")
            need(self.bn % self.tn == 0, "divisibility", f"bn={self.bn} is not a multiple of tn={self.tn}")
        if out:
            return out
        t = self.threads
        need(t % WARP == 0, "threads_multiple_of_32", f"threads per block = {t} is not a multiple of 32")
        need(t <= 1024, "threads_per_block", f"threads per block = {t} exceeds 1024")
        if s.uses_smem and t:
            v = self.gmem_vector
            a_elems, b_elems = self.bm * self.bk, self.bk * self.bn
            need(a_elems % (v * t) == 0, "whole_loads",
                 f"A tile bm*bk={a_elems} is not a multiple of vector width*threads={v}*{t}: threads would not all load whole vectors")
            need(b_elems % (v * t) == 0, "whole_loads",
                 f"B tile bk*bn={b_elems} is not a multiple of vector width*threads={v}*{t}: threads would not all load whole vectors")
            if v == 4:
                need(self.bk % 4 == 0, "float4_alignment", f"bk={self.bk} is not a multiple of 4 (float4 loads of A along k)")
                need(self.bn % 4 == 0, "float4_alignment", f"bn={self.bn} is not a multiple of 4 (float4 loads of B)")
            if s.staging == "async":  # A read as stored, B as float4 (kernels/11_async_pipeline.cu)
                need(self.tn % 4 == 0, "float4_alignment", f"tn={self.tn} is not a multiple of 4 (float4 reads of B, float4 stores of C)")
            elif s.smem_read_vector == 4:  # the register-tile kernels (tile_f4.cuh): float4 stores of C
                out += self._tile_f4_violations()
        return out

    def _tile_f4_violations(self) -> list[tuple[str, str]]:
        """Constraints of the register-tile kernels' thread tile, fragment reads and B layout (tile_f4.cuh)."""
        out = []
        q, f4 = self.quadrants, self.smem_read_vector == 4
        if q:
            if self.tn % 8:
                out.append(("quadrants", f"tn={self.tn} is not a multiple of 8 (four (tm/2)x(tn/2) quadrants, float4 stores of C)"))
            if f4 and self.tm % 8:
                out.append(("quadrants", f"tm={self.tm} is not a multiple of 8 (four (tm/2)x(tn/2) quadrants of float4 reads; "
                                         "frag_width=1 takes tm a multiple of 2)"))
            elif self.tm % 2:
                out.append(("quadrants", f"tm={self.tm} is not a multiple of 2 (four (tm/2)x(tn/2) quadrants)"))
        else:
            if self.tn % 4:
                out.append(("float4_alignment", f"tn={self.tn} is not a multiple of 4 (float4 stores of C)"))
            if f4 and self.tm % 4:
                out.append(("float4_alignment", f"tm={self.tm} is not a multiple of 4 (float4 shared-memory reads; frag_width=1 takes any tm)"))
        if f4 and not self.transposed_a:
            out.append(("frag_width", "frag_width=4 needs a_transposed=yes (a thread's A values are contiguous only in As[bk][bm])"))
        if f4 and self.b_layout == "permuted":
            out.append(("frag_width", "frag_width=4 needs b_layout plain or padded (permuted puts a thread's B values bn/tn floats apart)"))
        if self.b_layout == "padded":
            if not 1 <= (self.b_pad or 0) <= B_PAD_MAX:
                out.append(("b_pad", f"b_pad={self.b_pad} must be 1 to {B_PAD_MAX} floats"))
            elif f4 and self.b_row % 4:
                out.append(("b_pad", f"bn+b_pad={self.b_row} is not a multiple of 4 (float4 fragment reads of B; frag_width=1 takes any pad)"))
        elif self.b_pad is not None:
            out.append(("b_pad", f"b_pad={self.b_pad} is given but b_layout={self.b_layout} (b_pad goes with b_layout=padded)"))
        return out

    def device_violations(self, device) -> list[tuple[str, str]]:
        """Checks against a device: shared memory per block, threads, registers per thread."""
        out = []
        why = not_applicable(self.spec, device)
        if why:
            return [("compute_capability", why)]
        lim = device.limits
        if self.threads > lim.max_threads_per_block:
            out.append(("threads_per_block", f"threads per block = {self.threads} exceeds {device.name}'s {lim.max_threads_per_block}"))
        if self.smem_bytes > lim.smem_per_block_static_bytes:
            out.append(("smem_per_block", f"shared memory {self.smem_bytes} B per block exceeds the {lim.smem_per_block_static_bytes} B "
                                           f"static limit (the kernels use static shared memory)"))
        if self.estimated_registers() > lim.max_registers_per_thread:
            out.append(("registers_per_thread", f"estimated {self.estimated_registers()} registers per thread exceed "
                                                 f"{device.name}'s {lim.max_registers_per_thread}"))
        return out

    def check_device(self, device) -> None:
        problems = self.device_violations(device)
        if problems:
            raise UserError(f"{self.label()} does not fit {device.name}: " + "; ".join(m for _, m in problems))


class ParamProbe:
    """A plain, unvalidated stand-in for KernelConfig sharing its derived properties and checks
    (the same functions, not copies): the sweep tests 10^5 combinations without building models."""

    __slots__ = PARAM_NAMES + CHOICE_NAMES + ("kernel", "_spec")

    def __init__(self, spec: KernelSpec, values: dict):
        self.kernel, self._spec = spec.id, spec
        for k in PARAM_NAMES:
            setattr(self, k, values.get(k, 1 if k in ("bk", "tm", "tn") else None))
        for k in CHOICE_NAMES:
            setattr(self, k, values.get(k, spec.defaults.get(k)))

    @property
    def spec(self) -> KernelSpec:
        return self._spec

    wm_iter = KernelConfig.wm_iter
    k_splits = KernelConfig.k_splits
    threads = KernelConfig.threads
    smem_bytes = KernelConfig.smem_bytes
    gmem_vector = KernelConfig.gmem_vector
    smem_read_vector = KernelConfig.smem_read_vector
    transposed_a = KernelConfig.transposed_a
    quadrants = KernelConfig.quadrants
    buffers = KernelConfig.buffers
    barriers_per_tile = KernelConfig.barriers_per_tile
    b_row = KernelConfig.b_row
    choices = KernelConfig.choices
    changed_choices = KernelConfig.changed_choices
    estimated_registers = KernelConfig.estimated_registers
    violations = KernelConfig.violations
    _tile_f4_violations = KernelConfig._tile_f4_violations
    device_violations = KernelConfig.device_violations
    params = KernelConfig.params
    extra_params = KernelConfig.extra_params
    label = KernelConfig.label

    def config(self) -> KernelConfig:
        return KernelConfig.model_construct(kernel=self.kernel, **{k: getattr(self, k) for k in PARAM_NAMES + CHOICE_NAMES})


# the values a sweep tries for each tile parameter (powers of two; the constraints prune them)
VALUES = {
    "bm": (16, 32, 64, 128, 256), "bn": (16, 32, 64, 128, 256), "bk": (4, 8, 16, 32, 64),
    "tm": (1, 2, 4, 8, 16), "tn": (1, 2, 4, 8, 16), "wm": (16, 32, 64, 128), "wn": (16, 32, 64, 128),
    "wn_iter": (1, 2, 4, 8), "splits": (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64), "stages": (2, 3, 4),
}


def values_of(spec: KernelSpec, name: str) -> tuple:
    """The values a sweep tries for one parameter of a kernel: the manifest's `values` where the kernel
    has its own (coalesced_split_k's rows of a block), else VALUES."""
    return tuple(spec.values.get(name, VALUES[name]))


# b_pad values a sweep tries with b_layout = padded (1: the classic one-word shift; 4: keeps float4 rows)
SWEEP_B_PADS = (1, 4)


def representative(spec: KernelSpec, choices: dict) -> str:
    """Which kernel id names a configuration of `spec` with these choices: among the kernels that
    compile the same body (manifest `same_code`), the one whose defaults it changes least (on a tie the
    later ladder step), so double_buffer's defaults stay `double_buffer` and seed 004's kernel
    (contiguous, double-buffered) is `double_buffer` with thread_tile=contiguous."""
    if spec.same_code is None:
        return spec.id
    same = [s for s in kernel_specs().values() if s.same_code == spec.same_code]
    changed = {s.id: sum(1 for k, v in choices.items() if k in s.choices and v != s.defaults.get(k)) for s in same}
    return min(same, key=lambda s: (changed[s.id], -s.step)).id


def choice_combos(spec: KernelSpec, choices: bool = True) -> list[dict]:
    """Every combination of the kernel's design choices that it names itself (`representative`);
    [defaults] when choices is False or the kernel has none."""
    if not choices or not spec.choices:
        return [{k: spec.defaults[k] for k in spec.choices}]
    names = list(spec.choices)
    out = []
    for combo in itertools.product(*(spec.choices[n] for n in names)):
        c = dict(zip(names, combo))
        if representative(spec, c) != spec.id:
            continue
        if c.get("b_layout") == "padded":
            out += [{**c, "b_pad": p} for p in SWEEP_B_PADS]
        else:
            out.append(c)
    return out


def enumerate_configs(device, kernels=None, choices: bool = True):
    """All parameter combinations (VALUES, and with `choices` every design choice: choice_combos) of the
    given kernels (default: tiled_kernels()) -> (valid configs, Counter of invalid configs by the first
    constraint they violate, number considered)."""
    valid, why, total = [], Counter(), 0
    for kid in (tiled_kernels() if kernels is None else kernels):
        spec = get_kernel(kid)
        names = [p for p in spec.params if p in VALUES]
        combos = choice_combos(spec, choices)
        for tiles in itertools.product(*(values_of(spec, n) for n in names)):
            params = dict(zip(names, tiles))
            if kid == "smem_tiled" and not (params["bm"] == params["bn"] == params["bk"]):
                continue  # one parameter in effect: bm = bn = bk
            for ch in combos:
                total += 1
                probe = ParamProbe(spec, {**params, **ch})
                problems = probe.violations() or probe.device_violations(device)
                if problems:
                    why[problems[0][0]] += 1
                else:
                    valid.append(probe.config())
    return valid, why, total


def edge_blocks(M, N, K, bm, bn, bk, ragged: str = "edge"):
    """(blocks, edge blocks): the blocks that take the guarded out-of-line edge body (kernels/common.cuh,
    interior() and inside(); kernels/outer_f4.cuh, INNER_BODY). Where an operand has 2^31 elements or more,
    all of them. Otherwise, with ragged = edge (every kernel's default), all of them when K is not a
    multiple of bk, K or N not of 4 (the float4 rows), else those on the ragged last block row and
    column (not wholly inside C); with ragged = inner only those on the last row and column, the blocks
    inside C running the scalar inner body as their main path whatever K and the alignment; with
    ragged = inner4 the same where K and N are multiples of 4 (the float4 inner body), else all of them."""
    M, N, K = (np.asarray(x, dtype=float) for x in (M, N, K))
    gy, gx = np.ceil(M / bm), np.ceil(N / bn)
    blocks = gy * gx
    big = 2.0 ** 31
    large = (M * K >= big) | (K * N >= big) | (M * N >= big)
    rows4 = (np.mod(K, 4) == 0) & (np.mod(N, 4) == 0)
    all_edge = {"edge": large | unaligned(N, K, bk), "inner": large, "inner4": large | ~rows4}[ragged or "edge"]
    return blocks, np.where(all_edge, blocks, blocks - np.floor(M / bm) * np.floor(N / bn))


def unaligned(N, K, bk):
    """Where the interior body cannot run (kernels/common.cuh, interior()): K not a multiple of bk or of
    4, or N not of 4 (the float4 rows)."""
    return (np.mod(K, bk) != 0) | (np.mod(K, 4) != 0) | (np.mod(N, 4) != 0)


def idle_choice(cfg: "KernelConfig", M: int, N: int, K: int) -> bool:
    """Whether a design choice of cfg cannot pay at this problem: ragged = inner or inner4 where the sizes
    are aligned (every block inside C would run the interior body with ragged = edge; the inner bodies
    only cost), and inner4 where K or N is not a multiple of 4 (every block then runs the edge body, as
    with edge). Such configurations are left out of rankings (sweep.rank)."""
    if cfg.ragged not in ("inner", "inner4"):
        return False
    return not bool(unaligned(N, K, cfg.bk)) or (cfg.ragged == "inner4" and (K % 4 != 0 or N % 4 != 0))


def split_slices(K, bk, splits):
    """split_k's grid along K: (slices, k-tiles per slice). The ceil(K/bk) k-tiles are cut into slices of
    T = ceil(tiles/splits) (the last one shorter); slices = ceil(tiles/T) <= splits, so no slice is empty,
    and the kernel, given gridDim.z = slices, finds the same cut (kernels/outer_f4.cuh, SPLIT_K; checked for
    every tiles < 400, splits < 70 in tests/test_split_k.py). 1 slice of every tile where splits is 1."""
    tiles = np.ceil(np.asarray(K, dtype=float) / bk)
    per = np.ceil(tiles / np.asarray(splits, dtype=float))
    slices = np.ceil(tiles / np.maximum(per, 1))
    return slices, np.ceil(tiles / np.maximum(slices, 1))
