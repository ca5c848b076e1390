"""Kernel catalogue: kernels/manifest.toml -> `KernelSpec`; user parameters -> validated `KernelConfig`."""
from __future__ import annotations

import itertools
import tomllib
from collections import Counter
from functools import lru_cache
from typing import Literal, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict

from .errors import UserError
from .paths import data_dir

PARAM_NAMES = ("bm", "bn", "bk", "tm", "tn", "wm", "wn", "wn_iter")
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
    defaults: dict[str, int]
    mapping: Literal["naive_rows", "coalesced", "tiled", "warp_tiled"]
    uses_smem: bool
    gmem_vector: Literal[1, 4]
    smem_read_vector: Literal[1, 4]
    a_transposed: bool
    quadrants: bool
    buffers: Literal[1, 2]
    barriers_per_tile: int


@lru_cache(maxsize=None)
def kernel_specs() -> dict[str, KernelSpec]:
    """All kernel ids in ladder order."""
    raw = tomllib.loads((data_dir("kernels") / "manifest.toml").read_text())
    specs = [KernelSpec(id=k, **v) for k, v in raw["kernels"].items()]
    return {s.id: s for s in sorted(specs, key=lambda s: s.step)}


def kernel_ids() -> list[str]:
    return list(kernel_specs())


def tiled_kernels() -> list[str]:
    """The kernels with tile parameters to sweep: those that stage tiles in shared memory (manifest order)."""
    return [k for k, s in kernel_specs().items() if s.uses_smem]


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
        extra = [k for k in given if k not in spec.params]
        if extra:
            raise UserError(f"kernel {kernel} takes no parameter {', '.join(extra)} (its parameters: {', '.join(spec.params)})")
        values = {**spec.defaults, **given}
        if spec.id == "smem_tiled":  # bm = bn = bk: one parameter in effect
            values.setdefault("bk", values["bm"])
        if _trusted:
            return cls.model_construct(kernel=kernel, **values)
        return cls(kernel=kernel, **values)

    @property
    def spec(self) -> KernelSpec:
        return get_kernel(self.kernel)

    # ---- derived structure --------------------------------------------------------
    @property
    def wm_iter(self) -> int:
        """warp_tiled: wm_iter = wm*wn / (32*tm*tn*wn_iter)."""
        if self.kernel != "warp_tiled":
            return 1
        return (self.wm * self.wn) // (WARP * self.tm * self.tn * self.wn_iter)

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
        """Static shared memory: buffers x (bm*bk + bk*bn) floats."""
        if not self.spec.uses_smem:
            return 0
        return self.spec.buffers * (self.bm * self.bk + self.bk * self.bn) * FLOAT_BYTES

    def params(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.spec.params}

    def label(self) -> str:
        return self.kernel + "(" + ",".join(f"{k}={v}" for k, v in self.params().items()) + ")"

    def estimated_registers(self) -> int:
        """[gemm-theory] eq. 9: tm*tn accumulators + (tm+tn) fragments + 32 for addresses/control,
        plus a second fragment set for register double buffering and the staging registers of
        kernels that pass global loads through registers (float4 kernels)."""
        s = self.spec
        frags = (self.tm + self.tn) * (2 if s.buffers == 2 else 1)
        if self.kernel == "warp_tiled":
            frags = self.wm_iter * self.tm + self.wn_iter * self.tn
            acc = self.wm_iter * self.wn_iter * self.tm * self.tn
        else:
            acc = self.tm * self.tn
        staging = 0
        if s.gmem_vector == 4 and self.threads:
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
            v = s.gmem_vector
            a_elems, b_elems = self.bm * self.bk, self.bk * self.bn
            need(a_elems % (v * t) == 0, "whole_loads",
                 f"A tile bm*bk={a_elems} is not a multiple of vector width*threads={v}*{t}: threads would not all load whole vectors")
            need(b_elems % (v * t) == 0, "whole_loads",
                 f"B tile bk*bn={b_elems} is not a multiple of vector width*threads={v}*{t}: threads would not all load whole vectors")
            if v == 4:
                need(self.bk % 4 == 0, "float4_alignment", f"bk={self.bk} is not a multiple of 4 (float4 loads of A along k)")
                need(self.bn % 4 == 0, "float4_alignment", f"bn={self.bn} is not a multiple of 4 (float4 loads of B)")
                need(self.tm % 4 == 0, "float4_alignment", f"tm={self.tm} is not a multiple of 4 (float4 shared-memory reads)")
                need(self.tn % 4 == 0, "float4_alignment", f"tn={self.tn} is not a multiple of 4 (float4 shared-memory reads)")
            if s.quadrants:
                need(self.tm % 8 == 0, "quadrants", f"tm={self.tm} is not a multiple of 8 (four (tm/2)x(tn/2) quadrants of float4)")
                need(self.tn % 8 == 0, "quadrants", f"tn={self.tn} is not a multiple of 8 (four (tm/2)x(tn/2) quadrants of float4)")
        return out

    def device_violations(self, device) -> list[tuple[str, str]]:
        """Checks against a device: shared memory per block, threads, registers per thread."""
        out = []
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

    __slots__ = ("kernel", "bm", "bn", "bk", "tm", "tn", "wm", "wn", "wn_iter", "_spec")

    def __init__(self, spec: KernelSpec, values: dict):
        self.kernel, self._spec = spec.id, spec
        for k in PARAM_NAMES:
            setattr(self, k, values.get(k, 1 if k in ("bk", "tm", "tn") else None))

    @property
    def spec(self) -> KernelSpec:
        return self._spec

    wm_iter = KernelConfig.wm_iter
    threads = KernelConfig.threads
    smem_bytes = KernelConfig.smem_bytes
    estimated_registers = KernelConfig.estimated_registers
    violations = KernelConfig.violations
    device_violations = KernelConfig.device_violations
    params = KernelConfig.params
    label = KernelConfig.label

    def config(self) -> KernelConfig:
        return KernelConfig.model_construct(kernel=self.kernel, **{k: getattr(self, k) for k in PARAM_NAMES})


