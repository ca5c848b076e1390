"""Which compiler builds a kernel configuration for a device here, and the one way to run it.

Compiler facts (registers, spills, the SASS the model reads) must be those of the binary the
measurement path builds: nvcc 13.0 with NVCC_FLAGS. In order of preference:

1. `nvcc`: the local CUDA toolkit (PATH or /usr/local/cuda), sm_75 and newer. Ignored when the
   environment variable PERFMODEL_IGNORE_LOCAL_TOOLKIT is set to 1 (tests and CI use it to check the
   toolchain-free path on a machine that has a toolkit).
2. `cicc+ptxas`: the same front end (cicc) and assembler (ptxas) that nvcc 13.0.88 runs, from NVIDIA's
   wheels (`nvidia-nvvm`, `nvidia-cuda-nvcc`, `nvidia-cuda-crt`, `nvidia-cuda-runtime`, all 13.0.88;
   the `sass` extra), sm_75 and newer. cicc preprocesses the kernel itself (CUDA's headers in their
   runtime-compilation mode, measure/cicc_prelude.h), so no host compiler is needed; its cubin is one nvcc
   builds (tests/test_toolchain.py; cicc, nvcc's too, varies from run to run now and then:
   docs/compiler-facts.md).
3. `NVRTC`: NVIDIA's runtime compiler, CUDA 12.9 (`nvidia-cuda-nvrtc-cu12`), for sm_50 to sm_72, which
   CUDA 13 no longer targets. Its front end is not nvcc's (64-bit shared-memory pointers): on sm_75-90,
   NVRTC's registers differ from nvcc's for about half the default kernels (docs/compiler-facts.md).

Every compile returns the cubin and the ptxas report (`-v`); `resource_usage` reads the report.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from . import nvrtc, wheels

IGNORE_ENV = "PERFMODEL_IGNORE_LOCAL_TOOLKIT"
MIN_NVCC_ARCH = 75  # CUDA 13 targets sm_75 and newer
MIN_NVRTC12_ARCH = 50  # CUDA 12.9 targets sm_50 and newer
WHEEL_VERSION = "13.0.88"  # the nvcc of the measurement path (and of every recorded binary)
NVCC_FLAGS = ["-O3", "-std=c++17"]  # the measurement path's nvcc options (besides -D and -arch)
PRELUDE = Path(__file__).with_name("cicc_prelude.h")
# what nvcc 13.0 passes cicc for `-O3 -std=c++17 -arch=sm_XX` (nvcc -dryrun), host-only options dropped
CICC_FLAGS = ["--c++17", "--static-host-stub", "--device-hidden-visibility", "--allow_managed", "-m64",
              "--no-version-ident", "-ftz=0", "-prec_div=1", "-prec_sqrt=1", "-fmad=1"]


class CompileError(RuntimeError):
    """The compiler refused a configuration (its message names the configuration and the log's tail)."""


def ignore_local_toolkit() -> bool:
    return os.environ.get(IGNORE_ENV, "") not in ("", "0")


def find_nvcc() -> Optional[str]:
    """The local nvcc, or None (also when PERFMODEL_IGNORE_LOCAL_TOOLKIT=1)."""
    if ignore_local_toolkit():
        return None
    for cand in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and os.path.exists(cand):
            return cand
    return None


@lru_cache(maxsize=None)
def _nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"V(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else "unknown"


@dataclass(frozen=True)
class Toolchain:
    """One way to build a cubin: `kind` nvcc | cicc+ptxas | NVRTC, its `version`, and where it lives."""

    kind: str
    version: str
    paths: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        origin = {"nvcc": "local toolkit", "cicc+ptxas": "NVIDIA wheels", "NVRTC": "NVIDIA wheel"}[self.kind]
        return f"{self.kind} {self.version} ({origin})"

    def compile(self, source: Path, name: str, defines: list[str], arch: int, include: Path) -> tuple[bytes, str]:
        """(cubin, ptxas report) of `source` for sm_<arch> with the measurement path's options."""
        with tempfile.TemporaryDirectory(prefix="perfmodel-") as tmp:
            out = Path(tmp) / "k.cubin"
            if self.kind == "nvcc":
                cmd = [self.paths[0], "-cubin", *NVCC_FLAGS, *defines, f"-arch=sm_{arch}", "-I", str(include),
                       "-Xptxas", "-v", "-o", str(out), str(source)]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    raise CompileError(f"nvcc failed for {name}: {r.stderr.strip()[-800:]}")
                return out.read_bytes(), r.stderr
            if self.kind == "cicc+ptxas":
                return self._cicc_ptxas(source, name, defines, arch, include, Path(tmp))
            headers = {p.name: p.read_text() for p in include.glob("*.cuh")}
            try:
                return nvrtc.compile_cubin(12, source.read_text(), source.name, ["-std=c++17", *defines,
                                           f"--gpu-architecture=sm_{arch}", "--ptxas-options=-v"], headers)
            except nvrtc.NvrtcError as e:
                raise CompileError(f"{name}: {e}") from None

    def _cicc_ptxas(self, source, name, defines, arch, include, tmp: Path) -> tuple[bytes, str]:
        cicc, ptxas, inc = self.paths
        src = tmp / "k.cup"  # cicc's extension for a source it preprocesses itself
        src.write_text(source.read_text())
        # nvcc's own macros, less __CUDACC_VER_*__: with those cicc's PTX for some configurations varied
        # from run to run (double_buffer 32x64x8 8x8 on sm_90: 173 or 183 registers); without them it is
        # nvcc's PTX, run after run (tests/test_toolchain.py)
        macros = ["-D__CUDACC_RTC__", "-D__CUDACC__", "-D__NVCC__", f"-D__CUDA_ARCH__={arch}0",
                  f"-D__CUDA_ARCH_LIST__={arch}0"]
        ptx = tmp / "k.ptx"
        r = subprocess.run([cicc, *CICC_FLAGS, "-arch", f"compute_{arch}", "--preinclude", str(PRELUDE),
                            f"-I{inc}", f"-I{include}", *macros, *defines, str(src), "-o", str(ptx)],
                           capture_output=True, text=True, cwd=tmp)
        if r.returncode != 0 or not ptx.exists():
            log = "\n".join(ln for ln in r.stdout.splitlines() + r.stderr.splitlines() if "internal header" not in ln)
            raise CompileError(f"cicc failed for {name}: {log.strip()[-800:]}")
        cubin = tmp / "k.cubin"
        r = subprocess.run([ptxas, f"-arch=sm_{arch}", "-m64", "-v", str(ptx), "-o", str(cubin)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise CompileError(f"ptxas failed for {name}: {r.stderr.strip()[-800:]}")
        return cubin.read_bytes(), r.stderr


def _wheel_cicc() -> Optional[Toolchain]:
    cicc = wheels.wheel_file("cu13/nvvm/bin/cicc", executable=True)
    ptxas = wheels.wheel_file("cu13/bin/ptxas", executable=True)
    header = wheels.wheel_file("cu13/include/crt/host_defines.h")
    runtime = wheels.wheel_file("cu13/include/vector_types.h")
    if not (cicc and ptxas and header and runtime):
        return None
    version = wheels.wheel_version("nvidia-nvvm") or "unknown"
    return Toolchain("cicc+ptxas", version, (str(cicc), str(ptxas), str(header.parent.parent)))


def for_arch(arch: int) -> Optional[Toolchain]:
    """The toolchain that builds for sm_<arch> here (see the module's order), or None."""
    if arch >= MIN_NVCC_ARCH:
        nvcc = find_nvcc()
        if nvcc:
            return Toolchain("nvcc", _nvcc_version(nvcc), (nvcc,))
        return _wheel_cicc()
    if arch >= MIN_NVRTC12_ARCH:
        lib = nvrtc.library(12)
        if lib is not None:
            return Toolchain("NVRTC", wheels.wheel_version("nvidia-cuda-nvrtc-cu12") or lib.version, (lib.path,))
    return None


def missing(arch: int) -> str:
    """Why no toolchain builds for sm_<arch> here (for messages; call where for_arch gave None)."""
    if arch < MIN_NVRTC12_ARCH:
        return f"no CUDA 12 or 13 compiler targets sm_{arch}"
    if arch < MIN_NVCC_ARCH:
        return f"sm_{arch} needs NVRTC 12.9 (pip install 'perfmodel[sass]' on Linux x86-64)"
    return f"sm_{arch} needs nvcc or NVIDIA's compiler wheels (pip install 'perfmodel[sass]' on Linux x86-64)"


def resource_usage(log: str, entry: str = "sgemm") -> dict:
    """Registers, spill stores and loads, stack frame and shared memory of the kernel `entry` from a
    ptxas report (-v; nvcc, ptxas and NVRTC print the same lines)."""
    start = log.find(f"Compiling entry function '{entry}'")
    props = log.find(f"Function properties for {entry}\n", max(start, 0))
    if start < 0 or props < 0:
        raise CompileError(f"no ptxas report for the kernel '{entry}'")
    used = re.search(r"Used (\d+) registers", log[start:])
    spill = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log[props:])
    smem = re.search(r"(\d+) bytes smem", log[start:])
    if not used or not spill:
        raise CompileError(f"unreadable ptxas report for the kernel '{entry}'")
    return dict(registers=int(used.group(1)), stack_frame=int(spill.group(1)), spill_stores=int(spill.group(2)),
                spill_loads=int(spill.group(3)), smem_bytes=int(smem.group(1)) if smem else 0)
