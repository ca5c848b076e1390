"""How a warp's own waits and its instruction-fetch waits combine (GPU): calibrate's fetch loop with the
FFMAs in 8, 4, 3 or 2 independent chains (benchmarks/fetch/lone_fetch.cu: a warp can issue an FFMA every
clock with 8, and waits for its own results with fewer), at loop sizes of 8 to 96 KB, one block per SM on
every SM with one warp per scheduler (4 warps per SM on the H100) and with two. If a warp's own waits
and its fetch waits add, a loop's cycles per instruction are its in-cache figure plus the 8-chain loop's
extra at that size; if they overlap, the larger of the two (what the H100 measured, and what
Figures.lone_fetch_interval charges: docs/model.md "A lone warp's instruction fetch"). Median over the SMs of each
block's clock64 count, median of 5 rounds. Writes OUT.json and prints a table last.

    python3 benchmarks/lone_fetch.py OUT.json [--chains 8,4,3,2] [--kb 8,16,24,32,40,48,64,96] [--warps 1,2] [--spread]
        [--groups 1,2,4]
        (--spread: each loop also with the block's warps spread evenly over it, fetch_loop_spread; --groups: in
        groups of that many warps, each group in step at a barrier every iteration, the groups spread)
    python3 benchmarks/lone_fetch.py --table OUT.json     (CPU) the table again, with both combinations"""
from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ktile_depth import _ints  # comma-separated integers for argparse

SRC = Path(__file__).with_name("fetch") / "lone_fetch.cu"
ROUNDS = 5


