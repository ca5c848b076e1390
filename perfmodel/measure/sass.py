"""Facts read off the SASS the compiler produced (measure.build's cubin + nvdisasm), CPU only.

The model needs one fact the source cannot promise: whether the double-buffered kernel's binary
really issues the next tile's global loads before the current tile's FFMAs. Under register
pressure nvcc may sink those loads below the FFMA block, next to the shared-memory stores, which
silently turns prefetching off (seen for double_buffer 128x128x16, 8x8 on sm_90: ncu then shows
long-scoreboard stalls). nvdisasm comes from the local toolkit or the `nvidia-cuda-nvdisasm` wheel (dev
and sass extras)."""
from __future__ import annotations

import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from ..catalogue import KernelConfig
from ..paths import cache_dir, write_json_atomic
from . import build, toolchain, wheels

BIG_FFMA_BLOCK = 64


DISASM_ARGS = ("-hex",)  # each instruction's words too: the control codes (stall counts) of the loop program


def find_nvdisasm() -> Optional[str]:
    """nvdisasm: the local toolkit's (PATH or /usr/local/cuda; not with PERFMODEL_IGNORE_LOCAL_TOOLKIT=1),
    else the `nvidia-cuda-nvdisasm` wheel's (13.2 and newer: sm_75 and newer only), else None."""
    if not toolchain.ignore_local_toolkit():
        for cand in (shutil.which("nvdisasm"), "/usr/local/cuda/bin/nvdisasm"):
            if cand and os.access(cand, os.X_OK):
                return cand
    exe = wheels.wheel_file("cu13/bin/nvdisasm", executable=True)
    return str(exe) if exe else None


def missing(compute_capability: str) -> str:
    """Why this device's SASS cannot be read here (where sass_facts gives None for a build that compiles)."""
    if find_nvdisasm() is None:
        return "no nvdisasm here (pip install 'perfmodel[sass]')"
    if build.arch_of(compute_capability) < toolchain.MIN_NVCC_ARCH:
        return (f"NVIDIA's nvdisasm wheels (13.2 and newer) refuse sm_{build.arch_of(compute_capability)}; "
                "a CUDA 12 toolkit's nvdisasm on PATH reads it")
    return "nvdisasm could not read this build"


def available(compute_capability: str) -> bool:
    """Whether a toolchain here builds for this device and an nvdisasm is there to read its SASS."""
    return build.toolchain_for(compute_capability) is not None and find_nvdisasm() is not None


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


def main_path(opcodes: list[str]) -> list[str]:
    """The kernel's main path: of the stretches of its opcodes that end in an EXIT (the last one at the
    end), the one with the most FFMAs, the first on a tie. nvcc mostly lays the interior path out first,
    before the first EXIT; with ragged = inner it may put the call of the edge body first."""
    cuts = [i + 1 for i, op in enumerate(opcodes) if op == "EXIT"]
    spans = [opcodes[a:b] for a, b in zip([0] + cuts, cuts + [len(opcodes)])]
    return max(spans, key=lambda sp: sum(o.startswith("FFMA") for o in sp)) if spans else []


def prefetch_fraction(opcodes: list[str]) -> float:
    """Share of one loop iteration's FFMAs issued after its last global load, on the main path
    (main_path), between the prologue's barrier and the next one: the part of the
    compute phase that can hide the next tile's loads (1: loads first, 0: loads sunk below the FFMAs).
    A ring of buffers filled by cp.async (async_pipeline) has no barrier before its loop: its one barrier
    opens each iteration, and the region runs from it to the end of the interior path."""
    body = main_path(opcodes)
    bars = [i for i, op in enumerate(body) if op.startswith("BAR")]
    if not bars:
        return 0.0
    region = body[bars[0] + 1:bars[1]] if len(bars) >= 2 else body[bars[0] + 1:]
    ffma = [i for i, op in enumerate(region) if op.startswith("FFMA")]
    ldg = [i for i, op in enumerate(region) if op.startswith("LDG")]
    if len(ffma) < BIG_FFMA_BLOCK or not ldg:
        return 0.0
    return sum(1 for i in ffma if i > ldg[-1]) / len(ffma)


