"""KernelConfig -> compiler options; compile to a cached cubin (measure.toolchain picks the compiler:
the local nvcc, NVIDIA's compiler wheels, or NVRTC 12.9 for sm_50-sm_72) to read registers and spills."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional

from ..catalogue import LAUNCH_PARAMS, KernelConfig
from ..paths import cache_dir, data_dir, write_atomic, write_json_atomic
from . import toolchain

MACROS = {"bm": "BM", "bn": "BN", "bk": "BK", "tm": "TM", "tn": "TN", "wm": "WM", "wn": "WN", "wn_iter": "WNITER", "stages": "STAGES",
          "thread_tile": "THREAD_TILE", "double_buffer": "DOUBLE_BUFFER", "load_width": "LOAD_WIDTH",
          "a_transposed": "A_TRANSPOSED", "frag_width": "FRAG_WIDTH", "b_layout": "B_LAYOUT", "b_pad": "B_PAD",
          "ragged": "INNER_BODY"}
# the design choices' values as the kernels' macros take them (kernels/tile_f4.cuh)
MACRO_VALUES = {"contiguous": 0, "quadrants": 1, "off": 0, "on": 1, "no": 0, "yes": 1, "plain": 0, "padded": 1, "permuted": 2,
                "edge": 0, "inner": 1, "inner4": 4}
NVCC_FLAGS = toolchain.NVCC_FLAGS
find_nvcc = toolchain.find_nvcc


def defines(cfg: KernelConfig) -> list[str]:
    """-D options that set the kernel's compile-time tile parameters and the design choices that differ
    from its defaults (the sources hold the defaults); launch parameters (split_k's splits) are not compiled in."""
    return ([f"-D{MACROS[k]}={MACRO_VALUES.get(v, v)}" for k, v in cfg.params().items() if k not in LAUNCH_PARAMS]
            + (["-DBK=1"] if "bk" not in cfg.params() else []))


def source_path(cfg: KernelConfig) -> Path:
    return data_dir("kernels") / cfg.spec.source


def sources_sha256() -> str:
    """SHA-256 of kernels/*.cu* (sorted, concatenated): which kernel sources a build or a run used."""
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(data_dir("kernels").glob("*.cu*")))).hexdigest()


def arch_of(compute_capability: str) -> int:
    major, minor = compute_capability.split(".")
    return int(major) * 10 + int(minor)


def _options(cfg: KernelConfig, compute_capability: str) -> list[str]:
    return NVCC_FLAGS + defines(cfg) + [f"-arch=sm_{arch_of(compute_capability)}"]


def toolchain_for(compute_capability: str) -> Optional[toolchain.Toolchain]:
    """The toolchain that builds for this device here (measure.toolchain), or None."""
    return toolchain.for_arch(arch_of(compute_capability))


def cache_key(cfg: KernelConfig, compute_capability: str, tc: toolchain.Toolchain) -> str:
    """Hash of every kernel source, the options and the toolchain (kind and version): a changed kernel,
    flag or compiler is a new entry."""
    kdir = data_dir("kernels")
    text = "".join(p.read_text() for p in sorted(kdir.glob("*.cu*")))
    opts = _options(cfg, compute_capability)
    return hashlib.sha256((text + source_path(cfg).name + " ".join(opts) + f"|{tc.kind} {tc.version}").encode()).hexdigest()[:20]


def compile_cubin(cfg: KernelConfig, compute_capability: str) -> Path:
    """Compile to a cached cubin with the device's toolchain; the ptxas report lands beside it.
    Raises toolchain.CompileError where no toolchain targets the device or the compiler fails."""
    tc = toolchain_for(compute_capability)
    if tc is None:
        raise toolchain.CompileError(toolchain.missing(arch_of(compute_capability)))
    key = cache_key(cfg, compute_capability, tc)
    out = cache_dir() / f"{key}.cubin"
    log = cache_dir() / f"{key}.ptxas.txt"
    if out.exists() and log.exists():
        return out
    cubin, report = tc.compile(source_path(cfg), cfg.label(), defines(cfg), arch_of(compute_capability), data_dir("kernels"))
    # the report first, the cubin last, each whole: a process that finds both finds the whole report (processes
    # and threads building the same key at once share the cache; resource_usage reads the report)
    write_atomic(log, report)
    write_atomic(out, cubin)
    return out


def resource_usage(cfg: KernelConfig, compute_capability: str) -> Optional[dict]:
    """{'registers', 'spill_stores', 'spill_loads', 'stack_frame', 'smem_bytes', 'arch', 'toolchain'}
    of the device's build of cfg, or None where no toolchain here targets the device. Cached on disk
    by sources, options and toolchain."""
    tc = toolchain_for(compute_capability)
    if tc is None:
        return None
    key = cache_key(cfg, compute_capability, tc)
    cached = cache_dir() / f"usage-{key}.json"
    if cached.exists():
        return json.loads(cached.read_text())
    cubin = compile_cubin(cfg, compute_capability)
    usage = toolchain.resource_usage((cache_dir() / f"{key}.ptxas.txt").read_text())
    usage.update(arch=f"sm_{arch_of(compute_capability)}", toolchain=tc.label, nvcc_flags=_options(cfg, compute_capability),
                 cubin=str(cubin))
    write_json_atomic(cached, usage)
    return usage
