"""An L2 hit's latency the first time a line is read and when the same SM reads it again (GPU): calibrate's
pointer chase (`chase_global` of perfmodel/measure/microbench.cu: one thread, `ld.global.cg`, each step a
128-byte line of a random cyclic ring, 256 untimed steps first) over rings of 2, 8 and 32 MB and 1 GiB.
"first": a ring just copied to the GPU, walked once as calibrate walks it (every timed step a line this SM
has not read); "again": the same launch repeated at once (the same lines, in the same order, read a second
time by a thread of the same launch shape). Calibrate's `l2_latency_cycles` is the 8 MB ring's "first".
Medians and spread (largest - smallest over median) over ROUNDS fresh rings.

    python3 benchmarks/l2_reuse_latency.py OUT.json [--rounds 5]
    python3 benchmarks/l2_reuse_latency.py --table OUT.json      (CPU) the table again from a recorded file
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

RINGS_MB = (2, 8, 32, 1024)
STEPS = 20000  # calibrate's timed steps


def measure(rounds: int) -> dict:
    from perfmodel.measure.calibrate import _chase_ring, microbench_module
    from perfmodel.measure.gpu import Gpu

    gpu = Gpu()
    drv = gpu.drv
    _, mod = microbench_module(gpu)
    chase = mod.get_function("chase_global")
    out, cyc = drv.mem_alloc(64), drv.mem_alloc(8)
    c = np.zeros(1, np.int64)
    rng = np.random.default_rng(0)
    rec = {"device": gpu.name, "steps": STEPS, "rounds": rounds, "cycles_per_step": {}}
    for mb in RINGS_MB:
        first, again = [], []
        for _ in range(rounds):
            d = drv.to_device(_chase_ring((mb << 20) // 4, 32, rng))  # 128-byte lines, as calibrate
            for dest in (first, again):
                chase(d, np.int32(STEPS), out, cyc, block=(1, 1, 1), grid=(1, 1))
                gpu.sync()
                drv.memcpy_dtoh(c, cyc)
                dest.append(float(c[0]) / STEPS)
            d.free()
        rec["cycles_per_step"][str(mb)] = {"first": first, "again": again}
    return rec


def table(rec: dict) -> str:
    lines = [f"{rec['device']}: pointer chase, cycles per step, median of {rec['rounds']} rings (spread)",
             "| ring | first | again | again / first |", "|---|---|---|---|"]
    for mb, v in rec["cycles_per_step"].items():
        f, a = (float(np.median(v[k])) for k in ("first", "again"))
        sp = {k: (max(v[k]) - min(v[k])) / float(np.median(v[k])) for k in ("first", "again")}
        lines.append(f"| {mb} MB | {f:.0f} ({100 * sp['first']:.1f} %) | {a:.0f} ({100 * sp['again']:.1f} %) | {a / f:.3f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--table", action="store_true", help="print the table of a recorded file (CPU)")
    a = ap.parse_args(argv)
    if a.table:
        print(table(json.loads(a.out.read_text())))
        return 0
    if a.out.exists():
        print(f"error: {a.out} exists; results are never overwritten", file=sys.stderr)
        return 2
    rec = measure(a.rounds)
    a.out.write_text(json.dumps(rec, indent=1) + "\n")
    print(table(rec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
