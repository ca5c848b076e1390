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
    for cand in ("/usr/local/cuda/bin/nvdisasm",):
        if os.access(cand, os.X_OK):
            return cand
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


def parse(sass: str) -> list[tuple]:
    """An nvdisasm listing in order: ('L', label) for each branch label, ('I', opcode, branch target
    or None) for each instruction (predicates dropped)."""
    seq = []
    for line in sass.splitlines():
        t = line.strip()
        m = re.match(r"^(\.L_x_\d+):", t)
        if m:
            seq.append(("L", m.group(1)))
            continue
        m = re.match(r"(?:/\*[0-9a-f]+\*/)?\s*(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)(.*)", t)
        if m and not t.startswith((".", "//")):
            tgt = re.search(r"`\((\.L_x_\d+)\)", m.group(3))
            seq.append(("I", m.group(2), tgt.group(1) if tgt else None))
    return seq


def ops(sass: str) -> list[str]:
    """Opcode sequence of an nvdisasm listing (predicates dropped)."""
    return [x[1] for x in parse(sass) if x[0] == "I"]


def prefetch_fraction(opcodes: list[str]) -> float:
    """Share of one loop iteration's FFMAs issued after its last global load, on the interior path
    (before the first EXIT), between the prologue's barrier and the next one: the part of the
    compute phase that can hide the next tile's loads (1: loads first, 0: loads sunk below the FFMAs)."""
    end = opcodes.index("EXIT") if "EXIT" in opcodes else len(opcodes)
    body = opcodes[:end]
    bars = [i for i, op in enumerate(body) if op.startswith("BAR")]
    if len(bars) < 2:
        return 0.0
    region = body[bars[0] + 1:bars[1]]
    ffma = [i for i, op in enumerate(region) if op.startswith("FFMA")]
    ldg = [i for i, op in enumerate(region) if op.startswith("LDG")]
    if len(ffma) < BIG_FFMA_BLOCK or not ldg:
        return 0.0
    return sum(1 for i in ffma if i > ldg[-1]) / len(ffma)


def main_loop(sass: str) -> Optional[dict]:
    """The k-tile loop: the backward branch whose body holds the most FFMAs. Returns its FFMA and
    instruction counts and the local-memory bytes one thread moves per pass (LDL + STL, by width)."""
    seq = parse(sass)
    pos = {x[1]: i for i, x in enumerate(seq) if x[0] == "L"}
    best = None
    for i, x in enumerate(seq):
        if x[0] == "I" and x[1].startswith("BRA") and x[2] in pos and pos[x[2]] < i:
            body = [y[1] for y in seq[pos[x[2]]:i + 1] if y[0] == "I"]
            ffma = sum(o.startswith("FFMA") for o in body)
            if best is None or ffma > best[0]:
                best = (ffma, body)
    if best is None:
        return None

    def width(op: str) -> int:
        return 16 if ".128" in op else 8 if ".64" in op else 4

    ffma, body = best
    return dict(loop_ffma=ffma, loop_instructions=len(body),
                loop_local_bytes=sum(width(o) for o in body if o.startswith(("LDL", "STL"))))


def prefetch_effective(opcodes: list[str]) -> bool:
    """True if at least a quarter of the compute phase follows the next tile's loads."""
    return prefetch_fraction(opcodes) >= 0.25


def facts_of_cubin(cubin: bytes) -> Optional[dict]:
    """SASS facts of a compiled module (the binary that runs), or None without nvdisasm."""
    import tempfile

    exe = find_nvdisasm()
    if exe is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        r = subprocess.run([exe, f.name], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return listing_facts(r.stdout)


def listing_facts(sass: str) -> dict:
    """Prefetch share, FFMA/LDG/LDS counts of the interior path (before the first EXIT) and the
    main loop's facts (main_loop) of one listing."""
    opc = ops(sass)
    end = opc.index("EXIT") if "EXIT" in opc else len(opc)
    return dict(prefetch=prefetch_effective(opc), prefetch_fraction=prefetch_fraction(opc),
                ffma=sum(o.startswith("FFMA") for o in opc[:end]), ldg=sum(o.startswith("LDG") for o in opc[:end]),
                lds=sum(o.startswith("LDS") for o in opc[:end]), **(main_loop(sass) or {}))


def local_bytes_per_tile(facts: Optional[dict], cfg: KernelConfig) -> Optional[float]:
    """Local-memory bytes one thread moves per k-tile in the binary (its main loop's LDL + STL), or
    None when unknown. A loop body that holds several tiles (nvcc unrolled the tile loop) is divided."""
    if not facts or "loop_local_bytes" not in facts or not facts.get("loop_ffma"):
        return None
    per_tile = cfg.bm * cfg.bn * cfg.bk / cfg.threads
    tiles = max(1, round(facts["loop_ffma"] / per_tile))
    return facts["loop_local_bytes"] / tiles


def sass_facts(cfg: KernelConfig, compute_capability: str) -> Optional[dict]:
    """{'prefetch': bool, 'ffma': n, 'ldg': n, 'lds': n, 'arch': ...} for the interior path, or None
    when nvcc/nvdisasm are missing or cannot target the architecture. Cached on disk."""
    if not available() or build.arch_of(compute_capability) < build.MIN_ARCH:
        return None
    key = build.cache_key(cfg, compute_capability) + "-sass3"
    cached = build.cache_dir() / f"sass-{key}.json"
    if cached.exists():
        return json.loads(cached.read_text())
    cubin = build.compile_cubin(cfg, compute_capability)
    r = subprocess.run([find_nvdisasm(), str(cubin)], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    facts = dict(listing_facts(r.stdout), arch=f"sm_{build.arch_of(compute_capability)}")
    cached.write_text(json.dumps(facts))
    return facts
