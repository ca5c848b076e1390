"""How long calibrate's FFMA-rate launches must be (GPU): the 8x8 outer product by resident warps per SM
(calibrate's `ffma_outer_GFLOPS_by_warps_per_sm`, kernel `ffma_outer` of perfmodel/measure/microbench.cu)
timed as calibrate times it (one untimed launch, then the median of 5 launches, each between two events),
with calibrate's loop count (2,000 iterations) and with LONGER times it, in ROUNDS interleaved rounds; and the
same launch with no iteration at all (what the events hold beyond the loop: the launch and the kernel's
prologue and stores). Prints, per loop count and warps per SM, the median rate over the rounds, its spread
(largest - smallest over median), the median time of one launch and the empty launch's share of it.

    python3 benchmarks/ffma_table_length.py OUT.json [--longer 4,16] [--rounds 9]
    python3 benchmarks/ffma_table_length.py --table OUT.json      (CPU) the table again from a recorded file
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

ITERS = 2000  # calibrate's iters_o
FLOP_PER_ITER = 128  # 64 FFMAs a thread and iteration, as calibrate counts them
COUNTS = (1, 2, 4, 6, 8)  # 128-thread blocks per SM, as calibrate's table


def measure(longer, rounds) -> dict:
    from perfmodel.measure.calibrate import event_timed, microbench_module
    from perfmodel.measure.gpu import Gpu

    gpu = Gpu()
    drv = gpu.drv
    cubin, mod = microbench_module(gpu)
    fn = mod.get_function("ffma_outer")
    cap = gpu.blocks_per_sm(cubin, "ffma_outer", 128)
    counts = [n for n in COUNTS if n <= cap]
    sms = gpu.sm_count
    out = drv.mem_alloc(64)

    def timed(iters, n):  # as calibrate times its launches
        return event_timed(gpu, lambda: fn(out, np.int32(iters), block=(128, 1, 1), grid=(sms * n, 1)))

    mults = [1] + list(longer)
    rec = {"gpu": gpu.name, "sms": sms, "iters": ITERS, "multipliers": mults, "counts": counts, "rounds": []}
    for r in range(rounds):
        row = {"empty_s": {str(n): timed(0, n) for n in counts}}
        for m in mults:
            row[str(m)] = {str(n): timed(ITERS * m, n) for n in counts}
        rec["rounds"].append(row)
        print(f"  round {r + 1}/{rounds}", file=sys.stderr, flush=True)
    return rec


def table(rec) -> str:
    sms = rec["sms"]
    lines = [f"{rec['gpu']}: ffma_outer by warps per SM, {len(rec['rounds'])} rounds; calibrate's loop is {rec['iters']:,} "
             "iterations (x1)", "",
             "| loop | warps/SM | median GFLOPS | spread over rounds | one launch (us) | empty launch's share |",
             "|---|---:|---:|---:|---:|---:|"]
    for m in rec["multipliers"]:
        for n in rec["counts"]:
            ts = np.array([r[str(m)][str(n)] for r in rec["rounds"]])
            empty = np.median([r["empty_s"][str(n)] for r in rec["rounds"]])
            g = sms * n * 128 * rec["iters"] * m * FLOP_PER_ITER / ts * 1e-9
            med = float(np.median(g))
            lines.append(f"| x{m} | {4 * n} | {med:,.0f} | {100 * (g.max() - g.min()) / med:.1f} % | "
                         f"{1e6 * np.median(ts):,.1f} | {100 * empty / np.median(ts):.1f} % |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--longer", default="4,16", help="loop counts to compare, as multiples of calibrate's")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--table", metavar="FILE", help="print the table of a recorded file (CPU)")
    a = ap.parse_args()
    if a.table:
        print(table(json.loads(Path(a.table).read_text())))
        return 0
    if not a.out:
        ap.error("OUT.json is required (or --table FILE)")
    out = Path(a.out)
    if out.exists():
        ap.error(f"{out} exists: a new file only")
    rec = measure([int(x) for x in a.longer.split(",") if x], a.rounds)
    out.write_text(json.dumps(rec, indent=1))
    print(table(rec))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
