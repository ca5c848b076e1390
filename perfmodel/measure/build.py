"""KernelConfig -> nvcc options; compile to cubin with the local nvcc to read registers and spills.

CUDA 13's nvcc targets sm_75 and newer, so the compiler's register count exists for Turing and
later; older devices (K620, GTX 1060, V100) keep the model's estimate."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Optional

from ..catalogue import KernelConfig
from ..paths import cache_dir, data_dir

MACROS = {"bm": "BM", "bn": "BN", "bk": "BK", "tm": "TM", "tn": "TN", "wm": "WM", "wn": "WN", "wn_iter": "WNITER"}
NVCC_FLAGS = ["-O3", "-std=c++17"]
MIN_ARCH = 75


def defines(cfg: KernelConfig) -> list[str]:
    """-D options that set the kernel's compile-time tile parameters."""
    return [f"-D{MACROS[k]}={v}" for k, v in cfg.params().items()] + (["-DBK=1"] if "bk" not in cfg.params() else [])


def source_path(cfg: KernelConfig) -> Path:
    return data_dir("kernels") / cfg.spec.source


def sources_sha256() -> str:
    """SHA-256 of kernels/*.cu* (sorted, concatenated): which kernel sources a build or a run used."""
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(data_dir("kernels").glob("*.cu*")))).hexdigest()


def find_nvcc() -> Optional[str]:
    for cand in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and os.path.exists(cand):
            return cand
    return None


def arch_of(compute_capability: str) -> int:
    major, minor = compute_capability.split(".")
    return int(major) * 10 + int(minor)


def _options(cfg: KernelConfig, compute_capability: str) -> list[str]:
    return NVCC_FLAGS + defines(cfg) + [f"-arch=sm_{arch_of(compute_capability)}"]


def cache_key(cfg: KernelConfig, compute_capability: str) -> str:
    """Hash of every kernel source and the options: a changed kernel or flag is a new entry."""
    kdir = data_dir("kernels")
    text = "".join(p.read_text() for p in sorted(kdir.glob("*.cu*")))
    opts = _options(cfg, compute_capability)
    return hashlib.sha256((text + source_path(cfg).name + " ".join(opts)).encode()).hexdigest()[:20]


def compile_cubin(cfg: KernelConfig, compute_capability: str) -> Path:
    """Compile to a cached cubin with the local nvcc; the ptxas report lands beside it."""
    key = cache_key(cfg, compute_capability)
    out = cache_dir() / f"{key}.cubin"
    log = cache_dir() / f"{key}.ptxas.txt"
    if out.exists() and log.exists():
        return out
    nvcc = find_nvcc()
    if nvcc is None:
        raise RuntimeError("nvcc not found")
    r = subprocess.run([nvcc, "-cubin", *_options(cfg, compute_capability), "-I", str(data_dir("kernels")), "-Xptxas", "-v",
                        "-o", str(out), str(source_path(cfg))], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"nvcc failed for {cfg.label()}: {r.stderr.strip()[-800:]}")
    log.write_text(r.stderr)
    return out


def resource_usage(cfg: KernelConfig, compute_capability: str) -> Optional[dict]:
    """{'registers', 'spill_stores', 'spill_loads', 'smem_bytes', 'arch'} from nvcc, or None when
    nvcc is absent or cannot target the architecture. Cached on disk by source + options."""
    arch = arch_of(compute_capability)
    nvcc = find_nvcc()
    if nvcc is None or arch < MIN_ARCH:
        return None
    key = cache_key(cfg, compute_capability)
    cached = cache_dir() / f"usage-{key}.json"
    if cached.exists():
        return json.loads(cached.read_text())
    cubin = compile_cubin(cfg, compute_capability)
    log = (cache_dir() / f"{key}.ptxas.txt").read_text()
    regs = int(re.search(r"Used (\d+) registers", log).group(1))
    m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    smem = re.search(r"(\d+) bytes smem", log)
    stack = re.search(r"(\d+) bytes stack frame", log)
    usage = dict(registers=regs, spill_stores=int(m.group(1)) if m else 0, spill_loads=int(m.group(2)) if m else 0,
                 stack_frame=int(stack.group(1)) if stack else 0, smem_bytes=int(smem.group(1)) if smem else 0,
                 arch=f"sm_{arch_of(compute_capability)}", nvcc_flags=_options(cfg, compute_capability), cubin=str(cubin))
    cached.write_text(json.dumps(usage))
    return usage
