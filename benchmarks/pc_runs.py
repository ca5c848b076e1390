"""Where a kernel's warps spent their time, by stretch of code (CPU): reads the per-instruction source page
that `benchmarks/ncu_stall_pcs.py` writes (`cfgN-source.csv`, raw or xz-packed) and cuts the code into runs of
consecutive instructions executed the same number of times (the k-tile loop, the code before and after it,
unreached code). For each run of at least 8 instructions: where it lies (KB from the kernel's first
instruction), how often each instruction ran (warps x passes), its share of the PC samples, and samples per KB
of code. A sample is a warp seen at its program counter, so samples per KB of code run once say how long a
warp takes to get through a KB of it.

    python3 benchmarks/pc_runs.py FILE.csv[.xz] [FILE ...]
"""
import csv
import io
import lzma
import sys
from pathlib import Path

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"
BYTES_PER_INSTRUCTION = 16


def read(path: Path) -> list[tuple[int, int, int]]:
    """(address, times executed, samples) per instruction, in address order."""
    raw = lzma.open(path, "rt").read() if path.suffix == ".xz" else path.read_text()
    rows = list(csv.reader(io.StringIO(raw)))
    hdr = next(r for r in rows if "Address" in r)
    ia, ie, isamp = hdr.index("Address"), hdr.index(EXECUTED), hdr.index(SAMPLES)
    out = [(int(r[ia], 16), int(r[ie] or 0), int(r[isamp] or 0)) for r in rows[rows.index(hdr) + 1:]
           if len(r) > ia and r[ia].startswith("0x")]
    return sorted(out)


def runs(instrs: list[tuple[int, int, int]]) -> list[dict]:
    """Consecutive instructions executed the same number of times, merged."""
    base = instrs[0][0]
    out: list[dict] = []
    for addr, ex, s in instrs:
        if out and out[-1]["executed"] == ex:
            out[-1].update(end_kb=(addr - base + BYTES_PER_INSTRUCTION) / 1024)
            out[-1]["instructions"] += 1
            out[-1]["samples"] += s
        else:
            out.append(dict(start_kb=(addr - base) / 1024, end_kb=(addr - base + BYTES_PER_INSTRUCTION) / 1024,
                            executed=ex, instructions=1, samples=s))
    return out


def table(path: Path) -> str:
    instrs = read(path)
    total = sum(s for _, _, s in instrs) or 1
    lines = [f"{path.name}: {len(instrs)} instructions, {total} samples",
             f"{'code (KB)':>15} {'executed':>9} {'instructions':>12} {'samples':>8} {'share':>6} {'samples/KB':>10}"]
    for r in runs(instrs):
        if r["instructions"] < 8 or r["executed"] == 0:
            continue
        kb = r["instructions"] * BYTES_PER_INSTRUCTION / 1024
        lines.append(f"{r['start_kb']:>6.1f}-{r['end_kb']:>6.1f} {r['executed']:>9} {r['instructions']:>12} {r['samples']:>8} "
                     f"{100 * r['samples'] / total:>5.1f}% {r['samples'] / kb:>10.0f}")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print("\n\n".join(table(Path(p)) for p in sys.argv[1:]))
