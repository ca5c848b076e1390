"""NVIDIA's runtime compiler (NVRTC) from its pip wheel, through ctypes: a cubin and the ptxas report
of one kernel source with no CUDA toolkit and no host compiler. CPU only (no driver needed).

perfmodel uses `nvidia-cuda-nvrtc-cu12` (nvidia/cuda_nvrtc/lib/libnvrtc.so.12, CUDA 12.9) for sm_50 to
sm_72, which CUDA 13 no longer targets. For sm_75 and newer the toolchain-free path runs nvcc's own
front end and assembler instead (measure.toolchain): NVRTC's front end gives different PTX
(64-bit shared-memory pointers), so its registers and spills differ from nvcc's
(docs/compiler-facts.md)."""
from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from . import wheels

# (major, library folder under the `nvidia` namespace package, library, its builtins library glob)
# NVRTC 13 (`nvidia-cuda-nvrtc==13.0.*`, not a dependency) only for benchmarks/nvrtc_vs_nvcc.py
_WHEELS = {12: ("cuda_nvrtc/lib", "libnvrtc.so.12", "libnvrtc-builtins.so.12.*"),
           13: ("cu13/lib", "libnvrtc.so.13", "libnvrtc-builtins.so.13.*")}
_LOCK = threading.Lock()


class NvrtcError(RuntimeError):
    """NVRTC refused the program (its log is the message)."""


@dataclass(frozen=True)
class Library:
    major: int
    minor: int
    path: str
    lib: ctypes.CDLL

    @property
    def version(self) -> str:
        return f"{self.major}.{self.minor}"


@lru_cache(maxsize=None)
def library(major: int) -> Optional[Library]:
    """The NVRTC library of the given CUDA major version from its wheel, or None where it is not installed
    (or cannot load on this platform)."""
    sub, name, builtins = _WHEELS[major]
    for base in wheels.nvidia_dirs():
        d = base / sub
        if not (d / name).exists():
            continue
        try:
            for b in sorted(d.glob(builtins)):  # NVRTC dlopens its builtins by name: load them first
                ctypes.CDLL(str(b), mode=ctypes.RTLD_GLOBAL)
            lib = ctypes.CDLL(str(d / name))
        except OSError:
            return None
        ma, mi = ctypes.c_int(), ctypes.c_int()
        if lib.nvrtcVersion(ctypes.byref(ma), ctypes.byref(mi)) != 0:
            return None
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        return Library(ma.value, mi.value, str(d / name), lib)
    return None


def _get(lib, size_fn, get_fn, prog) -> bytes:
    n = ctypes.c_size_t()
    size_fn(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    get_fn(prog, buf)
    return buf.raw[:n.value]


def compile_cubin(major: int, source: str, name: str, options: list[str],
                  headers: dict[str, str]) -> tuple[bytes, str]:
    """Compile `source` to a cubin (options must name a real architecture, --gpu-architecture=sm_XX);
    headers: {include name: text}. Returns (cubin, program log: the ptxas report with
    --ptxas-options=-v). Raises NvrtcError with the log on a compile error."""
    L = library(major)
    if L is None:
        raise NvrtcError(f"NVRTC {major} is not installed")
    lib = L.lib
    prog = ctypes.c_void_p()
    hn = list(headers)
    h_src = (ctypes.c_char_p * len(hn))(*[headers[h].encode() for h in hn])
    h_name = (ctypes.c_char_p * len(hn))(*[h.encode() for h in hn])
    with _LOCK:  # one program at a time per process (NVRTC is thread-safe, its builtins loading is not)
        rc = lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), len(hn), h_src, h_name)
        if rc != 0:
            raise NvrtcError(f"nvrtcCreateProgram: {lib.nvrtcGetErrorString(rc).decode()}")
        try:
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            rc = lib.nvrtcCompileProgram(prog, len(options), opts)
            log = _get(lib, lib.nvrtcGetProgramLogSize, lib.nvrtcGetProgramLog, prog).rstrip(b"\0").decode(errors="replace")
            if rc != 0:
                raise NvrtcError(f"NVRTC {L.version} failed for {name}: {log.strip()[-800:]}")
            cubin = _get(lib, lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN, prog)
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return cubin, log