def _fits(warps: int, group: int) -> bool:
    """Whether a block of this many warps splits into groups of `group`: a whole number of them, and at most 15
    groups where each needs a named barrier of its own (barrier 0 is the block's)."""
    return warps % group == 0 and (group == 1 or warps // group <= 15)


def measure(out_path: Path, chains: tuple[int, ...], kbs: tuple[int, ...], warps: tuple[int, ...] = (1, 2),
            spread: bool = False, groups: tuple[int, ...] = (1,)) -> int:
    from perfmodel.measure.gpu import Gpu

    gpu = Gpu()
    drv = gpu.drv
    src = SRC.read_text()
    sched = 4  # warp schedulers per SM (every GPU since Maxwell)
    jobs = [(c, kb, (kb * 1024 // 16) // (c * 8) * (c * 8)) for c in chains for kb in kbs]  # BODY: a multiple of 8 x chains
    with ThreadPoolExecutor(max_workers=8) as pool:
        cubins = list(pool.map(lambda j: gpu.compiler.compile(src, options=["-O3", f"-DBODY={j[2]}", f"-DCHAINS={j[0]}"],
                                                              arch=gpu.arch, no_extern_c=True), jobs))
    out = drv.mem_alloc(64)
    cyc = drv.mem_alloc(8 * 32 * 4096)
    sms = gpu.sm_count
    res = dict(gpu=gpu.name, sms=sms, rounds=ROUNDS, points=[])
    for (c, kb, body), cub in zip(jobs, cubins):
        fn = drv.module_from_buffer(cub).get_function("fetch_loop")
        for wps in warps:
            nw = wps * sched
            iters = max(8, (1 << 19) // body)
            fn(out, cyc, np.int32(2), block=(32 * nw, 1, 1), grid=(sms, 1))
            per = []
            for _ in range(ROUNDS):
                fn(out, cyc, np.int32(iters), block=(32 * nw, 1, 1), grid=(sms, 1))
                gpu.sync()
                cc = np.zeros(sms, np.int64)
                drv.memcpy_dtoh(cc, cyc)
                per.append(float(np.median(cc)) / iters / (body * wps))  # clocks per instruction a scheduler issues
            point = dict(chains=c, kb=kb, body=body, warps_per_scheduler=wps,
                         cycles_per_instr=float(np.median(per)), spread=float(np.ptp(per) / np.median(per)))
            line = f"chains {c} {kb:3d} KB warps/scheduler {wps}: {np.median(per):.3f} cycles per scheduler instruction"
            if spread:
                # the warps spread over the loop: group g of the warps starts g / groups of one in-step loop's clocks later
                sfn = drv.module_from_buffer(cub).get_function("fetch_loop_spread")
                stagger = np.int64(round(point["cycles_per_instr"] * body * wps))
                for g in (g for g in groups if _fits(nw, g)):
                    per = []
                    for _ in range(ROUNDS):
                        sfn(out, cyc, np.int32(iters + 2), stagger, np.int32(g), block=(32 * nw, 1, 1), grid=(sms, 1))
                        gpu.sync()
                        cc = np.zeros(sms * nw, np.int64)
                        drv.memcpy_dtoh(cc, cyc)
                        per.append(float(np.median(cc)) / (body * wps))
                    if g == 1:
                        point.update(spread_cycles_per_instr=float(np.median(per)), spread_range=float(np.ptp(per) / np.median(per)))
                    point.setdefault("spread_cycles_per_instr_by_group", {})[str(g)] = float(np.median(per))
                    line += f", spread in groups of {g} {np.median(per):.3f}"
            res["points"].append(point)
            print(line, flush=True)
    out_path.write_text(json.dumps(res, indent=1))
    return table(out_path)


def table(path: Path) -> int:
    """Cycles per instruction a scheduler issues (one warp: that warp's), measured, against the two
    combinations: in-cache figure (the smallest size) + the 8-chain loop's extra at this size, and the larger
    of the in-cache figure and the 8-chain loop's cycles at this size."""
    d = json.loads(path.read_text())
    pts = {(p["chains"], p["kb"], p["warps_per_scheduler"]): p["cycles_per_instr"] for p in d["points"]}
    chains = sorted({k[0] for k in pts}, reverse=True)
    kbs = sorted({k[1] for k in pts})
    wpss = sorted({k[2] for k in pts})
    print(f"{d['gpu']}: cycles per instruction per scheduler (the warps of a scheduler together); sum = in-cache + "
          f"8 chains' extra, max = max(in-cache, 8 chains')")
    print("| chains | warps per scheduler | " + " | ".join(f"{kb} KB" for kb in kbs) + " |")
    print("|---|---|" + "---|" * len(kbs))
    for w in wpss:
        ref = {kb: pts[(8, kb, w)] - pts[(8, kbs[0], w)] for kb in kbs} if (8, kbs[0], w) in pts else None
        for c in chains:
            row = []
            for kb in kbs:
                m = pts.get((c, kb, w))
                if m is None:
                    row.append("")
                    continue
                cell = f"{m:.2f}"
                if ref is not None and c != 8:
                    base = pts[(c, kbs[0], w)]
                    cell += f" (sum {base + ref[kb]:.2f}, max {max(base, pts[(8, kb, w)]):.2f})"
                row.append(cell)
            print(f"| {c} | {w} | " + " | ".join(row) + " |")
    print("\nthe 8-chain loop as warp instructions a clock per SM (4 schedulers / cycles per instruction), by warps per "
          "SM and loop bytes: the units of calibrate's issue_rate_by_loop_bytes_by_warps")
    for w in wpss:
        if all((8, kb, w) in pts for kb in kbs):
            print(f"{4 * w} = {{ " + ", ".join(f'"{kb * 1024}" = {4 / pts[(8, kb, w)]:.4g}' for kb in kbs) + " }")
    spread = {(p["chains"], p["kb"], p["warps_per_scheduler"]): p["spread_cycles_per_instr"]
              for p in d["points"] if "spread_cycles_per_instr" in p}
    if spread:
        print("\nthe warps spread evenly over the loop (--spread): cycles per instruction per scheduler, in step / spread "
              "(spread / in step), and the spread loop as warp instructions a clock per SM")
        print("| chains | warps per scheduler | " + " | ".join(f"{kb} KB" for kb in kbs) + " |")
        print("|---|---|" + "---|" * len(kbs))
        for w in wpss:
            for c in chains:
                cells = [f"{pts[(c, kb, w)]:.2f} / {spread[(c, kb, w)]:.2f} ({spread[(c, kb, w)] / pts[(c, kb, w)]:.2f}; "
                         f"{4 / spread[(c, kb, w)]:.2f})" if (c, kb, w) in spread else "" for kb in kbs]
                print(f"| {c} | {w} | " + " | ".join(cells) + " |")
    grouped = {(p["kb"], p["warps_per_scheduler"]): p["spread_cycles_per_instr_by_group"]
               for p in d["points"] if p["chains"] == 8 and "spread_cycles_per_instr_by_group" in p}
    if grouped:
        print("\nthe warps in groups spread over the loop (--groups; a barrier in each group every iteration): warp "
              "instructions a clock per SM, in step and by warps per group")
        print("| warps per scheduler | warps per group | " + " | ".join(f"{kb} KB" for kb in kbs) + " |")
        print("|---|---|" + "---|" * len(kbs))
        for w in wpss:
            print(f"| {w} | in step | " + " | ".join(f"{4 / pts[(8, kb, w)]:.2f}" if (8, kb, w) in pts else "" for kb in kbs) + " |")
            for g in sorted({int(g) for (kb, ww), t in grouped.items() if ww == w for g in t}):
                print(f"| {w} | {g} | " + " | ".join(f"{4 / grouped[(kb, w)][str(g)]:.2f}" if str(g) in grouped.get((kb, w), {})
                                                      else "" for kb in kbs) + " |")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="the JSON file to write (or, with --table, to read)")
    ap.add_argument("--table", action="store_true", help="print the table of a recorded file (CPU)")
    ap.add_argument("--chains", type=_ints, default=(8, 4, 3, 2))
    ap.add_argument("--kb", type=_ints, default=(8, 16, 24, 32, 40, 48, 64, 96))
    ap.add_argument("--warps", type=_ints, default=(1, 2), help="warps per scheduler (a block of 4x that many per SM)")
    ap.add_argument("--spread", action="store_true",
                    help="also time each loop with the block's warps spread evenly over it (fetch_loop_spread)")
    ap.add_argument("--groups", type=_ints, default=(1,),
                    help="with --spread: warps per group, each group in step at a barrier every iteration (1: every warp apart)")
    a = ap.parse_args()
    if a.table:
        if not a.out.is_file():
            ap.error(f"--table reads a recorded file; {a.out} does not exist")
        sys.exit(table(a.out))
    if a.out.exists():
        ap.error(f"{a.out} exists; results are never overwritten")
    if 8 not in a.chains:
        ap.error("--chains must include 8 (the in-cache reference the combinations are built from)")
    if any(w < 1 or w > 8 for w in a.warps):
        ap.error(f"--warps: 1 to 8 warps per scheduler (a block of at most 1024 threads), got {a.warps}")
    if a.groups != (1,) and not a.spread:
        ap.error("--groups goes with --spread")
    if any(g < 1 for g in a.groups):
        ap.error(f"--groups: warps per group, at least 1, got {a.groups}")
    bad = [f"{g} of {4 * w}" for w in a.warps for g in a.groups if not _fits(4 * w, g)]
    if bad:
        ap.error(f"--groups: a block of 4 x --warps warps must split into whole groups, at most 15 of more than one warp; "
                 f"not {', '.join(bad)}")
    sys.exit(measure(a.out, a.chains, a.kb, a.warps, a.spread, a.groups))
