"""Replay the k loop of `benchmarks/smemless/coalesced_unroll.cu` (unroll 1-32) for one warp from its SASS
and the control codes' scoreboard barriers, beside what the H100 measured (CPU; needs nvcc and nvdisasm).

  python3 benchmarks/sass_barriers.py [MEASURED.json] [--latency 697] [--l1 33]
  python3 benchmarks/sass_barriers.py --catalogue --arch sm_80 --latency 574   # the catalogue's naive and
      coalesced (kernels/01_naive.cu, 02_coalesced.cu) as perfmodel builds them for that architecture

Each instruction of the loop (the backward branch with the most FFMAs, measure.sass.loop_lines) waits until every
scoreboard barrier in its control code's wait mask has cleared, then holds the warp its stall count
(one clock at least). A global load sets its write barrier until it returns: B's loads (a base register
without immediate offsets, a new row every k step) after --latency cycles (the DRAM latency calibrate
measured on the H100), A's (one base register with immediate offsets: a 128 B line serves 32 k steps)
after --l1 cycles (Luo et al. 2024's L1 hit, as devices/generations/sm_90.toml); read barriers clear
10 clocks after issue. The control-code fields are those of the high instruction word nvdisasm -hex
prints (Jia et al. 2018, Volta and newer): stall bits 41-44, write barrier 46-48, read barrier 49-51,
wait mask 52-57; 7 is no barrier. The column "register dependences only" replays the same loops with
each instruction waiting for its source registers instead of its wait mask. MEASURED.json:
benchmarks/coalesced_unroll.py's output."""
import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from perfmodel.measure.sass import find_nvdisasm, loop_lines
from perfmodel.measure.toolchain import find_nvcc

INS = re.compile(r"^\s*/\*([0-9a-f]{4})\*/\s+(.*?);\s*/\*\s*0x[0-9a-f]{16}\s*\*/")
HEX = re.compile(r"^\s*/\*\s*(0x[0-9a-f]{16})\s*\*/\s*$")
LDG = re.compile(r"LDG\S*\s+R\d+,\s*(?:desc\[\w+\])?\[(R\d+)\.64(\+?-?0x[0-9a-f]+)?\]")
READ_BARRIER_CLOCKS = 10.0


def functions(text: str):
    parts = re.split(r"//-+ \.text\.(\S+)\s+-+", text)
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def control_fields(body: list[str]):
    """(text, control fields) per instruction of a loop's `nvdisasm -hex` lines (sass.loop_lines)."""
    out = []
    for i, ln in enumerate(body):
        m = INS.match(ln)
        if m and i + 1 < len(body) and HEX.match(body[i + 1]):
            hi = int(HEX.match(body[i + 1]).group(1), 16)
            out.append((m.group(2).strip(), dict(stall=(hi >> 41) & 0xF, wb=(hi >> 46) & 7, rb=(hi >> 49) & 7,
                                                 wait=(hi >> 52) & 0x3F)))
    return out


def _regs(s: str) -> tuple[list[str], list[str]]:
    """(destination, sources) registers of an instruction (the first register operand is written, except
    for stores, branches and compares)."""
    s = re.sub(r"^@!?P\d+\s+", "", s)
    op, _, args = s.partition(" ")
    r = re.findall(r"\bR(\d+)\b", args)
    if op.startswith(("ST", "BRA", "ISETP")) or not r:
        return [], r
    return [r[0]], r[1:]