def main_loop(sass: str) -> Optional[dict]:
    """The k-tile loop: the backward branch whose body holds the most FFMAs. Returns its FFMA and
    instruction counts and the local-memory bytes one thread moves per pass (LDL + STL, by width)."""
    lines = loop_lines(sass)
    if lines is None:
        return None
    body = ops("\n".join(lines))

    def width(op: str) -> int:
        return 16 if ".128" in op else 8 if ".64" in op else 4

    return dict(loop_ffma=sum(o.startswith("FFMA") for o in body), loop_instructions=len(body),
                loop_local_bytes=sum(width(o) for o in body if o.startswith(("LDL", "STL"))))


# instruction classes of a loop program (model.schedule): F FFMA, S shared load, T shared store, G global
# load, B barrier, L local load, K local store, A everything else (fixed-latency ALU, branches, ...)
_CLASSES = (("FFMA", "F"), ("LDS", "S"), ("STS", "T"), ("LDG", "G"), ("BAR", "B"), ("LDL", "L"), ("STL", "K"))
# producers whose results arrive after a variable latency (scoreboarded): every consumer edge is kept;
# fixed-latency producers matter only within FIXED_WINDOW instructions (each issue takes >= 1 cycle)
_VARIABLE = "SGL"
FIXED_WINDOW = 8


def _regs(tok: str, width: int) -> list[int]:
    out = []
    for m in re.finditer(r"\bR(\d+)(\.64)?\b", tok):
        r = int(m.group(1))
        out += range(r, r + (2 if m.group(2) else width))
    return out


_INSTRUCTION = re.compile(r"\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)\s*(.*?);")  # an nvdisasm instruction line


def _operands(lines: list[str]):
    """Per nvdisasm instruction line: (opcode, destination registers, source operand texts, register
    width of a store's data); instructions without a register destination (stores, barriers,
    branches) have every operand as a source."""
    for line in lines:
        m = _INSTRUCTION.search(line)
        if not m:
            continue
        op, args = m.group(2), m.group(3)
        w = 4 if ".128" in op else 2 if (".64" in op or ".WIDE" in op) else 1
        parts = [p.strip() for p in args.split(",")] if args else []
        if op.startswith(("ST", "BAR", "BRA", "BSYNC", "BSSY", "RED", "ATOM", "EXIT")) or not parts or not re.match(r"R\d", parts[0]):
            yield op, [], parts, w
        else:
            yield op, _regs(parts[0], w), parts[1:], w


def _source_regs(op: str, operand: str, w: int) -> list[int]:
    """The registers one source operand reads: a store's data operand is as wide as the store;
    addresses are one register (or .64)."""
    return _regs(operand.replace(".reuse", ""), w if op.startswith("ST") and not operand.startswith("[") else 1)


def _instructions(lines: list[str]) -> list[tuple[str, list[int], list[int]]]:
    """(opcode, destination registers, source registers) of nvdisasm lines (predicates and uniform
    registers dropped; RZ is not a register)."""
    return [(op, dst, [r for t in srcs for r in _source_regs(op, t, w)]) for op, dst, srcs, w in _operands(lines)]


