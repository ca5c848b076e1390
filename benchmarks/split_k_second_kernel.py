"""split_k's second kernel launched five ways, timed as validate times a run, on the split_k picks of a recorded
`perfmodel bench` run (GPU to measure; CPU to print a record). Writes JSON to the path given and prints a table last.

split_k (kernels/10_split_k.cu) sums its slices' partials in a second kernel, reduce_splits, whose launch and floor
cost every pick 3.5-8.1 us (docs/measurement.md, "Where the picks lose time to split_k's second kernel"). For each
split_k pick of the bench run this times, beside cuBLAS, with the L2 flushed before each repetition
(perfmodel.measure.timing.bench_us, validate's timing):

  validate    the catalogue's launcher (Gpu.launcher: the kernel, then reduce_splits) as it launches today: on sm_90
              and newer the second kernel programmatically (the record names it: `validate_launch`; records
              without that key were taken before, with the usual launch, as the bench run timed it)
  two         the same two kernels from this script's build (benchmarks/split_k_second/variants.cu), both
              launched through cuLaunchKernelEx: the check that the build and the launch path change nothing
  main        the main kernel alone (no sums: C is not written): what the second kernel adds
  wide        reduce_splits' sums with sixteen partials loaded before they are added (reduce_wide)
  pdl         the second kernel launched with programmatic stream serialization, waiting in its first
              instruction for the grid before it (griddepcontrol.wait): its launch overlaps the main kernel
  pdl+trigger the same behind a main kernel that lets it start once every main block has started
              (griddepcontrol.launch_dependents as its first instruction)
  pdl+trigger+wide  both changes

Every variant but `main` runs once into a C poisoned with NaN and must give the catalogue launcher's C bit for bit
(the same sums in the same order); the launcher's C is verified against the float64 reference as validate does.

    python3 benchmarks/split_k_second_kernel.py OUT.json [--bench RUN] [--shapes N]    (GPU)
    python3 benchmarks/split_k_second_kernel.py --table OUT.json [--bench RUN]         (CPU)"""
import argparse
import ctypes
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_BENCH = ROOT / "results" / "20261130-194847-h200-bench-all"
VARIANTS = {  # name: (main kernel, second kernel, programmatic launch) ; None: no second kernel
    "two": ("sgemm_plain", "reduce_splits", False),
    "main": ("sgemm_plain", None, False),
    "wide": ("sgemm_plain", "reduce_wide", False),
    "pdl": ("sgemm_plain", "reduce_wait", True),
    "pdl+trigger": ("sgemm_trigger", "reduce_wait", True),
    "pdl+trigger+wide": ("sgemm_trigger", "reduce_wait_wide", True),
}


class UsageError(Exception):
    pass


def picks(bench: Path) -> list[dict]:
    """The bench run's shapes whose pick is split_k: shape, class, M, N, K, configuration, recorded GFLOPS."""
    path = bench / "bench.json"
    if not path.is_file():
        raise UsageError(f"{bench}: no bench.json (a `perfmodel bench` run's folder is needed)")
    out = []
    for s in json.loads(path.read_text())["shapes"]:
        kernel, params = s["pick"].split(" ", 1)
        if kernel == "split_k":
            out.append(dict(shape=s["shape"], cls=s["shape_class"], M=s["M"], N=s["N"], K=s["K"], flop=s["flop"],
                            config=json.loads(params), recorded_gflops=s["pick_gflops"],
                            recorded_cublas_gflops=s["cublas_gflops"]))
    return out


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", help="JSON record to write (never overwritten)")
    ap.add_argument("--table", metavar="RECORD", help="print a record written before (CPU)")
    ap.add_argument("--bench", default=str(DEFAULT_BENCH), help="a recorded `perfmodel bench` run (its split_k picks)")
    ap.add_argument("--shapes", type=int, default=0, help="only the first N of those picks (0: all)")
    a = ap.parse_args(argv)
    if a.table:
        if not Path(a.table).is_file():
            raise UsageError(f"{a.table}: no such record")
        return a
    if not a.out:
        raise UsageError("give the JSON record to write (OUT.json), or --table RECORD to print one")
    if a.shapes < 0:
        raise UsageError(f"--shapes {a.shapes}: a count of shapes from 0 (0: all)")
    if Path(a.out).exists():
        raise UsageError(f"{a.out} exists: give a new path (records are never overwritten)")
    return a


