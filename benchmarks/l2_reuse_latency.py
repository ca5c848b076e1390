"""An L2 hit's latency the first time a line is read and when it is read again (GPU): calibrate's
pointer chase (`chase_global` of perfmodel/measure/microbench.cu: one thread, `ld.global.cg`, each step a
128-byte line of a random cyclic ring, 256 untimed steps first) over rings of 2, 8 and 32 MB and 1 GiB.
"first": a ring just copied to the GPU, walked once as calibrate walks it (every timed step a line this SM
has not read); "again": the same launch repeated at once (the same lines, in the same order, read a second
time by a thread of the same launch shape). Calibrate's `l2_latency_cycles` is the 8 MB ring's "first".
Medians and spread (largest - smallest over median) over ROUNDS fresh rings.
--churn: the 8 MB ring walked once, then every SM reads another buffer of C MB (4, 16, 32: with the ring, within
the L2) R times (R x C = 64 MB of other reads; calibrate's `read_bandwidth`, ld.global.cg), then the ring walked
again: whether a line's second read stays faster while other lines pass through the L2.
--together: the 8 MB ring chased by one thread on each of B blocks at once (B = 1, 8, 33, 66 and the SM count:
at most one wave of one-thread blocks), all in the same order, as the blocks that share a GEMM panel ask for its lines at about the
same time: the median over the blocks of each launch, "first" and "again" as above.

    python3 benchmarks/l2_reuse_latency.py OUT.json [--rounds 5] [--together] [--churn]
    python3 benchmarks/l2_reuse_latency.py --table OUT.json      (CPU) the table again from a recorded file
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

RINGS_MB = (2, 8, 32, 1024)
STEPS = 20000  # calibrate's timed steps
TOGETHER_MB = 8  # calibrate's L2 ring
# one thread a block chases the ring; each block writes its own cycles (chase_global writes one slot)
CHASE_MANY = r"""
extern "C" __global__ void chase_many(const unsigned* __restrict__ next, int steps, unsigned* out, long long* cycles) {
    unsigned j = 0;
    for (int i = 0; i < 256; ++i) j = __ldcg(&next[j]);
    long long t0 = clock64();
    for (int i = 0; i < steps; ++i) j = __ldcg(&next[j]);
    long long t1 = clock64();
    out[blockIdx.x] = j;
    cycles[blockIdx.x] = t1 - t0;
}
"""


def together(gpu, rounds: int, rng) -> dict:
    """Per block count: {"first": [...], "again": [...]}, each the median over the launch's blocks, per ring."""
    drv = gpu.drv
    mod = drv.module_from_buffer(gpu.compiler.compile(CHASE_MANY, options=["-O3"], arch=gpu.arch, no_extern_c=True))
    fn = mod.get_function("chase_many")
    from perfmodel.measure.calibrate import _chase_ring

    counts = sorted({1, 8, 33, 66, gpu.sm_count} & set(range(1, gpu.sm_count + 1)))
    out, cyc = drv.mem_alloc(4 * gpu.sm_count), drv.mem_alloc(8 * gpu.sm_count)
    res = {}
    for b in counts:
        first, again = [], []
        for _ in range(rounds):
            d = drv.to_device(_chase_ring((TOGETHER_MB << 20) // 4, 32, rng))
            for dest in (first, again):
                fn(d, np.int32(STEPS), out, cyc, block=(1, 1, 1), grid=(b, 1))
                gpu.sync()
                c = np.zeros(b, np.int64)
                drv.memcpy_dtoh(c, cyc)
                dest.append(float(np.median(c)) / STEPS)
            d.free()
        res[str(b)] = {"first": first, "again": again}
    return res


CHURN_MB = (4, 16, 32)
CHURN_TOTAL_MB = 64


def churn(gpu, mod, rounds: int, rng) -> dict:
    """Per other buffer's size: {"first": [...], "again": [...]}, the ring's second walk after the other reads."""
    from perfmodel.measure.calibrate import _chase_ring

    drv = gpu.drv
    chase, read = mod.get_function("chase_global"), mod.get_function("read_bandwidth")
    out, cyc = drv.mem_alloc(64), drv.mem_alloc(8)
    c = np.zeros(1, np.int64)
    res = {}
    for mb in CHURN_MB:
        other = drv.mem_alloc(mb << 20)
        drv.memset_d8(other, 0, mb << 20)
        first, again = [], []
        for _ in range(rounds):
            d = drv.to_device(_chase_ring((TOGETHER_MB << 20) // 4, 32, rng))
            for dest in (first, again):
                if dest is again:
                    read(other, np.uint64((mb << 20) // 16), np.int32(CHURN_TOTAL_MB // mb), out,
                         block=(256, 1, 1), grid=(gpu.sm_count * 4, 1))
                chase(d, np.int32(STEPS), out, cyc, block=(1, 1, 1), grid=(1, 1))
                gpu.sync()
                drv.memcpy_dtoh(c, cyc)
                dest.append(float(c[0]) / STEPS)
            d.free()
        other.free()
        res[str(mb)] = {"first": first, "again": again}
    return res


def measure(rounds: int, with_together: bool = False, with_churn: bool = False) -> dict:
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
    if with_together:
        rec["together_cycles_per_step_by_blocks"] = together(gpu, rounds, rng)
    if with_churn:
        rec["churn_cycles_per_step_by_other_MB"] = churn(gpu, mod, rounds, rng)
    return rec


def _block(head: str, by: dict, label) -> list[str]:
    """A markdown table of {key: {"first": [...], "again": [...]}}: medians, spreads and their ratio a row."""
    lines = [f"| {head} | first | again | again / first |", "|---|---|---|---|"]
    for key, v in by.items():
        f, a = (float(np.median(v[k])) for k in ("first", "again"))
        sp = {k: (max(v[k]) - min(v[k])) / float(np.median(v[k])) for k in ("first", "again")}
        lines.append(f"| {label(key)} | {f:.0f} ({100 * sp['first']:.1f} %) | {a:.0f} ({100 * sp['again']:.1f} %) | {a / f:.3f} |")
    return lines


def table(rec: dict) -> str:
    lines = [f"{rec['device']}: pointer chase, cycles per step, median of {rec['rounds']} rings (spread)"]
    lines += _block("ring", rec["cycles_per_step"], lambda mb: f"{mb} MB")
    if "together_cycles_per_step_by_blocks" in rec:
        lines += ["", f"the {TOGETHER_MB} MB ring chased at once by one thread on each of B blocks (median over the blocks)"]
        lines += _block("B", rec["together_cycles_per_step_by_blocks"], str)
    if "churn_cycles_per_step_by_other_MB" in rec:
        lines += ["", f"the {TOGETHER_MB} MB ring walked again after every SM read {CHURN_TOTAL_MB} MB of another buffer of C MB"]
        lines += _block("C", rec["churn_cycles_per_step_by_other_MB"], lambda mb: f"{mb} MB")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--together", action="store_true", help="also the ring chased by many blocks at once")
    ap.add_argument("--churn", action="store_true", help="also the ring walked again after other reads")
    ap.add_argument("--table", action="store_true", help="print the table of a recorded file (CPU)")
    a = ap.parse_args(argv)
    if a.table:
        print(table(json.loads(a.out.read_text())))
        return 0
    if a.out.exists():
        print(f"error: {a.out} exists; results are never overwritten", file=sys.stderr)
        return 2
    rec = measure(a.rounds, a.together, a.churn)
    a.out.write_text(json.dumps(rec, indent=1) + "\n")
    print(table(rec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