# the values a sweep tries for each tile parameter (powers of two; the constraints prune them)
VALUES = {
    "bm": (16, 32, 64, 128, 256), "bn": (16, 32, 64, 128, 256), "bk": (4, 8, 16, 32, 64),
    "tm": (1, 2, 4, 8, 16), "tn": (1, 2, 4, 8, 16), "wm": (16, 32, 64, 128), "wn": (16, 32, 64, 128),
    "wn_iter": (1, 2, 4, 8),
}


def enumerate_configs(device, kernels=None):
    """All parameter combinations (VALUES) of the given kernels (default: tiled_kernels()) ->
    (valid configs, Counter of invalid configs by the first constraint they violate, number considered)."""
    valid, why, total = [], Counter(), 0
    for kid in (tiled_kernels() if kernels is None else kernels):
        spec = get_kernel(kid)
        names = [p for p in spec.params if p in VALUES]
        for combo in itertools.product(*(VALUES[n] for n in names)):
            params = dict(zip(names, combo))
            if kid == "smem_tiled" and not (params["bm"] == params["bn"] == params["bk"]):
                continue  # one parameter in effect: bm = bn = bk
            total += 1
            probe = ParamProbe(spec, params)
            problems = probe.violations() or probe.device_violations(device)
            if problems:
                why[problems[0][0]] += 1
            else:
                valid.append(probe.config())
    return valid, why, total


def edge_blocks(M, N, K, bm, bn, bk):
    """(blocks, edge blocks): the blocks that take the guarded out-of-line edge body
    (kernels/common.cuh, interior()): all of them when K is not a multiple of bk, K or N not of 4 (the
    float4 rows), or an operand has 2^31 elements or more; otherwise those on the ragged last block row
    and column (not wholly inside C)."""
    M, N, K = (np.asarray(x, dtype=float) for x in (M, N, K))
    gy, gx = np.ceil(M / bm), np.ceil(N / bn)
    blocks = gy * gx
    big = 2.0 ** 31
    guarded = (np.mod(K, bk) != 0) | (np.mod(K, 4) != 0) | (np.mod(N, 4) != 0) | (M * K >= big) | (K * N >= big) | (M * N >= big)
    return blocks, np.where(guarded, blocks, blocks - np.floor(M / bm) * np.floor(N / bn))