def main(argv) -> int:
    a = parse(argv)
    if a.table:
        print(table(json.loads(Path(a.table).read_text()), Path(a.bench)))
        return 0
    from perfmodel import KernelConfig
    from perfmodel.catalogue import split_slices
    from perfmodel.measure import build
    from perfmodel.measure.gpu import Gpu, Problem
    from perfmodel.measure.launch import Module
    from perfmodel.measure.timing import bench_us
    from perfmodel.paths import data_dir

    todo = picks(Path(a.bench))
    if a.shapes:
        todo = todo[:a.shapes]
    gpu = Gpu()
    src = (Path(__file__).resolve().parent / "split_k_second" / "variants.cu").read_text()
    rows, t0 = [], time.time()
    for j, p in enumerate(todo, 1):
        cfg = KernelConfig.make("split_k", **p["config"])
        M, N, K = p["M"], p["N"], p["K"]
        prob = Problem(gpu, M, N, K)
        timed = lambda fn: bench_us(fn, gpu.flush, gpu.event, gpu.sync)  # noqa: E731
        run, ok, how = prob.launch_verified(cfg)
        ref_c = gpu.drv.from_device(prob.C, (M, N), np.float32).view(np.uint32).copy()
        row = dict(p, verified=bool(ok), how=how, times={"validate": timed(run)})
        cub = gpu.cublas_launcher(prob.A, prob.B, prob.C, M, N, K)
        row["times"]["cublas"] = timed(cub)
        cubin = gpu.compiler.compile(src, options=build.NVCC_FLAGS + build.defines(cfg), arch=gpu.arch,
                                     include_dirs=[str(data_dir("kernels"))], no_extern_c=True)
        mod = Module(gpu._libcuda, cubin)
        slices = int(split_slices(K, cfg.bk, cfg.k_splits)[0])
        work = gpu.workspace(4 * slices * M * N)
        grid = (math.ceil(N / cfg.bn), math.ceil(M / cfg.bm), slices)
        per_thread = 4 if (M * N) % 4 == 0 else 1
        rgrid = (math.ceil(M * N / per_thread / 256), 1, 1)
        ptr = lambda x: ctypes.c_void_p(int(x))  # noqa: E731
        row["slices"], row["same_bits"] = slices, {}
        for name, (main_k, second, prog) in VARIANTS.items():
            first = mod.launcher(main_k, grid, (cfg.threads, 1, 1),
                                 (ptr(prob.A), ptr(prob.B), ptr(work), ctypes.c_int(M), ctypes.c_int(N), ctypes.c_int(K)))
            sec = None if second is None else mod.launcher(second, rgrid, (256, 1, 1), (
                ptr(work), ptr(prob.C), ctypes.c_longlong(M * N), ctypes.c_int(slices)), programmatic=prog)

            def both(first=first, sec=sec):
                first()
                if sec is not None:
                    sec()
            if sec is not None:
                prob.poison()
                both()
                gpu.sync()
                c = gpu.drv.from_device(prob.C, (M, N), np.float32).view(np.uint32)
                row["same_bits"][name] = bool(np.array_equal(c, ref_c))
            row["times"][name] = timed(both)
        rows.append(row)
        med = row["times"]
        print(f"  {j}/{len(todo)} {p['shape']} ({slices} slices): validate {med['validate']['median_us']:.1f} us, "
              f"pdl+trigger {med['pdl+trigger']['median_us']:.1f}, main {med['main']['median_us']:.1f} "
              f"({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    rec = dict(gpu=gpu.name, sms=gpu.sm_count, bench=Path(a.bench).name, validate_launch="programmatic" if gpu.programmatic else "stream",
               variants={k: list(v) for k, v in VARIANTS.items()},
               timing="perfmodel.measure.timing.bench_us: L2 flushed before each repetition, one event pair each", rows=rows)
    Path(a.out).write_text(json.dumps(rec, indent=1))
    print(f"wrote {a.out}")
    print(table(rec, Path(a.bench)))
    return 0


def geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def summary(rec, bench: Path | None = None) -> dict:
    """Per variant the geometric mean of cuBLAS time / variant time over the record's shapes (the same run's
    cuBLAS), and, with the bench run, over its whole corpus with the split_k picks' ratios replaced by these
    (the other picks keep their recorded ratio)."""
    names = ["validate"] + [n for n in rec["variants"] if n != "main"]
    out = {n: dict(split_k=geomean(r["times"]["cublas"]["median_us"] / r["times"][n]["median_us"] for r in rec["rows"]))
           for n in names}
    if bench is not None and (bench / "bench.json").is_file():
        shapes = json.loads((bench / "bench.json").read_text())["shapes"]
        mine = {r["shape"]: r for r in rec["rows"]}
        for n in names:
            ratios = {}
            for s in shapes:
                r = mine.get(s["shape"])
                ratios[s["shape"]] = (r["times"]["cublas"]["median_us"] / r["times"][n]["median_us"]) if r else s["vs_cublas"]
            out[n]["corpus"] = geomean(ratios.values())
            by = {}
            for s in shapes:
                by.setdefault(s["shape_class"], []).append(ratios[s["shape"]])
            out[n]["classes"] = {c: geomean(v) for c, v in by.items()}
    return out


def table(rec, bench: Path | None = None) -> str:
    names = ["validate"] + list(rec["variants"])
    L = [f"{rec['gpu']}: split_k picks of {rec['bench']}, median us of each launch way (validate's timing; validate's second "
         f"kernel launched the {'programmatic' if rec.get('validate_launch') == 'programmatic' else 'usual'} way)", "",
         "| shape | slices | cuBLAS | " + " | ".join(names) + " | same bits |",
         "|---|---:|---:|" + "---:|" * len(names) + "---|"]
    for r in rec["rows"]:
        t = r["times"]
        L.append(f"| {r['shape']} | {r['slices']} | {t['cublas']['median_us']:.1f} | "
                 + " | ".join(f"{t[n]['median_us']:.1f}" for n in names)
                 + f" | {'yes' if r['verified'] and all(r['same_bits'].values()) else 'NO'} |")
    s = summary(rec, bench)
    L += ["", "| way | geomean x cuBLAS, these shapes | the corpus, other picks as recorded | lowest class |", "|---|---:|---:|---|"]
    for n, v in s.items():
        low = min(v.get("classes", {}).items(), key=lambda kv: kv[1], default=None)
        L.append(f"| {n} | {v['split_k']:.3f} | {v.get('corpus', float('nan')):.3f} | "
                 + (f"{low[0]} {low[1]:.3f}" if low else "-") + " |")
    return "\n".join(L)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