def register_reads(lines: list[str]) -> str:
    """Per instruction of nvdisasm lines, the register-file reads of its source operands in each of the
    two register banks (register number mod 2), as two digits per instruction ("21": two reads from
    bank 0, one from bank 1; 9 at most). An operand slot is served by the operand reuse cache, and
    reads nothing, when the previous instruction named the same register in the same slot with
    `.reuse` (Jia et al. 2018, "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking":
    two banks from Volta on, reuse flags in the control bits). A vector operand (a store's .64/.128
    data, a .64 address) reads each of its registers; RZ, uniform registers, predicates, constants and
    immediates read nothing from the register file."""
    out = []
    prev: list = [None, None, None, None]
    for op, _, parts, w in _operands(lines):
        reads = [0, 0]
        cur: list = [None, None, None, None]
        for k, t in enumerate(parts[:4]):
            regs = _source_regs(op, t, w)
            if not regs:
                continue
            served = prev[k] is not None and prev[k] == regs[0] and len(regs) == 1
            if not served:
                for r in regs:
                    reads[r % 2] += 1
            cur[k] = regs[0] if ".reuse" in t and len(regs) == 1 else None
        prev = cur
        out.append(f"{min(reads[0], 9)}{min(reads[1], 9)}")
    return "".join(out)


_HEX_WORD = re.compile(r"^\s*/\*\s*(0x[0-9a-f]{16})\s*\*/\s*$")  # nvdisasm -hex: an instruction's high word


def loop_lines(sass: str) -> Optional[list[str]]:
    """The listing lines of the k-tile loop: from the label of the backward branch whose body holds the
    most FFMAs to that branch; None without a backward branch."""
    lines = sass.splitlines()
    labels = {m.group(1): i for i, ln in enumerate(lines) if (m := re.match(r"^\s*(\.L_x_\d+):", ln))}
    best = None
    for i, ln in enumerate(lines):
        m = re.search(r"\bBRA\b.*`\((\.L_x_\d+)\)", ln)
        if m and m.group(1) in labels and labels[m.group(1)] < i:
            end = i + 2 if i + 1 < len(lines) and _HEX_WORD.match(lines[i + 1]) else i + 1  # -hex: the branch's 2nd word
            body = lines[labels[m.group(1)]:end]
            n = sum("FFMA" in x for x in body)
            if best is None or n > best[0]:
                best = (n, body)
    return None if best is None else best[1]


def store_reuse_writes(lines: list[str]) -> list[int]:
    """Indices (among the instructions of nvdisasm lines) of those that write a register an earlier global store
    (STG) of the lines reads, its data or its address: a write after read, which holds the writer on the long
    scoreboard until the store, queued behind the SM's other stores, has read its registers."""
    read: set[int] = set()
    out = []
    for i, (op, dst, src) in enumerate(_instructions(lines)):
        if op.startswith("STG"):
            read.update(src)
        elif dst and read.intersection(dst):
            out.append(i)
    return out


def own_code(sass: str) -> str:
    """The kernel's own code of a listing: all of it but the out-of-line edge body (edge_listing)."""
    edge = edge_listing(sass)
    return sass[:len(sass) - len(edge)] if edge else sass


def epilogue_lines(sass: str) -> Optional[list[str]]:
    """The lines of the kernel's own code (not the edge body) after its k-tile loop (loop_lines) up to its first
    EXIT: the last k-tile's FFMAs where nvcc peeled them out of the loop, and the C stores; None without a loop."""
    own = own_code(sass).splitlines()
    body = loop_lines("\n".join(own))
    if body is None:
        return None
    start = next(i for i in range(len(own)) if own[i:i + len(body)] == body) + len(body)
    out = []
    for ln in own[start:]:
        out.append(ln)
        if re.search(r"\bEXIT\b", ln):
            break
    return out


def epilogue_store_reuse(sass: str) -> Optional[int]:
    """How many instructions of the epilogue (epilogue_lines) write a register one of its C stores reads
    (store_reuse_writes); None without a k-tile loop."""
    lines = epilogue_lines(without_aux_kernels(sass))
    return None if lines is None else len(store_reuse_writes(lines))


def program_id(body: list[str]) -> str:
    """A loop program's id: a digest of its listing lines (the same loop, whatever sources built it)."""
    return hashlib.sha1("\n".join(body).encode()).hexdigest()[:16]


