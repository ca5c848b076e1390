"""How fast split_k's second kernel reads partials that the first kernel has just written (GPU only; run from the
repository root). Writes JSON to $OUT (default /tmp/out) and prints a table last.

split_k's `reduce_splits` (kernels/reduce_splits.cuh) reads S partials of M x N floats that every SM wrote a moment
before, and writes C. `model.predict.reduction_seconds` reads them at the L2 bandwidth while they fit the L2
(`memory.l2_bytes`) and at DRAM's beyond. This measures the kernel alone, as a split_k run times it (behind
the kernel before it, one event pair around its launch), at partial sizes from 1 to 96 MB, in three states:

  write   the partials written just before by a kernel of every SM (grid-stride float4 stores), as split_k
          leaves them; the L2 flushed first, as validate flushes it before every run
  read    the partials read just before by such a kernel (clean lines in the L2)
  cold    the L2 flushed just before (the partials in DRAM)

With `--marginal`, the write state is also timed as a split_k run's window holds it: one event pair around the
writer and the reduction (`pair`) and one around the writer alone (`writer`), interleaved; pair - writer is
what the reduction adds to a window that already holds the kernel before it. The event pair around the
reduction alone also holds the gap between an event and the kernel behind it, which a split_k run pays once
for both kernels; `--fit` takes pair - writer where a record has it.

Every state starts behind a one-thread spin kernel (about 40 us), so the launches are queued before the GPU
reaches them and the event pair holds only what a kernel behind another pays.

    python3 benchmarks/reduce_after_write.py [--slices 4,8,16] [--mb 1,2,...] [--reps 20] [--marginal]   (GPU)
    PYTHONPATH=. python3 benchmarks/reduce_after_write.py --table REC.json     (CPU) a record beside the model
    PYTHONPATH=. python3 benchmarks/reduce_after_write.py --fit REC.json ...   (CPU) the generation figures (fit)"""
import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

MB = [1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 56, 64, 80, 96]
SLICES = [4, 8, 16]
STATES = ("write", "read", "cold")
MARGINAL = ("pair", "writer")  # --marginal: one event pair around writer + reduction, and around the writer alone

AUX = r"""
extern "C" __global__ void spin(long long cycles) {
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
extern "C" __global__ void fill(float4* __restrict__ w, long long n4) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
        w[i] = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
}
extern "C" __global__ void touch(const float4* __restrict__ w, long long n4, float* __restrict__ sink) {
    float s = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
        const float4 v = w[i];
        s += v.x + v.y + v.z + v.w;
    }
    if (s == 12345.0f) sink[0] = s;  // never true for the fill's values at these sizes: keeps the loads
}
"""


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slices", default=",".join(map(str, SLICES)), help="partials S (comma-separated)")
    ap.add_argument("--mb", default=",".join(map(str, MB)), help="partial sizes 4 S M N in MB (comma-separated)")
    ap.add_argument("--reps", type=int, default=20, help="timed repetitions per size, slices and state")
    ap.add_argument("--marginal", action="store_true", help="also time the write state as pair - writer (what the "
                    "reduction adds to a window holding the writer)")
    a = ap.parse_args(argv)
    try:
        slices = [int(x) for x in a.slices.split(",")]
        mbs = [float(x) for x in a.mb.split(",")]
    except ValueError:
        ap.error("--slices and --mb take comma-separated numbers, e.g. --slices 4,8 --mb 1,16,64")
    if any(s < 2 for s in slices) or any(m <= 0 for m in mbs) or a.reps < 3:
        ap.error("--slices from 2, --mb positive, --reps at least 3")
    return slices, mbs, a.reps, a.marginal


