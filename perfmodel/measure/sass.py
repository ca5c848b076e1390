"""Facts read off the SASS the compiler produced (nvcc -cubin + nvdisasm), CPU only.

The model needs one fact the source cannot promise: whether the double-buffered kernel's binary
really issues the next tile's global loads before the current tile's FFMAs. Under register
pressure nvcc may sink those loads below the FFMA block, next to the shared-memory stores, which
silently turns prefetching off (seen for double_buffer 128x128x16, 8x8 on sm_90: ncu then shows
long-scoreboard stalls). nvdisasm comes from the `nvidia-cuda-nvdisasm` wheel (dev extra) or PATH."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Optional

from ..catalogue import KernelConfig
from . import build

BIG_FFMA_BLOCK = 64


def find_nvdisasm() -> Optional[str]:
    exe = shutil.which("nvdisasm")
    if exe:
        return exe
    try:
        import nvidia  # namespace package of NVIDIA's pip wheels

        for base in nvidia.__path__:
            for cand in Path(base).glob("cu*/bin/nvdisasm"):
                if os.access(cand, os.X_OK) or cand.chmod(0o755) is None:
                    return str(cand)
    except ImportError:
        pass
    return None


def available() -> bool:
    return build.find_nvcc() is not None and find_nvdisasm() is not None


def ops(sass: str) -> list[str]:
    """Opcode sequence of the first kernel in an nvdisasm listing (predicates dropped)."""
    out = []
    for line in sass.splitlines():
        m = re.match(r"\s*(?:/\*[0-9a-f]+\*/)?\s*(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", line)
        if m and not line.strip().startswith((".", "//")):
            out.append(m.group(2))
    return out


def prefetch_effective(opcodes: list[str]) -> bool:
    """True if, on the interior path (before the first EXIT), a global load sits between the
    prologue's barrier and the first large FFMA block: the next tile is loaded while computing."""
    end = opcodes.index("EXIT") if "EXIT" in opcodes else len(opcodes)
    body = opcodes[:end]
    try:
        bar = next(i for i, op in enumerate(body) if op.startswith("BAR"))
    except StopIteration:
        return False
    first_block = None
    run = 0
    for i in range(bar, len(body)):
        run = run + 1 if body[i].startswith("FFMA") else 0
        if run == BIG_FFMA_BLOCK:
            first_block = i - BIG_FFMA_BLOCK + 1
            break
    if first_block is None:
        return False
    return any(op.startswith("LDG") for op in body[bar:first_block])


def sass_facts(cfg: KernelConfig, compute_capability: str) -> Optional[dict]:
    """{'prefetch': bool, 'ffma': n, 'ldg': n, 'lds': n, 'arch': ...} for the interior path, or None
    when nvcc/nvdisasm are missing or cannot target the architecture. Cached on disk."""
    if not available() or build.arch_of(compute_capability) < build.MIN_ARCH:
        return None
    key = build.cache_key(cfg, compute_capability) + "-sass1"
    cached = build.cache_dir() / f"sass-{key}.json"
    if cached.exists():
        return json.loads(cached.read_text())
    cubin = build.compile_cubin(cfg, compute_capability)
    r = subprocess.run([find_nvdisasm(), str(cubin)], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    opc = ops(r.stdout)
    end = opc.index("EXIT") if "EXIT" in opc else len(opc)
    facts = dict(prefetch=prefetch_effective(opc), arch=f"sm_{build.arch_of(compute_capability)}",
                 ffma=sum(o.startswith("FFMA") for o in opc[:end]), ldg=sum(o.startswith("LDG") for o in opc[:end]),
                 lds=sum(o.startswith("LDS") for o in opc[:end]))
    cached.write_text(json.dumps(facts))
    return facts
