"""How far ahead of their first use the shared-memory loads of a binary's k-tile loop are issued (CPU; nvcc
and nvdisasm). For the model's top ten of the first four tuning runs (all double_buffer, sm_90): per
LDS in the main loop, the number of instructions until one reads its destination registers. With two
warps per scheduler a load used within ~32 instructions leaves its ~29-cycle latency partly exposed;
compare with ncu's short-scoreboard stalls (results/archive/ncu-top10-20261122-h100-sxm-summary.md).
    PYTHONPATH=. python3 benchmarks/lds_distance.py"""
import re
import subprocess

import numpy as np

from perfmodel.catalogue import KernelConfig
from perfmodel.measure import build, sass

TOP10 = [(128, 256, 16, 8), (128, 256, 16, 16), (256, 128, 16, 8), (256, 128, 16, 16), (128, 256, 8, 16),
         (64, 256, 16, 16), (128, 128, 16, 16), (256, 128, 8, 16), (128, 128, 8, 16), (64, 256, 8, 16)]


def loop_instructions(listing: str) -> list[tuple[str, str]]:
    """(opcode, operands) of the backward-branch loop with the most FFMAs (the k-tile loop)."""
    out = []
    for l in sass.loop_lines(listing):
        m = re.search(r"\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)\s*(.*?);", l)
        if m:
            out.append((m.group(2), m.group(3)))
    return out


def reg(tok: str):
    m = re.match(r"-?\|?R(\d+)", tok.strip())
    return int(m.group(1)) if m else None


def distances(ins):
    d = []
    for i, (op, args) in enumerate(ins):
        if not op.startswith("LDS"):
            continue
        dst = reg(args.split(",")[0])
        if dst is None:
            continue
        regs = set(range(dst, dst + (4 if ".128" in op else 2 if ".64" in op else 1)))
        for j in range(i + 1, len(ins)):
            ops = ins[j][1].split(",")
            srcs = ops if ins[j][0].startswith(("ST", "BAR", "BRA")) else ops[1:]
            if any(reg(t.replace(".reuse", "")) in regs for t in srcs):
                d.append(j - i)
                break
    return np.array(d)


for bm, bn, bk, tm in TOP10:
    cfg = KernelConfig.make("double_buffer", bm=bm, bn=bn, bk=bk, tm=tm, tn=8)
    listing = subprocess.run([sass.find_nvdisasm(), str(build.compile_cubin(cfg, "9.0"))], capture_output=True,
                             text=True).stdout
    d = distances(loop_instructions(listing))
    print(f"{cfg.label():48s} LDS in loop {len(d):3d}  first use after: median {np.median(d):.0f} instr, "
          f"used within 32: {np.mean(d < 32):.2f}, within 64: {np.mean(d < 64):.2f}")