def loop_program(sass: str) -> Optional[dict]:
    """The k-tile loop (the backward branch whose body holds the most FFMAs) as a dependency program for
    model.schedule: `cls`, one class letter per instruction (see _CLASSES), `wide`, the access width in
    4-byte words of each memory instruction (else 0), and `deps`, per instruction the distances back to
    the producers of its source registers (and of registers it overwrites while a load into them is in
    flight) that can hold it: every variable-latency producer, fixed-latency ones within FIXED_WINDOW.
    Distances reach into the previous pass for loop-carried registers. None without such a loop."""
    body = loop_lines(sass)
    if body is None:
        return None
    ins = _instructions(body)
    n = len(ins)
    cls = "".join(next((c for p, c in _CLASSES if op.startswith(p)), "A") for op, _, _ in ins)
    wide = [(4 if ".128" in op else 2 if ".64" in op else 1) if cls[i] in "STGLK" else 0 for i, (op, _, _) in enumerate(ins)]
    writer: dict[int, int] = {}
    deps: list[list[int]] = [[] for _ in range(n)]
    for rnd in range(2):  # the second pass sees the loop-carried producers of the first
        for i, (op, dst, src) in enumerate(ins):
            j = i + rnd * n
            if rnd == 1:
                ds = set()
                for r in src + [r for r in dst if cls[writer.get(r, j) % n] in _VARIABLE]:
                    k = writer.get(r)
                    if k is not None and k < j and (cls[k % n] in _VARIABLE or j - k <= FIXED_WINDOW):
                        ds.add(j - k)
                deps[i] = sorted(ds)
            for r in dst:
                writer[r] = j
    prog = dict(id=program_id(body), cls=cls, wide=wide, deps=deps,
                reads=register_reads(body))
    stall = _stall_counts(body)
    if stall is not None and len(stall) == n:
        prog["stall"] = stall
    sb = scoreboard_fields(body)
    if sb is not None and len(sb) == n:
        prog["sb"] = sb
    return prog


def control_codes(body: list[str]) -> Optional[list[dict]]:
    """Per instruction of a `nvdisasm -hex` listing's lines, the fields of its control code (the high word,
    which nvdisasm -hex prints on the line after the instruction; Volta and newer, bits 41-61): `stall`, the
    cycles the scheduler holds the warp before its next instruction (41-44); `write`, the scoreboard
    (0-5) a variable-latency instruction releases when its result is written, 7 for none (46-48);
    `read`, the one it releases once its source registers are read (49-51); `wait`, the mask of
    scoreboards the instruction waits for before it issues (52-57). A wait holds the warp until every
    instruction still pending on those scoreboards is done, not only the producer of its operands.
    None for a listing without the words."""
    out = []
    for i, line in enumerate(body):
        if not _INSTRUCTION.search(line):
            continue
        m = _HEX_WORD.match(body[i + 1]) if i + 1 < len(body) else None
        if m is None:
            return None
        c = int(m.group(1), 16) >> 41
        out.append(dict(stall=c & 0xF, write=(c >> 5) & 7, read=(c >> 8) & 7, wait=(c >> 11) & 0x3F))
    return out


def scoreboard_fields(body: list[str]) -> Optional[list[list[int]]]:
    """Per instruction of a `nvdisasm -hex` loop body, [write, read, wait] of its control code (control_codes):
    the scoreboard its result releases (7: none), the one its operand read releases (7: none), the mask of
    scoreboards it waits for. None for a listing without the words."""
    codes = control_codes(body)
    return None if codes is None else [[c["write"], c["read"], c["wait"]] for c in codes]


def _stall_counts(body: list[str]) -> Optional[list[int]]:
    """Per instruction of a `nvdisasm -hex` loop body, the stall count of its control code (control_codes):
    the cycles the scheduler holds the warp before its next instruction. None for a listing without the
    words."""
    codes = control_codes(body)
    return None if codes is None else [c["stall"] for c in codes]


def prefetch_effective(opcodes: list[str]) -> bool:
    """True if at least a quarter of the compute phase follows the next tile's loads."""
    return prefetch_fraction(opcodes) >= 0.25