def replay(body, latency: float, l1: float, passes: int = 8, barriers: bool = True) -> float:
    """Steady-state cycles per pass of the loop for one warp; barriers False: each instruction waits for the
    producers of its source registers instead (loads after their latency, others after 4 clocks)."""
    offset_bases = {m.group(1) for s, _ in body if (m := LDG.search(s)) and m.group(2)}
    lat = [None if not (m := LDG.search(s)) else (l1 if m.group(1) in offset_bases else latency) for s, _ in body]
    bar, ready, t, starts = [0.0] * 6, {}, 0.0, []
    for _ in range(passes):
        starts.append(t)
        for (s, c), lt in zip(body, lat):
            dst, src = _regs(s)
            if barriers:
                t = max([t] + [bar[b] for b in range(6) if c["wait"] >> b & 1])
            else:
                t = max([t] + [ready.get(x, 0.0) for x in src])
            if lt is not None and c["wb"] < 6:
                bar[c["wb"]] = max(bar[c["wb"]], t + lt)
            if c["rb"] < 6:
                bar[c["rb"]] = max(bar[c["rb"]], t + READ_BARRIER_CLOCKS)
            for x in dst:
                ready[x] = t + (lt if lt is not None else 4.0)
            t += max(c["stall"], 1)
    return (starts[-1] - starts[3]) / (passes - 4)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("measured", nargs="?")
    ap.add_argument("--latency", type=float, default=697.0)
    ap.add_argument("--l1", type=float, default=33.0)
    ap.add_argument("--catalogue", action="store_true", help="replay the catalogue's naive and coalesced instead")
    ap.add_argument("--arch", default="sm_90", help="the architecture to build for (default sm_90)")
    a = ap.parse_args()
    if not re.fullmatch(r"sm_\d{2,3}", a.arch):
        ap.error(f"--arch takes sm_XX (e.g. sm_80), got {a.arch!r}")
    if a.catalogue:
        return catalogue(a)
    nvcc, nvdisasm = find_nvcc(), find_nvdisasm()
    if not nvcc or not nvdisasm:
        print("needs nvcc and nvdisasm", file=sys.stderr)
        return 2
    src = Path(__file__).parent / "smemless" / "coalesced_unroll.cu"
    with tempfile.TemporaryDirectory() as d:
        cub = Path(d) / "u.cubin"
        subprocess.run([nvcc, f"-arch={a.arch}", "-O3", "-cubin", "-o", str(cub), str(src)], check=True)
        text = subprocess.run([nvdisasm, "-hex", str(cub)], check=True, capture_output=True, text=True).stdout
    meas = {}
    if a.measured:
        for p in json.loads(Path(a.measured).read_text())["points"]:
            if p["M"] == 1:
                meas[p["unroll"]] = p["cycles_per_k"]
    rows = []
    for name, body in functions(text):
        u = int(re.search(r"ILi(\d+)E", name).group(1))
        loop = control_fields(loop_lines(body))
        k = sum("FFMA" in s for s, _ in loop)
        rows.append((u, k, len(loop), sum("LDG" in s for s, _ in loop), replay(loop, a.latency, a.l1) / k,
                     replay(loop, a.latency, a.l1, barriers=False) / k))
    print(f"B latency {a.latency:.0f}, A (L1) latency {a.l1:.0f} cycles; one warp")
    print("| unroll | instructions per pass | loads per pass | replayed cycles per k | register dependences only "
          "| measured (M = 1) | measured / replayed |")
    print("|---|---|---|---|---|---|---|")
    for u, k, n, ld, per, reg in sorted(rows):
        m = meas.get(u)
        print(f"| {u} | {n} | {ld} | {per:.0f} | {reg:.0f} | {'' if m is None else f'{m:.0f}'} | "
              f"{'' if m is None else f'{m / per:.2f}'} |")
    return 0


def catalogue(a) -> int:
    """The catalogue's smem-less kernels as perfmodel builds them (measure.build, nvcc 13.0) for --arch,
    replayed for one warp: cycles per k step."""
    from perfmodel import KernelConfig
    from perfmodel.measure.build import compile_cubin
    from perfmodel.measure.sass import find_nvdisasm

    cc = f"{a.arch[3:-1]}.{a.arch[-1]}"
    print(f"{a.arch}: B latency {a.latency:.0f}, A (L1) latency {a.l1:.0f} cycles; one warp")
    print("| kernel | instructions per pass | FFMAs (k steps) per pass | loads per pass | replayed cycles per k "
          "| register dependences only |")
    print("|---|---|---|---|---|---|")
    for kernel in ("naive", "coalesced"):
        cub = compile_cubin(KernelConfig.make(kernel), cc)
        text = subprocess.run([find_nvdisasm(), "-hex", str(cub)], check=True, capture_output=True, text=True).stdout
        (_, body), = functions(text)
        loop = control_fields(loop_lines(body))
        k = sum("FFMA" in s for s, _ in loop)
        print(f"| {kernel} | {len(loop)} | {k} | {sum('LDG' in s for s, _ in loop)} | "
              f"{replay(loop, a.latency, a.l1) / k:.0f} | {replay(loop, a.latency, a.l1, barriers=False) / k:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