def main(argv) -> int:
    from perfmodel import KernelConfig
    from perfmodel.measure.detect import match_shipped
    from perfmodel.measure.gpu import Gpu

    slices_list, mbs, reps, marginal = parse(argv)
    out_dir = Path(os.environ.get("OUT", "/tmp/out"))
    out_dir.mkdir(parents=True, exist_ok=True)
    gpu = Gpu()
    dev_name = match_shipped(gpu.name, gpu.cc) or "h100-sxm"
    aux = gpu.compiler.SourceModule(AUX, no_extern_c=True, options=["-O3"])
    spin, fill, touch = (aux.get_function(n) for n in ("spin", "fill", "touch"))
    reduce = gpu.function(KernelConfig.make("split_k"), name="reduce_splits")
    clock_hz = gpu.dev.get_attribute(gpu.drv.device_attribute.CLOCK_RATE) * 1e3
    spin_cycles = np.int64(40e-6 * clock_hz)
    biggest = max(int(m * 1e6) for m in mbs) + (1 << 20)
    W = gpu.drv.mem_alloc(biggest)
    C = gpu.drv.mem_alloc(biggest // 2)
    sink = gpu.drv.mem_alloc(4)
    grid_stream = (gpu.sm_count * 8, 1, 1)
    ev0, ev1 = gpu.event(), gpu.event()
    rows = []
    total = len(slices_list) * len(mbs)
    for j, (s, mb) in enumerate(((s, mb) for s in slices_list for mb in mbs), 1):
        mn = max(1024, int(round(mb * 1e6 / (4 * s) / 1024)) * 1024)  # M x N: whole float4 blocks of 256 threads
        part = 4 * s * mn
        n4 = np.int64(part // 16)
        rgrid = (math.ceil(mn / 4 / 256), 1, 1)
        rargs = (W, C, np.int64(mn), np.int32(s))
        row = dict(slices=s, mn=mn, partial_bytes=part, out_bytes=4 * mn)
        for state in STATES + (MARGINAL if marginal else ()):
            times = []
            for r in range(reps + 2):  # two warm-up repetitions
                gpu.flush()
                spin(spin_cycles, block=(1, 1, 1), grid=(1, 1, 1))
                if state in MARGINAL:  # the writer inside the window, the reduction behind it (pair) or not (writer)
                    ev0.record()
                fill(W, n4, block=(256, 1, 1), grid=grid_stream)
                if state in ("read", "cold"):  # the written partials flushed out of the L2
                    gpu.flush()
                    spin(spin_cycles, block=(1, 1, 1), grid=(1, 1, 1))
                if state == "read":
                    touch(W, n4, sink, block=(256, 1, 1), grid=grid_stream)
                if state not in MARGINAL:
                    ev0.record()
                if state != "writer":
                    reduce(*rargs, block=(256, 1, 1), grid=rgrid)
                ev1.record()
                ev1.synchronize()
                if r >= 2:
                    times.append(ev0.time_till(ev1) * 1e3)
            t = np.asarray(times)
            row[state] = dict(median_us=float(np.median(t)), q10_us=float(np.quantile(t, 0.1)),
                              q90_us=float(np.quantile(t, 0.9)), times_us=[round(float(x), 3) for x in t])
        rows.append(row)
        print(f"  {j}/{total}: S={s} {part / 1e6:.1f} MB", file=sys.stderr, flush=True)
    rec = dict(gpu=gpu.name, device_file=dev_name, sms=gpu.sm_count, l2_bytes=gpu.l2_bytes, reps=reps,
               spin_us=40, flush="perfmodel.measure.gpu.Gpu.flush (memset of twice the L2)", marginal=marginal, rows=rows)
    path = out_dir / "reduce_after_write.json"
    path.write_text(json.dumps(rec, indent=1))
    print(f"wrote {path}")
    print(table(rec))
    return 0


def model_us(rec) -> list:
    """reduction_seconds for each row with the reference calibration of the record's device (without one, the
    figures `perfmodel predict` takes for it: its SM generation's): what the model charges split_k's second
    kernel."""
    from perfmodel.accuracy import reference_calibration
    from perfmodel.model.figures import Figures
    from perfmodel.model.predict import reduction_seconds

    cal = reference_calibration(Path("results"), rec["device_file"])
    dev = Figures.load(rec["device_file"], cal).effective  # without one, its generation's figures (as predict)
    hz = dev.compute.sm_clock_boost_MHz * 1e6
    return [float(reduction_seconds(dev, 1, r["mn"], r["slices"], hz)) * 1e6 for r in rec["rows"]]


def table(rec) -> str:
    """The record as a table: per size and slices the median time in each state with (partials + C) / time,
    the whole kernel's time behind another (its launch included), and the model's reduction_seconds."""
    L = [f"{rec['gpu']}, {rec['sms']} SMs, L2 {rec['l2_bytes'] / 1e6:.1f} MB; reduce_splits behind another kernel, median of "
         f"{rec['reps']} (us); TB/s = (partials + C) / time; model: reduction_seconds, reference calibration",
         "| S | partials MB | after write us | TB/s | after read us | TB/s | cold us | TB/s | model us |",
         "|---|---|---|---|---|---|---|---|---|"]
    for r, m in zip(rec["rows"], model_us(rec)):
        b = r["partial_bytes"] + r["out_bytes"]
        cells = []
        for st in STATES:
            t = r[st]["median_us"]
            cells += [f"{t:.1f}", f"{b / t / 1e6:.2f}"]
        L.append(f"| {r['slices']} | {r['partial_bytes'] / 1e6:.1f} | " + " | ".join(cells) + f" | {'-' if m is None else f'{m:.1f}'} |")
    return "\n".join(L)


def write_us(row: dict) -> float:
    """What the reduction costs behind the writer in a row: pair - writer (the medians) where the row has them
    (`--marginal`), else the event pair around the reduction alone."""
    if "pair" in row and "writer" in row:
        return row["pair"]["median_us"] - row["writer"]["median_us"]
    return row["write"]["median_us"]


def writer_disturbed(row: dict, rows: list) -> bool:
    """Whether a `--marginal` row's writer was timed slow: its median more than 1.5 times the least writer median
    of the record's rows within 10 % of its partial bytes (the same writer at every slice count). A slow writer
    makes pair - writer too small, where the least over records keeps only slow outliers out; such a row is
    left out of the fit (one of the H100's three runs of 2026-12-05 had pair - writer = -18.4 us at 8 slices)."""
    if "writer" not in row:
        return False
    b = row["partial_bytes"]
    least = min(r["writer"]["median_us"] for r in rows if "writer" in r and abs(r["partial_bytes"] - b) <= 0.1 * b)
    return row["writer"]["median_us"] > 1.5 * least


def fit(recs) -> dict:
    """The generation figures from one or more records of the write state (split_k's): per slice count, the
    least of the records' times at each size (write_us: pair - writer where a record has both; a run's slow
    outliers are upward; rows whose writer was timed slow, writer_disturbed, left out), the least-squares line through them at partials of 20 MB or less (time against partials + C), and how far up the sizes stay
    within 10 % of that line. latency.reduction_floor_us_by_slices: each line's time at no bytes;
    memory.l2_written_resident_bytes: the least over the slice counts of the largest partials up to which
    every size stays within 10 %."""
    best: dict = {}
    for rec in recs:
        for r in rec["rows"]:
            if writer_disturbed(r, rec["rows"]):
                continue
            key = (r["slices"], r["partial_bytes"])
            best[key] = min(best.get(key, float("inf")), write_us(r))
    floors, resident, lines = {}, [], {}
    for s in sorted({k[0] for k in best}):
        pts = sorted((p, t) for (sl, p), t in best.items() if sl == s)
        part = np.array([p for p, _ in pts], dtype=float)
        t = np.array([x for _, x in pts])
        b = part * (1.0 + 1.0 / s)
        small = part <= 20e6
        slope, icpt = np.polyfit(b[small] / 1e6, t[small], 1)
        within = 0.0
        for p, tt, bb in zip(part, t, b):
            if tt > 1.10 * (icpt + slope * bb / 1e6):
                break
            within = p
        floors[str(s)] = round(float(icpt), 2)
        resident.append(within)
        lines[str(s)] = dict(floor_us=round(float(icpt), 3), TBps=round(float(1.0 / slope), 2), within_10pct_up_to_bytes=int(within))
    return dict(reduction_floor_us_by_slices=floors, l2_written_resident_bytes=int(min(resident)), lines=lines)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--table":
        print(table(json.loads(Path(sys.argv[2]).read_text())))
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "--fit":
        print(json.dumps(fit([json.loads(Path(a).read_text()) for a in sys.argv[2:]]), indent=1))
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