_CUBIN_FACTS: dict = {}  # sha256 of a cubin -> its facts: a binary measured again (another shape, another split) is read once


def facts_of_cubin(cubin: bytes) -> Optional[dict]:
    """SASS facts of a compiled module (the binary that runs), or None without nvdisasm."""
    key = hashlib.sha256(cubin).hexdigest()
    if key not in _CUBIN_FACTS:
        _CUBIN_FACTS[key] = _disassembled_facts(cubin)
    return _CUBIN_FACTS[key]


def _disassembled_facts(cubin: bytes) -> Optional[dict]:
    exe = find_nvdisasm()
    if exe is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        r = subprocess.run([exe, *DISASM_ARGS, f.name], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return listing_facts(r.stdout)


_EDGE_LABEL = re.compile(r"^\$\w+\$_Z9body_edge\w*:", re.M)


def edge_listing(sass: str) -> Optional[str]:
    """The listing of the out-of-line edge body (kernels/common.cuh, EDGE_BODY: the guarded path the
    blocks on a ragged edge take), from its label to the end; None where the binary has none."""
    m = _EDGE_LABEL.search(sass)
    return sass[m.start():] if m else None


# kernels a module holds besides the SGEMM's entry `sgemm` (split_k's reduction of its partials): not the k-tile loop
AUX_KERNELS = ("reduce_splits",)
_SECTION = re.compile(r"^//-+ \.text\.(\S+)\s+-+$", re.M)


def function_sections(sass: str) -> dict[str, str]:
    """{function (its mangled name): its section of the listing} (nvdisasm prints one section per function)."""
    marks = list(_SECTION.finditer(sass))
    ends = [m.start() for m in marks[1:]] + [len(sass)]
    return {m.group(1): sass[m.start():e] for m, e in zip(marks, ends)}


def without_aux_kernels(sass: str) -> str:
    """The listing less the sections of AUX_KERNELS."""
    secs = function_sections(sass)
    if not any(name in AUX_KERNELS for name in secs):
        return sass
    first = _SECTION.search(sass).start()
    return sass[:first] + "".join(text for name, text in secs.items() if name not in AUX_KERNELS)


def listing_facts(sass: str) -> dict:
    """Prefetch share, FFMA/LDG/LDS counts of the main path (main_path, in the kernel's own code), the
    main loop's facts (main_loop) of one listing, and the edge body's k-tile loop program; the
    sections of AUX_KERNELS are left out."""
    sass = without_aux_kernels(sass)
    own = own_code(sass)
    edge = sass[len(own):] or None
    opc = ops(own)
    path = main_path(opc)
    return dict(prefetch=prefetch_effective(opc), prefetch_fraction=prefetch_fraction(opc),
                ffma=sum(o.startswith("FFMA") for o in path), ldg=sum(o.startswith("LDG") for o in path),
                lds=sum(o.startswith("LDS") for o in path), **(main_loop(sass) or {}), loop_program=loop_program(sass),
                edge_loop_program=loop_program(edge) if edge else None)


def local_bytes_per_tile(facts: Optional[dict], cfg: KernelConfig) -> Optional[float]:
    """Local-memory bytes one thread moves per k-tile in the binary (its main loop's LDL + STL), or
    None when unknown. A loop body that holds several tiles (nvcc unrolled the tile loop) is divided."""
    if not facts or "loop_local_bytes" not in facts or not facts.get("loop_ffma"):
        return None
    per_tile = cfg.bm * cfg.bn * cfg.bk / cfg.threads
    tiles = max(1, round(facts["loop_ffma"] / per_tile))
    return facts["loop_local_bytes"] / tiles


def program_loop_counts(program: Optional[dict]) -> Optional[dict]:
    """main_loop's counts (loop_ffma, loop_local_bytes) read off a loop program (the same loop, so the
    same figures: an LDL/STL of `wide` words moves 4 x wide bytes), or None without a program."""
    if not program:
        return None
    cls, wide = program["cls"], program["wide"]
    return dict(loop_ffma=cls.count("F"), loop_local_bytes=sum(4 * wide[i] for i, k in enumerate(cls) if k in "LK"))


def listing_of(cfg: KernelConfig, compute_capability: str) -> Optional[str]:
    """The SASS listing (nvdisasm, DISASM_ARGS) of the local build of cfg, or None where nvdisasm refuses
    the binary (the nvdisasm wheels of 13.2 and newer refuse sm_50-sm_72). Needs a toolchain that builds
    for the device (build.compile_cubin raises otherwise) and an nvdisasm (find_nvdisasm)."""
    exe = find_nvdisasm()
    if exe is None:
        return None
    cubin = build.compile_cubin(cfg, compute_capability)
    r = subprocess.run([exe, *DISASM_ARGS, str(cubin)], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def sass_facts(cfg: KernelConfig, compute_capability: str) -> Optional[dict]:
    """{'prefetch': bool, 'ffma': n, 'ldg': n, 'lds': n, 'arch': ...} for the interior path, or None
    where no toolchain here builds for the device or no nvdisasm here reads its SASS. Cached on disk."""
    tc, exe = build.toolchain_for(compute_capability), find_nvdisasm()
    if tc is None or exe is None:
        return None
    if build.arch_of(compute_capability) < toolchain.MIN_NVCC_ARCH and exe == str(wheels.wheel_file("cu13/bin/nvdisasm")):
        return None  # the wheel's nvdisasm refuses sm_50-sm_72 (missing() says so)
    key = build.cache_key(cfg, compute_capability, tc) + "-sass10"
    cached = cache_dir() / f"sass-{key}.json"
    if cached.exists():
        return json.loads(cached.read_text())
    listing = listing_of(cfg, compute_capability)
    if listing is None:
        return None
    facts = dict(listing_facts(listing), arch=f"sm_{build.arch_of(compute_capability)}")
    write_json_atomic(cached, facts)
    return facts



def binary_inputs(cfg: KernelConfig, compute_capability: str) -> Optional[dict]:
    """What `predict` takes from the local build of cfg: registers and local frame (nvcc), the prefetch
    share (double-buffered kernels), local bytes per k-tile (when there is a frame) and the k loop's
    program (the k-tile loop of the tiled kernels, the unrolled k loop of the one-element ones), with the
    architectures they were read for; None when the local nvcc cannot build for this device."""
    try:
        usage = build.resource_usage(cfg, compute_capability)
        facts = sass_facts(cfg, compute_capability) if usage else None
    except toolchain.CompileError:
        return None
    if not usage:
        return None
    # the local frame, as the driver reports it for the binary that runs (LOCAL_SIZE_BYTES, what
    # recorded runs hold): ptxas's stack frame. Its traffic per k-tile is the loop's LDL + STL where the
    # SASS is read; without the SASS a frame with no spill stores (the out-of-line edge call's) moves none.
    local = usage["stack_frame"]
    if facts and local:
        local_tile = local_bytes_per_tile(facts, cfg)
    else:
        local_tile = 0.0 if local and not usage["spill_stores"] else None
    return dict(registers=usage["registers"], local_bytes=local, spill_stores=usage["spill_stores"], arch=usage["arch"],
                toolchain=usage["toolchain"], sass_arch=facts["arch"] if facts else None,
                prefetch=facts["prefetch_fraction"] if facts and cfg.buffers >= 2 else None,
                local_tile_bytes=local_tile,
                program=facts.get("loop_program") if facts else None,
                edge_program=facts.get("edge_loop_program") if facts else None)

# ---- archives of loop programs beside recorded runs (replays without a compiler) ----------------
ARCHIVE_GLOB = "sass-programs-*.json.xz"
_ARCHIVE_FILES: dict[Path, dict] = {}  # decompressed archive files, by path (read once per process)


def archive_key(sources_sha256: str, nvcc_flags, cfg: KernelConfig) -> str:
    """Key of one build in an archive: the kernel sources, the nvcc flags and the configuration (its
    defines), as a recorded run's environment names them."""
    return f"{sources_sha256[:20]}|{' '.join(nvcc_flags)}|{cfg.label()}"


def edge_archive_key(sources_sha256: str, nvcc_flags, cfg: KernelConfig) -> str:
    """Key of one build's edge-body loop program in an archive (beside its k-tile loop's archive_key)."""
    return "edge|" + archive_key(sources_sha256, nvcc_flags, cfg)


def write_program_archive(programs: dict, path: str | Path) -> int:
    """Write {archive_key: loop program} to an xz-compressed JSON archive (programs shared by several
    keys are stored once), so replays of recorded runs need no nvcc. Never overwrites; returns the
    number of keys."""
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} exists; archives are never overwritten")
    nvcc = subprocess.run([build.find_nvcc(), "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    data = dict(nvcc=nvcc, keys={k: p["id"] for k, p in programs.items()},
                programs={p["id"]: p for p in programs.values()})
    path.write_bytes(lzma.compress(json.dumps(data, separators=(",", ":")).encode()))
    return len(programs)


READS_GLOB = "register-reads-*.json.xz"  # {program id: register_reads} of archived programs (written later)
CODES_GLOB = "scoreboard-codes-*.json.xz"  # {"codes": {program id: scoreboard_fields}} of archived programs (written later)


class ProgramArchive:
    """The loop-program archives (ARCHIVE_GLOB) in the given folders: `program(key)` or None. A program
    archived before programs carried their register-bank reads gets them from a READS_GLOB file in the
    same folders where one holds its id (the id is a digest of the loop's SASS)."""

    def __init__(self, folders):
        self.files = [p for d in folders for p in sorted(Path(d).glob(ARCHIVE_GLOB))]
        self.read_files = [p for d in folders for p in sorted(Path(d).glob(READS_GLOB))]
        self.code_files = [p for d in folders for p in sorted(Path(d).glob(CODES_GLOB))]

    @staticmethod
    def _load(p: Path) -> dict:
        """An archive file's content, read once per process ({} where it cannot be read)."""
        if p not in _ARCHIVE_FILES:
            try:
                _ARCHIVE_FILES[p] = json.loads(lzma.decompress(p.read_bytes()))
            except (OSError, ValueError, lzma.LZMAError):
                _ARCHIVE_FILES[p] = {}
        return _ARCHIVE_FILES[p]

    def _by_id(self, files, section: str, program_id: str):
        """What the first of files holds under section for a program id, or None."""
        for p in files:
            got = self._load(p).get(section, {}).get(program_id)
            if got is not None:
                return got
        return None

    def reads(self, program_id: str) -> Optional[str]:
        """The register-bank reads a READS_GLOB file holds for a program id, or None."""
        return self._by_id(self.read_files, "reads", program_id)

    def codes(self, program_id: str) -> Optional[list]:
        """The scoreboard fields (scoreboard_fields) a CODES_GLOB file holds for a program id, or None."""
        return self._by_id(self.code_files, "codes", program_id)

    def program(self, key: str) -> Optional[dict]:
        """The program archived under key; where several archives hold it, one with stall counts first
        (archives written before programs carried them hold the same loop without)."""
        found = None
        for p in self.files:
            a = self._load(p)
            pid = a.get("keys", {}).get(key)
            if pid is not None:
                if "stall" in a["programs"][pid]:
                    found = a["programs"][pid]
                    break
                found = found or a["programs"][pid]
        if found is not None and "reads" not in found:
            reads = self.reads(found["id"])
            if reads is not None:
                found = dict(found, reads=reads)
        if found is not None and "sb" not in found:
            sb = self.codes(found["id"])
            if sb is not None and len(sb) == len(found["cls"]):
                found = dict(found, sb=sb)
        return found
